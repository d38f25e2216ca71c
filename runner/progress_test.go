package runner

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// plainBuffer is a Progress writer in line mode, as the wiring passes when stderr is not a terminal.
type plainBuffer struct{ bytes.Buffer }

func (*plainBuffer) PlainProgress() bool { return true }

// TestTimeBarLineMode: a line-mode writer gets a start and an end line and never a carriage return (a redrawn bar
// would fill a CronJob's log).
func TestTimeBarLineMode(t *testing.T) {
	t.Parallel()
	var plain plainBuffer
	stop := timeBar(&plain, "c1 idle window", 90*time.Second)
	stop()
	lines := strings.Split(strings.TrimSuffix(plain.String(), "\n"), "\n")
	if len(lines) != 2 || lines[0] != "c1 idle window: started (1m30s)" || !strings.HasPrefix(lines[1], "c1 idle window: done after ") ||
		strings.Contains(plain.String(), "\r") {
		t.Errorf("line mode wrote %q", plain.String())
	}
}

package cgroupstat

import (
	"bufio"
	"encoding/json"
	"io"
)

// Dump is what `meshbench-agent cgroups dump` prints: each container's samples inside the asked window, by the
// container name the wrapper was given (its file DIR/<name>.jsonl), and why a container's file could not be read.
type Dump struct {
	Containers map[string][]Sample `json:"containers"`
	Errors     map[string]string   `json:"errors,omitempty"`
}

// ReadSamples reads a JSON-lines file of samples. A line that does not parse is skipped: the last line may be
// half-written while the wrapper appends to it.
func ReadSamples(r io.Reader) ([]Sample, error) {
	var out []Sample
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var s Sample
		if json.Unmarshal(sc.Bytes(), &s) != nil || s.T.IsZero() {
			continue
		}
		out = append(out, s)
	}
	return out, sc.Err()
}

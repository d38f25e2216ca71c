package prom

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// refusingAPI answers every call with the same error (e.g. a 401 from an auth proxy in front of Prometheus).
type refusingAPI struct{ err error }

func (a refusingAPI) Query(context.Context, string, time.Time, ...promv1.Option) (model.Value, promv1.Warnings, promv1.Infos, error) {
	return nil, nil, nil, a.err
}

func (a refusingAPI) Config(context.Context) (promv1.ConfigResult, error) {
	return promv1.ConfigResult{}, a.err
}

// A refused query must be named in the notes, not hidden behind "is cAdvisor scraped?".
func TestDetectIntervalNamesQueryErrors(t *testing.T) {
	t.Parallel()
	api := refusingAPI{err: errors.New("server returned HTTP status 401 Unauthorized")}
	iv, _ := DetectInterval(context.Background(), api, Retry{Attempts: 1, Timeout: time.Second}, 5*time.Second, time.Now())
	notes := strings.Join(iv.Notes, "\n")
	if !strings.Contains(notes, "count by (job)") || !strings.Contains(notes, "401 Unauthorized") {
		t.Errorf("notes do not name the failed query and its error:\n%s", notes)
	}
}

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

// The guard is two measured median sample spacings (cAdvisor's stamps vary up to about twice their median) and at
// least the step: a spacing wider than the scrape but not 1.5x wider leaves the step at the scrape interval, and the
// guard must still cover twice the spacing (issue 29 section 2b).
func TestIntervalGuard(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		iv   Interval
		want time.Duration
	}{
		{Interval{Scrape: 5 * time.Second, Effective: 5 * time.Second}, 5 * time.Second},                                     // not measured: the step
		{Interval{Scrape: 5 * time.Second, Effective: 5 * time.Second, Spacing: 7 * time.Second}, 14 * time.Second},          // wider, not 1.5x
		{Interval{Scrape: 5 * time.Second, Effective: 10 * time.Second, Spacing: 9600 * time.Millisecond}, 20 * time.Second}, // two spacings
		{Interval{Scrape: 20 * time.Second, Effective: 20 * time.Second, Spacing: 5 * time.Second}, 20 * time.Second},        // the step
		{Interval{Scrape: time.Second, Effective: time.Second, Spacing: 1200 * time.Millisecond}, 3 * time.Second},           // whole seconds
	} {
		if got := tc.iv.Guard(); got != tc.want {
			t.Errorf("%+v: guard %s, want %s", tc.iv, got, tc.want)
		}
	}
}

package runner

import (
	"context"

	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/scenario"
)

// loadOut is what a load run in the background returned.
type loadOut struct {
	lr  LoadResult
	err error
}

// underLoad runs case c's load (its whole window, no lead-in or cool-down) in a goroutine and change beside it on
// the runner's goroutine, then waits for the load (step "load"); it returns the load's outcome and change's error.
func (r *Runner) underLoad(ctx context.Context, cr *caseRun, t target.Target, c scenario.Case, change func() error) (loadOut, error) {
	loaded := make(chan loadOut, 1)
	go func() {
		lr, err := r.Load.Run(ctx, t, LoadRequest{Case: c, Window: c.Policy.Load.Window})
		loaded <- loadOut{lr, err}
	}()
	changeErr := change()
	var out loadOut
	_ = cr.timed("load", func() error {
		out = <-loaded
		return out.err
	})
	return out, changeErr
}

// recordUnderLoad records with the case what a load under a change left (facts, shortfall, windows) and returns why
// the case fails: the change's error, the load's, or a load without a completed request; "" when it counts.
func recordUnderLoad(st *state, cr *caseRun, out loadOut, changeErr error) string {
	lr := out.lr
	cr.facts(lr.Facts)
	cr.res.LoadShortfall = lr.Shortfall
	cr.res.Windows = append(cr.res.Windows, lr.Windows...)
	switch {
	case changeErr != nil:
		return changeErr.Error()
	case out.err != nil:
		st.nodesFailed(out.err)
		return loadFailure(out.err)
	case lr.Requests == 0:
		return "load: no request completed in the measured window"
	}
	return ""
}

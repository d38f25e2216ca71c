package images

import (
	"fmt"
	"io"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// defaultHeartbeat is how often Build and Push say that a step is still running: a cold compile of the CLI takes
// minutes on two cores, and a newcomer must not take a silent build for a hang (the harness scripts' with_heartbeat
// uses the same minute).
const defaultHeartbeat = time.Minute

// progress writes the progress lines of Build and Push: one when a step starts, one when it ends, and one every
// interval while it runs. A nil writer is silent.
type progress struct {
	mu    sync.Mutex // the heartbeat goroutine and the caller both write
	w     io.Writer
	clk   clock.WithTicker
	every time.Duration
}

func newProgress(w io.Writer, every time.Duration, clk clock.WithTicker) *progress {
	if clk == nil {
		clk = clock.RealClock{}
	}
	if every <= 0 {
		every = defaultHeartbeat
	}
	return &progress{w: w, clk: clk, every: every}
}

func (p *progress) printf(format string, args ...any) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, format, args...)
}

// during runs fn and, while it runs, prints "still <what> (<elapsed> so far<detail>)" every interval; detail (may be
// nil) adds what is known of the step's own progress. The ticker is gone when during returns.
func (p *progress) during(what string, detail func() string, fn func() error) error {
	if p.w == nil {
		return fn()
	}
	start := p.clk.Now()
	t := p.clk.NewTicker(p.every)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			case <-t.C():
				extra := ""
				if detail != nil {
					extra = detail()
				}
				p.printf("still %s (%s so far%s)\n", what, p.clk.Since(start).Round(time.Second), extra)
			}
		}
	}()
	err := fn()
	close(done)
	t.Stop()
	wg.Wait()
	return err
}

package runner

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/meshbench/meshbench/internal/kube"
)

// retryTransient retries f while the API server refuses it for a moment (kube.TransientRetry), its pauses on the
// runner's clock: f's last error.
func (r *Runner) retryTransient(ctx context.Context, f func() error) error {
	_, err := kube.TransientRetry(kubeClock{r.clock()}).Do(ctx, f)
	return err
}

// kubeClock is a runner Clock as the k8s.io/utils clock that kube.Retry paces its pauses on: a timer fires when a
// Sleep of the runner's clock ends, so a retry's pauses pass in the test fake's virtual time.
type kubeClock struct{ runClock }

func (c kubeClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

func (c kubeClock) Sleep(d time.Duration) { _ = c.runClock.Sleep(context.Background(), d) }

func (c kubeClock) After(d time.Duration) <-chan time.Time { return c.NewTimer(d).C() }

func (c kubeClock) NewTimer(d time.Duration) clock.Timer {
	t := &sleepTimer{clk: c.runClock, c: make(chan time.Time, 1)}
	t.Reset(d)
	return t
}

// Tick ticks every d as the ticks are received; like clock.RealClock's, its ticker is never freed.
func (c kubeClock) Tick(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time)
	go func() {
		for {
			c.Sleep(d)
			ch <- c.Now()
		}
	}()
	return ch
}

// sleepTimer is a clock.Timer whose pending wait is a Sleep of a runner Clock, ended early by Stop or Reset.
type sleepTimer struct {
	clk  runClock
	c    chan time.Time
	mu   sync.Mutex
	stop context.CancelFunc // ends the pending Sleep; nil when none is pending
}

func (t *sleepTimer) C() <-chan time.Time { return t.c }

// Stop ends the pending wait; it reports whether one was pending.
func (t *sleepTimer) Stop() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stop == nil {
		return false
	}
	t.stop()
	t.stop = nil
	return true
}

// Reset starts a wait of d in place of the pending one; it reports whether one was pending.
func (t *sleepTimer) Reset(d time.Duration) bool {
	pending := t.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	t.mu.Lock()
	t.stop = cancel
	t.mu.Unlock()
	go func() {
		defer cancel()
		if t.clk.Sleep(ctx, d) != nil {
			return // stopped or reset
		}
		t.mu.Lock()
		fire := ctx.Err() == nil
		if fire {
			t.stop = nil
		}
		t.mu.Unlock()
		if fire {
			select {
			case t.c <- t.clk.Now():
			default: // an earlier tick not received yet, as time.Timer's
			}
		}
	}()
	return pending
}

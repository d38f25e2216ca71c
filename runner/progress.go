package runner

import (
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
)

// plainProgress is implemented by a Progress writer that is not a terminal (the wiring decides): such a writer
// gets one line when a wait starts and one when it ends, never a redrawn bar.
type plainProgress interface{ PlainProgress() bool }

// timeBar shows a time-based progress bar for a wait of known length (idle window, load run) on w; stop ends it.
// With w nil it does nothing; on a plainProgress writer it writes a start and an end line.
func timeBar(w io.Writer, desc string, d time.Duration) (stop func()) {
	if w == nil || d <= 0 {
		return func() {}
	}
	if p, ok := w.(plainProgress); ok && p.PlainProgress() {
		start := time.Now()
		fmt.Fprintf(w, "%s: started (%s)\n", desc, d.Round(time.Second))
		return func() { fmt.Fprintf(w, "%s: done after %s\n", desc, time.Since(start).Round(time.Second)) }
	}
	secs := int64(d.Round(time.Second) / time.Second)
	bar := progressbar.NewOptions64(secs,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionSetPredictTime(false),
		progressbar.OptionShowElapsedTimeOnFinish(),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionThrottle(time.Second),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionFullWidth(),
	)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		start := time.Now()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				_ = bar.Finish()
				return
			case <-t.C:
				_ = bar.Set64(min(secs, int64(time.Since(start)/time.Second)))
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

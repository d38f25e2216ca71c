package scenario

import (
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateWindows checks spec.windows; scrape is prometheus.scrapeInterval (0: detected at run time), which every
// window must span 4 times for a rate.
func validateWindows(c *collector, p *field.Path, w Windows, scrape time.Duration) {
	c.nonNegative(p.Child("idle"), w.Idle)
	c.nonNegative(p.Child("settle"), w.Settle)
	switch {
	case w.Load.Duration <= 0:
		c.add(p.Child("load"), "must be > 0, e.g. \"10m\" as in study A")
	case scrape > 0 && w.Load.Duration < 4*scrape:
		c.add(p.Child("load"), "is %s, shorter than 4 scrape intervals (%s): rates need >= 4 samples; lengthen the window", w.Load, D(4*scrape))
	}
	if w.Idle.Duration > 0 && scrape > 0 && w.Idle.Duration < 4*scrape {
		c.add(p.Child("idle"), "is %s, shorter than 4 scrape intervals (%s): rates need >= 4 samples; lengthen the window", w.Idle, D(4*scrape))
	}
	c.intRange(p.Child("repetitions"), w.Repetitions, 1, 100, "use >= 3 for confidence intervals")
	c.intRange(p.Child("attempts"), w.Attempts, 1, 5, "1 fails a case on its first incomplete window; 2 (the default) measures it once more")
	c.oneOf(p.Child("interleave"), string(w.Interleave), []string{string(InterleaveSerpentine), string(InterleaveRandom), string(InterleaveNone)})
	if w.Seed < 0 {
		c.add(p.Child("seed"), "must not be negative (got %d)", w.Seed)
	}
}

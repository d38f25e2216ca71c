// Package capacity projects what each data-plane mode will cost at a production shape, from what one run measured.
// Build fits fixed + slope x load per mode, component, metric and kind from the run's load windows (the load is the
// achieved rate, never the configured level: a mode that cannot keep up is not credited with traffic it did not
// carry); Project scales the fits to a Shape with prediction intervals, each figure marked with the caveats of its
// fits; BuildHops fits the latency each mode adds per hop on a run of several chain depths. It is offline and pure:
// it reads a run directory (results.Read) and nothing else. The method and what the synthetic study measured of it:
// docs/capacity.md.
package capacity

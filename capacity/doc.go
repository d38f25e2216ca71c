// Package capacity projects what each data-plane mode will cost at a production shape from one run: Build fits
// fixed + slope x achieved load per mode, component, metric and kind; Project scales the fits to a Shape with
// prediction intervals and caveats; BuildHops fits the latency added per hop. Offline and pure (results.Read
// only); the method and what the synthetic study measured of it: docs/capacity.md.
package capacity

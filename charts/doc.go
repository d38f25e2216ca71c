// Package charts draws meshbench results as SVG: grouped bars per component and mode with confidence-interval error
// bars (CPU, memory; idle and load), latency percentiles per mode, and pod-network throughput per path against the
// host baseline with the CNI studies' colour bands.
//
// # Why hand-made SVG and not gonum/plot
//
// gonum/plot's SVG either names a font it does not ship (a browser without it lays the text out differently) or
// embeds it (about half a megabyte per chart), adds eight modules, and has no semantics a test or a screen reader can
// find. The charts here need no dependency and give a few kilobytes per chart, byte-stable output (coordinates
// formatted with a fixed precision, slices drawn in the order given, no map iteration), a <title> per chart and per
// bar (the value, its interval and n), CSS classes and data attributes that the HTML report styles and tests assert
// on, and the browser's own sans-serif font. Text widths are estimated (0.6 em per character), which is enough to
// place legends and margins.
//
// # Colour bands (CNI throughput)
//
// Study C coloured throughput against a 10 Gbit/s bare-metal line: green above 9500 Mbit/s, yellow above 9000,
// orange above 8000, red below. meshbench does not assume a link speed: it measures the host-network path (hostNetwork
// pods, the same nodes) as the baseline and defines the bands relative to it, which reproduces the study's bands on a
// 10 Gbit/s link:
//
//	green  value >= 95 % of the host baseline
//	yellow value >= 90 % and < 95 %
//	orange value >= 80 % and < 90 %
//	red    value <  80 %
//
// The same bands apply to request/response rates (TCP_RR, TCP_CRR), where the host path is the baseline as well.
//
// # Determinism
//
// Every function is pure: the same input gives the same bytes. Series and groups are drawn in the order of the input
// slices; the builders that read a results.Summary order modes as none, sidecar, ambient, waypoint and components as
// in results (app, sidecar, ztunnel, waypoint, istiod, istio-cni, ..., mesh last), unknown names sorted after them.
package charts

// Package compare compares two meshbench runs and applies regression gates. It is pure: it takes two results.Summary
// values (and the runs' RunMeta for context) and returns rows, verdicts and gate outcomes; reading run directories and
// exit codes belong to the CLI (`meshbench compare BASE_DIR NEW_DIR`).
//
// # Rows and verdicts
//
// Every measured quantity (a results.Key: topology, mode, load, window, component, metric, stat, unit, labels) present
// in both runs becomes a Row: both means, the difference new − base, the Welch confidence interval of the difference
// (results.Welch over the per-repetition values; unequal variances, Welch–Satterthwaite degrees of freedom), the
// change in percent of the base mean, and a verdict:
//
//	better / worse     the interval excludes 0 and the change goes the good / bad way for the metric:
//	                   lower is better for cpu, memory, latency, loss, jitter, errors;
//	                   higher is better for qps, throughput, rr, crr
//	changed            significant, but the metric has no known direction
//	not significant    the interval contains 0
//	insufficient data  fewer than 3 repetitions on a side (results.MinIntervalN), so no interval and no judgement
//
// Keys measured by only one run are listed, never silently dropped. Differences in the runs' facts (meshbench,
// Kubernetes and Istio versions, node count, data plane, scenario) are listed as context notes, because an upgrade
// is often exactly what is being compared.
//
// Welch's interval is per row; a comparison has hundreds of rows, so at 95 % confidence about one row in twenty of an
// A/A comparison of independent runs may be "significant" by chance. Gates are therefore few and targeted, and a gate
// also needs the change to cross a threshold.
//
// # Gate grammar (--fail-if)
//
//	gate      = selector op threshold            (spaces around op are optional)
//	selector  = metric [ "." stat ] "." subject [ "." window ]
//	metric    = name                             cpu | memory | latency | qps | throughput | rr | crr | loss | jitter | ...
//	stat      = "min" | "max" | "avg" | "value" | "count" | "p" digits [ "." digits ]   e.g. p50, p99, p99.9
//	subject   = name                             a mode (none, sidecar, ambient, waypoint), a component (app, sidecar,
//	                                             ztunnel, waypoint, istiod, istio-cni, loadgen, cni-test, node, mesh)
//	                                             or a CNI path (same-node, cross-node, service, host)
//	window    = "idle" | "load" | "test"
//	op        = ">" | ">=" | "<" | "<="
//	threshold = [ "+" | "-" ] number [ "%" | unit ]
//	number    = digits [ "." digits ]
//	unit      = s | ms | us | µs | B | KiB | MiB | GiB | MB | GB | cores | millicores | m |
//	            bit/s | Kbit/s | Mbit/s | Gbit/s | rps | qps | tps | count
//	name      = letter { letter | digit | "-" | "_" }
//
// Meaning:
//   - The selector picks every row whose metric equals metric, whose stat equals stat (omitted: the central stat,
//     "avg" or "value"), whose window equals window (omitted: every window), and whose mode, component or CNI path
//     label equals subject. "sidecar" is both a mode and a component: cpu.sidecar selects the sidecar containers in
//     every mode and every component in sidecar mode. Every topology and load level is included.
//   - A threshold with % compares the percent change 100·(new − base)/|base|; otherwise the difference new − base,
//     converted from the row's unit to the threshold's unit (same family only: time, bytes, CPU, bit rate); without a
//     unit the row's own unit is used. The sign is the direction: "> +10%" catches rises above 10 %, "< -5%" drops
//     beyond 5 %.
//   - A gate fails on a row only when the change is significant (the confidence interval of the difference excludes 0)
//     AND the point estimate satisfies "change op threshold". A noisy +12 % whose interval spans 0 does not fail;
//     a significant +3 % does not cross +10 %. Rows without a judged interval (fewer than 3 repetitions on a side) or with a base mean
//     of 0 under a % gate cannot fail and are reported as not evaluable.
//   - A gate that selects no row at all is an error (exit 2), so a typo cannot pass silently.
//   - Any failing gate makes the command return *GateError, which the CLI maps to exit code 3; the message names each
//     gate and each failing measurement with both means, the change and its interval.
//
// Examples:
//
//	cpu.sidecar > +10%              sidecar CPU (or anything in sidecar mode) rose by more than 10 %
//	memory.mesh.load > +5%          the mesh total's memory under load rose by more than 5 %
//	latency.p99.ambient > +1ms      ambient mode's p99 latency rose by more than 1 ms
//	latency.p99.9.waypoint >= 2ms   p99.9 in waypoint mode rose by 2 ms or more
//	qps.none < -5%                  achieved qps without a mesh dropped by more than 5 %
//	throughput.cross-node < -10%    cross-node pod throughput dropped by more than 10 %
package compare

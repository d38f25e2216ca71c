// Package capacity projects what each data-plane mode will cost at a production shape, from what one run measured.
//
// It is offline and pure: it reads a run directory's samples and case records (results.Read) and nothing else.
// Build fits, per mode, component, metric (cpu, memory) and kind (usage from the "avg" samples, reservation from the
// optional "request" samples), the cost of one unit that scales it as fixed + slope x load:
//
//   - app and sidecar: per pod, against the app's achieved rps per pod (the entry rate spread over the app's pods);
//   - ztunnel: per node, against the achieved rps per node;
//   - waypoint: per waypoint, against the achieved rps per waypoint;
//   - istiod: against the number of app pods in the mesh; a constant when the run measured one mesh size, unless
//     Model.UseIstiodCurve replaces it by the fit of an istiod curve (hack/istiodscale: istiod at several mesh
//     sizes, repetitions per size; ParseIstiodCurve, fitIstiodCurve).
//
// The load is what the load generator achieved (the sum of its clients' qps samples in the load window), never the
// configured level: a mode that cannot keep up must not be credited with traffic it did not carry. Each repetition
// at each load level is one point, so the 95 % intervals of the coefficients (Student t on the regression's
// residual) come from the repetitions. A fit says when it cannot be trusted instead of extrapolating quietly: fewer
// than 2 load levels, or levels less than MinLoadSpan apart, give no slope; fewer than 3 points no interval; 2 levels
// cannot test linearity; from 3 levels a lack-of-fit F test (residuals of the level means against the spread within
// levels) flags a curve, its p-value adjusted by Holm's method for the model's other tests. Levels that achieved
// less than minAchievedShare of their rate are flagged.
//
// Project scales the fits to a Shape (pods, nodes, namespaces, rps, prices) with prediction intervals, sums them per
// mode (mesh and app), compares with mode none, prices them, and states the break-even pods per node between
// sidecar and ambient where one exists. Every figure carries the caveats of the fits it comes from (Caveat:
// incomplete when its mode lacks a part, no slope, not linear, extrapolated, linearity untested), a fit without a
// slope used away from its load gives no interval, and each caveat has a typed Warning. The intervals assume the
// same noise at every load; ScatterCheck tests that at the top level, and CheckHoldout refits without a level.
//
// The synthetic study (study_test.go, on runs that synth_test.go generates with a known truth and seed) measures
// what the intervals, the tests and the marks do: its figures are in docs/results.md.
//
// BuildHops (hop.go) fits, on a run of a fortio chain at several depths (scenario topologies[].chainDepth, case fact
// chain-depth), client latency p50/p90/p99 = fixed + slope x depth per mode and load level, and the latency each mesh
// mode adds per hop: its slope minus mode none's, with a Welch-Satterthwaite interval. Too few depths, no mode none
// or too few repetitions give a reason instead of a number. The cost fits of such a run pool its depths (Build warns).
package capacity

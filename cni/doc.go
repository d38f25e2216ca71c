// Package cni is the pod network benchmark of `meshbench cni` underneath the mesh (study B and the CNI
// benchmarks, done so that every cell is either a measurement with its confidence interval or says why it is empty).
//
// It has no case loop of its own: a Bench plans the cases on the cluster (scenario's cni plan with placement and
// skips, in scenario's Case shape) and offers the steps (Deploy, Measure, Resources, Teardown) that runner.Runner
// orders, through the adapters in orchestrate, exactly as it runs the mesh cases of `meshbench run`: one record per
// case at once, an interrupted case not recorded, a failed case recorded with its reason and the run going on.
//
// One run lives in one namespace labelled with the run labels (and meshbench.dev/component=cni-test), deleted by the
// runner's finalizer whatever happens (success, failure, Ctrl-C: a fresh context, waiting until the namespace is
// gone) unless --keep. In it:
//
//	client         node A, pod network    network image: iperf3 (and netperf) clients
//	client-agent   node A, pod network    agent image: built-in TCP_RR/TCP_CRR clients (only with the built-in tool)
//	server-local   node A, pod network    iperf3 -s, plus the agent's TCP echo or netserver       (same-node path)
//	server-remote  node B, pod network    the same servers                                         (cross-node path)
//	service        ClusterIP Service whose only backend is server-remote                          (service path)
//	host-client    node A, hostNetwork    clients in the node's network namespace                 (host path)
//	host-server    node B, hostNetwork    servers on high ports of node B                         (host path)
//
// hostNetwork is the only privilege asked for, and only when the host path is measured; every container runs as
// non-root with all capabilities dropped, no privilege escalation, a read-only root file system and the
// RuntimeDefault seccomp profile. Placement is explicit (spec.cni.placement) or automatic (the first two Ready
// schedulable nodes by name) and is verified after scheduling. With one node, the cross-node, service and host cases
// are recorded as skipped with the reason.
//
// Every test runs spec.cni.samples times for spec.cni.duration (the samples of a case back to back), through exec
// (kube.Execer); the raw output of each sample is kept in the run directory under a name that says what it holds
// (raw/<path>-<test>-<n>.json only for output that parses as JSON, .txt for netperf's text, .err.txt for an exec
// error and output that is not the tool's report; nothing for a sample Ctrl-C cut short), parsed by internal/nettool, checked (the Service path must show the ClusterIP on the client side and the
// backend's own address on the server side) and recorded by the runner as one case per path x test (case ID
// <path>/<test>, the plan's; sample n is repetition n). The printed table is results.CNIRows over the summary of
// what was recorded, the computation the report uses. Resource use of the test pods and of their nodes (node A for
// same-node, A and B otherwise; each node on its own, labelled node and series) is read for an idle window (pods deployed, then one rate range of quiet, then no traffic) and
// for every case; a case shorter than two rate ranges gets memory figures only, because its CPU figures would reach
// back into the previous case's traffic (the case says so in a warning).
//
// A resumed run (`meshbench cni --resume`, Bench.Resume) keeps the recorded cases and runs the others on the nodes the
// kept ones used (RecordedPlacement), after checking the plan is the recorded one (PlanResume), deleting the namespace
// a killed session left (CleanupLeftovers) and removing the raw output of the cases that run again (RemoveRaw).
package cni

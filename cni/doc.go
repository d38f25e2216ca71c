// Package cni is the pod network benchmark of `meshbench cni` underneath the mesh: every cell is either a
// measurement with its confidence interval or says why it is empty.
//
// It has no case loop of its own: a Bench plans the cases on the cluster (placement, skips, in scenario's Case shape)
// and offers the steps (Deploy, Measure, Resources, Teardown) that runner.Runner orders through orchestrate's
// adapters, as for the mesh cases: one record per case, an interrupted case not recorded, a failed one recorded with
// its reason. Its pods live in one run namespace the runner's finalizer deletes (unless --keep); Bench.Resume
// continues a recorded run. The pods, samples, raw output, resource windows and resume rules: docs/cni.md.
package cni

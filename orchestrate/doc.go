// Package orchestrate is meshbench's wiring: it composes the adapters (mesh, workloads, loadgen, collectors,
// cni) behind the runner's interfaces and carries a run from a validated scenario to its written results. It is
// the one package besides cmd/meshbench/app that may import several adapters; only cmd/meshbench/app imports it.
//
// The order it keeps is the CLI contract: nothing is created (no run directory, nothing in the cluster) before the
// input is valid and the API server answered (Connect), and the run directory is created exclusively under a run ID
// that cannot collide (NewRunID). Errors that mean "the user's input is wrong" are *InputError; the cobra layer maps
// them to exit code 2 (this package picks no exit codes).
package orchestrate

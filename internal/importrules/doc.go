// Package importrules holds meshbench's import rules as data (Rules) and checks an import graph against them
// (Check); its test runs `go list` over the module so that the next forbidden edge fails CI.
//
// The rules, one way through the house: foundation packages (internal/inputfile: the one rule for reading input
// files) import no project package and every package may import them; scenario and results import no project
// package but the foundations; pure leaf packages (internal/...) import only those and each other; the shared
// clients (internal/kube, internal/target: they talk to the API server) import those and each other; the adapters
// (mesh, workloads, loadgen, collectors/..., cni, images, schedule) and the runner import scenario, results,
// leaves and the shared clients, never each other; the offline packages (charts, report, compare, capacity) import
// results, leaves and each other, never a shared client; push sends reports and imports those; composition
// packages (orchestrate, preflight) and the commands (cmd/...) may import everything but the commands. A package
// the table does not name is an error: a new package is classified on purpose, in Rules.
package importrules

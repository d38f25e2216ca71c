// Package orchestrate wires a run: the adapters behind the runner's interfaces, from a validated scenario to written
// results, nothing created before the input is valid and the API server answered (Connect). Only cmd/meshbench/app
// imports it; input errors are *InputError (exit 2 in the cobra layer). The run flow: docs/architecture.md.
package orchestrate

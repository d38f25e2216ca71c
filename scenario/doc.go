// Package scenario is meshbench's configuration: the Scenario type (apiVersion meshbench.dev/v1alpha1), a strict
// loader (unknown or duplicate fields are errors, reported with their path), defaults, Validate (every problem at once,
// each with its field path and a hint) and Plan, which expands a scenario into an ordered list of cases with stable IDs.
//
// Everything here is pure: no I/O but reading the file in Load, no cluster access. The package imports no other
// meshbench package.
package scenario

// Package importrules holds meshbench's import rules as data (Rules) and checks an import graph against them
// (Check); its test runs `go list` over the module so that the next forbidden edge fails CI. The rules are stated in
// docs/architecture.md ("Import rules"). A package the table does not name is an error: a new package is
// classified on purpose.
package importrules

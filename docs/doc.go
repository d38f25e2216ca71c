// Package docs holds meshbench's documentation (architecture.md, results.md, config-reference.md) and the tests that
// keep it from drifting: every package of the module is listed in architecture.md, and every JSON field of the
// results files is described in results.md. There is no Go code here besides the tests.
package docs

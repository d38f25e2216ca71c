// Package mk holds the tests of the Makefile fragments in this directory (hack/mk/*.mk) and of the teardown path a
// newcomer takes: `make cluster-down` after `make demo` on a machine that never built the local Istio. The tests run
// the real scripts against a temporary state dir (MESHBENCH_CLUSTER_DIR) and stand-ins for the steps that would touch
// the host, so they never touch a running local cluster. There is no Go code here besides the tests.
package mk

// Package mk holds the tests of the Makefile fragments in this directory (hack/mk/*.mk), of the teardown path a
// newcomer takes (`make cluster-down` after `make demo` on a machine that never built the local Istio), and of the
// promise that no step of `make demo` is silent for more than a minute (hack/heartbeat.sh and where it is used). The
// tests run the real scripts against a temporary state dir (MESHBENCH_CLUSTER_DIR) and stand-ins for the steps that
// would touch the host, so they never touch a running local cluster. There is no Go code here besides the tests.
package mk

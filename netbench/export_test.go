package netbench

// Test helpers of the in-package tests, for the external tests of the bench run through runner.Runner
// (package netbench_test: it imports orchestrate, which imports netbench).
var (
	Node     = node
	NotReady = notReady
)

const (
	ProcNetRoute   = procNetRoute
	ConnectRetries = connectRetries
)

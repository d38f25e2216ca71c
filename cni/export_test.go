package cni

// Test helpers of the in-package tests, for the external tests of the bench run through runner.Runner
// (package cni_test: it imports orchestrate, which imports cni).
var (
	Node     = node
	NotReady = notReady
	CaseRec  = caseRec
	RawFiles = rawFiles
)

const (
	ProcNetRoute   = procNetRoute
	ConnectRetries = connectRetries
	TestDigest     = testDigest
)

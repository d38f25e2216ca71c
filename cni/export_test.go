package cni

// Test helpers of the in-package tests and unexported names, for the external tests of the bench run through
// runner.Runner (package cni_test: it imports orchestrate, which imports cni).
var (
	Node             = node
	NotReady         = notReady
	CaseRec          = caseRec
	RawFiles         = rawFiles
	CleanupLeftovers = (*Bench).cleanupLeftovers
)

const (
	ProcNetRoute   = procNetRoute
	ConnectRetries = connectRetries
	TestDigest     = testDigest

	ComponentLabel  = componentLabel
	ComponentValue  = componentValue
	ContainerNet    = containerNet
	ContainerIperf3 = containerIperf3
	CopiedAgent     = copiedAgent
	CgroupsDir      = cgroupsDir
	LabelPath       = labelPath
	LabelTest       = labelTest
)

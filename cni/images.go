package cni

import "github.com/meshbench/meshbench/scenario"

// PulledImages lists the images the test pods of s's cni benchmark pull: the agent (the built-in RR/CRR client and
// server, the echo server, the cgroups wrapper) and the network tools image (iperf3, netperf). Preflight and the
// run's image check resolve them before anything is created.
func PulledImages(s *scenario.Scenario) []string {
	return []string{s.Spec.Images.Agent, s.Spec.Images.Network}
}

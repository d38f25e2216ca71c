// Package target describes a deployed app as every other part of meshbench needs it: its namespaces, its
// Deployments and StatefulSets, the selector of its pods and the service load goes to (Target), and how to tell
// whether it is rolled out and ready (DeploymentReady, PodsRolledOut, StatefulSetReady, PodProblem, WaitReady), and
// which nodes a failure blames (NodeNotReadyError, KubeletError, FailedNodes) and whether a case may run while they
// are still unusable (NodeGate: node conditions and kubelet probes).
//
// It is a shared client (internal/importrules): it reads the API server for the adapters and the runner. workloads
// builds a Target, mesh switches its namespaces' data-plane mode, the runner passes it between them, and none of
// them imports another for it. It imports only scenario and internal/kube.
package target

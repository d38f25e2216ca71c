// Package target describes a deployed app as every other part of meshbench needs it (Target: namespaces, workloads,
// pod selector, load service), its readiness (Cache.WaitReady, podsRolledOut), the nodes a failure blames (KubeletError,
// NodeNotReadyError) and whether a case may run while they are unusable (NodeGate). A shared client: it reads the
// API server, so workloads, mesh and the runner share it without importing each other.
package target

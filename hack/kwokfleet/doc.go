// Package kwokfleet is a fleet of fake nodes on a real cluster: Node objects that kwok (sigs.k8s.io/kwok, built by
// hack/istiodscale/build-kwok.sh from the pin in hack/istiodscale/kwok/go.mod) manages out of cluster, faking their
// heartbeats and the status of every pod bound to them (no container runs). Pods scheduled there are real API
// objects: the real scheduler binds them, the real admission chain (Istio's injector) mutates them, the real
// controllers publish their endpoints. hack/istiodscale (istiod against the mesh size) and hack/meshscale (a whole
// meshbench run at cluster size) both use it.
//
// Each fake node mb-kwok-NNN carries the label FakeNodeLabel=true (kwok's --manage-nodes-with-label-selector), the
// fleet's run label, a NoSchedule taint of the fleet's key (only pods that tolerate it, and DaemonSets that tolerate
// everything, land there) and a /24 pod CIDR of its own in 10.244.100-255.0/24 (kwok assigns pod IPs from the
// node's podCIDR). Cleanup removes the nodes, the pods still bound to them (force-deleted: without kwok a pod on a
// fake node never finishes terminating) and their leases; StopStaleKwok ends a kwok a killed run left.
package kwokfleet

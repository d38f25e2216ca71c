// Package kube builds Kubernetes clients from a kubeconfig (--kubeconfig, --context) and holds the small helpers every
// adapter needs: exec into a pod, GET through the pods/services/nodes proxy subresources, server-side apply with
// field manager "meshbench", and the labels that mark everything meshbench creates.
//
// Adapters take the narrow interfaces (kubernetes.Interface, dynamic.Interface) so tests can use fakes for unit
// checks and the local cluster for the real proof.
package kube

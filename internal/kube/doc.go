// Package kube builds Kubernetes clients from a kubeconfig (--kubeconfig, --context) and holds the small helpers every
// adapter needs: exec into a pod, GET through the pods/services/nodes proxy subresources, server-side apply with
// field manager "meshbench", and the labels that mark everything meshbench creates.
//
// It is also the one home of waiting and time: Wait (and WaitFor, its watched form) is the one wait helper, Retry
// the one retry helper, Sleep the one context-aware sleep, and k8s.io/utils/clock.Clock the one clock abstraction. Every client it builds gives
// each ordinary API request a deadline (Options.RequestTimeout, default DefaultRequestTimeout = 30 s) and leaves
// streams (watch, exec, port-forward, logs -f) uncut.
//
// Adapters take the narrow interfaces (kubernetes.Interface, dynamic.Interface) so tests can use fakes for unit
// checks and the local cluster for the real proof.
package kube

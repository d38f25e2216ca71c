// Package kube builds Kubernetes clients from a kubeconfig, each ordinary request with a deadline and streams uncut
// (docs/reliability.md), and holds what every adapter needs: exec, proxy GETs, server-side apply (field manager
// "meshbench") and the run labels. It is the one home of waiting and time: Wait, Retry, Sleep and the clock
// (docs/architecture.md, "Waiting and time").
package kube

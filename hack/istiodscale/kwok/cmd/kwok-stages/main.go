// Command kwok-stages prints the Stage objects kwok v0.8.0 simulates nodes and pods with, as one multi-document YAML
// for kwok's --config.
//
// The standalone kwok binary has no built-in stages (pkg/kwok/cmd/root.go at v0.8.0 fails with "no stages found"
// when its config holds none); kwokctl adds them itself (pkg/kwokctl/runtime/cluster.go: getDefaultNodeStages,
// getDefaultPodStages). This prints the same set from the same embedded files of the pinned module, so nothing is
// copied by hand: node-initialize and node-heartbeat-with-lease (kustomize/stage/node/...), pod-ready, pod-complete
// and pod-delete (kustomize/stage/pod/fast).
package main

import (
	"fmt"
	"os"
	"strings"

	nodefast "sigs.k8s.io/kwok/kustomize/stage/node/fast"
	nodelease "sigs.k8s.io/kwok/kustomize/stage/node/heartbeat-with-lease"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"
)

func main() {
	docs := []string{
		nodefast.DefaultNodeInit,
		nodelease.DefaultNodeHeartbeatWithLease,
		podfast.DefaultPodReady,
		podfast.DefaultPodComplete,
		podfast.DefaultPodDelete,
	}
	for i, d := range docs {
		docs[i] = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(d), "---"))
	}
	if _, err := fmt.Fprintln(os.Stdout, strings.Join(docs, "\n---\n")); err != nil {
		os.Exit(1)
	}
}

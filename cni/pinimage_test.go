package cni

import (
	"testing"
)

const testDigest = "sha256:0d5c8f1f9a5a9f0c6e1e3d6b7a2f4c8e9b0a1d2c3e4f5a6b7c8d9e0f1a2b3c4d"

// TestPinImage: the digest a pod's image ID names, and the image reference pinned to it.
func TestPinImage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ ref, imageID, digest, pinned string }{
		// containerd and CRI-O report the repository digest the tag resolved to.
		{"quay.io/cloud-bulldozer/k8s-netperf:latest", "quay.io/cloud-bulldozer/k8s-netperf@" + testDigest, testDigest,
			"quay.io/cloud-bulldozer/k8s-netperf@" + testDigest},
		{"172.30.0.1:5000/meshbench/iperf3:dev", "172.30.0.1:5000/meshbench/iperf3@" + testDigest, testDigest, "172.30.0.1:5000/meshbench/iperf3@" + testDigest},
		// cri-dockerd; a mirror's name in the status: the configured repository is kept.
		{"quay.io/cloud-bulldozer/k8s-netperf:latest", "docker-pullable://mirror.example/k8s-netperf@" + testDigest, testDigest,
			"quay.io/cloud-bulldozer/k8s-netperf@" + testDigest},
		// A local image ID is the config's digest, which no registry serves: not pinned.
		{"quay.io/cloud-bulldozer/k8s-netperf:latest", testDigest, "", ""},
		{"quay.io/cloud-bulldozer/k8s-netperf:latest", "", "", ""},
		// Already pinned: as it is.
		{"quay.io/cloud-bulldozer/k8s-netperf@" + testDigest, "whatever", testDigest, "quay.io/cloud-bulldozer/k8s-netperf@" + testDigest},
	} {
		if d, p := pinImage(tc.ref, tc.imageID); d != tc.digest || p != tc.pinned {
			t.Errorf("PinImage(%q, %q) = %q, %q; want %q, %q", tc.ref, tc.imageID, d, p, tc.digest, tc.pinned)
		}
	}
}

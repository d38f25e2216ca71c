package upstreamfixture

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"sigs.k8s.io/yaml"
)

// Patch is one istio/istio release tag's facts that change between patch releases (testdata/upstream/
// istio-patches.yaml; its header names the files they were read from).
type Patch struct {
	Tag    string `json:"tag"`
	Commit string `json:"commit"`
	// MinKubernetes is istioctl's minimum Kubernetes ("1.30").
	MinKubernetes string `json:"minKubernetes"`
	// MinimumBundleVersion and MaximumBundleVersion are the Gateway API CRDs istiod ignores below or above a
	// gateway.networking.k8s.io/bundle-version, keyed by full CRD name (both bounds inclusive).
	MinimumBundleVersion map[string]string `json:"minimumBundleVersion"`
	MaximumBundleVersion map[string]string `json:"maximumBundleVersion"`
	// AmbientPeerAuthenticationsByRevision is whether the ambient index reads only the PeerAuthentications of
	// istiod's own revision.
	AmbientPeerAuthenticationsByRevision bool `json:"ambientPeerAuthenticationsByRevision"`
}

// PatchesPath is the patch fixture's path.
func PatchesPath() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", "upstream", "istio-patches.yaml")
}

// LoadPatches reads the patch fixture: every tag from 1.24.0, each with a commit and a Kubernetes minimum.
func LoadPatches() ([]Patch, error) {
	b, err := os.ReadFile(PatchesPath())
	if err != nil {
		return nil, err
	}
	var f struct {
		Tags []Patch `json:"tags"`
	}
	if err := yaml.UnmarshalStrict(b, &f); err != nil {
		return nil, fmt.Errorf("parse %s: %w", PatchesPath(), err)
	}
	if len(f.Tags) < 50 || f.Tags[0].Tag != "1.24.0" {
		return nil, fmt.Errorf("%s: %d tags, want every tag from 1.24.0 first", PatchesPath(), len(f.Tags))
	}
	for _, p := range f.Tags {
		if len(p.Commit) != 40 || p.MinKubernetes == "" || len(p.MinimumBundleVersion) == 0 {
			return nil, fmt.Errorf("%s: tag %s lacks its commit, Kubernetes minimum or CRD minimums", PatchesPath(), p.Tag)
		}
	}
	return f.Tags, nil
}

//go:build tools

// Package kwok pins sigs.k8s.io/kwok for the istiod scale harness (hack/istiodscale): a separate module, so kwok's
// dependencies (client-go v0.36, kustomize, otel, ...) never enter meshbench's go.mod. build.sh builds cmd/kwok from
// this pin.
package kwok

import _ "sigs.k8s.io/kwok/cmd/kwok"

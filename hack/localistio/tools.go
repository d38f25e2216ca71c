//go:build tools

// Package tools pins the istio.io/istio packages built by build.sh so that `go mod tidy` keeps
// every dependency they need. This module is separate from meshbench's own go.mod on purpose:
// istio.io/istio is a test-harness dependency only (hack/localistio), never linked into meshbench.
package tools

import (
	_ "istio.io/istio/cni/cmd/install-cni"
	_ "istio.io/istio/cni/cmd/istio-cni"
	_ "istio.io/istio/pilot/cmd/pilot-discovery"
)

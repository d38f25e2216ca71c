package results

import (
	"slices"
	"time"

	"gonum.org/v1/gonum/stat"
)

// StartupPhase is one moment of a pod's start, measured from the pod's creation.
type StartupPhase string

// The phases of a pod's start, in order (docs/measurement.md, "Pod startup"). The Kubernetes timestamps they come
// from have whole seconds.
const (
	PhaseScheduled         StartupPhase = "scheduled"          // condition PodScheduled
	PhaseInitialized       StartupPhase = "initialized"        // condition Initialized: init containers done
	PhaseProxyStarted      StartupPhase = "proxy-started"      // the istio-proxy container running (sidecar modes)
	PhaseContainersStarted StartupPhase = "containers-started" // the last app container running
	PhaseReady             StartupPhase = "ready"              // condition Ready
)

// AllStartupPhases is the phases in order.
var AllStartupPhases = []StartupPhase{PhaseScheduled, PhaseInitialized, PhaseProxyStarted, PhaseContainersStarted, PhaseReady}

// PodStartup is one app pod's start: when it was created and the seconds from then to each phase it reached.
type PodStartup struct {
	Pod     string                   `json:"pod"` // namespace/name
	UID     string                   `json:"uid"`
	Created time.Time                `json:"created"`
	Seconds map[StartupPhase]float64 `json:"seconds"`
	// Redirected: istio-cni redirected the pod's traffic to the node proxy (ambient.istio.io/redirection: enabled).
	Redirected bool `json:"redirected,omitempty"`
}

// StartupStats is the distribution of one phase over pods.
type StartupStats struct {
	Phase              StartupPhase
	N                  int
	Min, P50, P90, Max float64
}

// StartupDistribution is, for every phase some pod of ps reached, its distribution in seconds (percentiles of the
// empirical distribution: each is a value some pod took), in phase order. It is pure.
func StartupDistribution(ps []PodStartup) []StartupStats {
	var out []StartupStats
	for _, ph := range AllStartupPhases {
		var v []float64
		for _, p := range ps {
			if s, ok := p.Seconds[ph]; ok {
				v = append(v, s)
			}
		}
		if len(v) == 0 {
			continue
		}
		slices.Sort(v)
		out = append(out, StartupStats{Phase: ph, N: len(v), Min: v[0], P50: stat.Quantile(0.5, stat.Empirical, v, nil), P90: stat.Quantile(0.9, stat.Empirical, v, nil), Max: v[len(v)-1]})
	}
	return out
}

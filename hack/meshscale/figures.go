package main

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/meshbench/meshbench/results"
)

// FiguresSchema names the figures file's format.
const FiguresSchema = "meshbench.dev/mesh-scale-figures/v1"

// TenMinutes is the window the tool's overhead is set against: a production-length measurement window.
const TenMinutes = 10 * time.Minute

// Figures is what one harness run measured about meshbench itself at cluster size.
type Figures struct {
	Schema     string    `json:"schema"`
	RunID      string    `json:"runID"`
	Started    time.Time `json:"started"`
	Pods       int       `json:"pods"`
	Namespaces int       `json:"namespaces"`
	Workloads  int       `json:"workloads"`
	FakeNodes  int       `json:"fakeNodes"`
	Modes      []string  `json:"modes"`
	// WindowSeconds is the idle and the load window of each case.
	WindowSeconds float64 `json:"windowSeconds"`
	// Cases are meshbench's cases, in order.
	Cases []CaseFigures `json:"cases"`
	// Switches are the cases that switched the mode.
	Switches []SwitchFigures `json:"switches"`
	// Meshbench is the meshbench process: peak RSS (rusage Maxrss), CPU (user+system) and wall time of the run.
	Meshbench Process `json:"meshbench"`
	// StandIns says which figures come from stand-ins, not from the system measured.
	StandIns []string `json:"standIns"`
	Notes    []string `json:"notes,omitempty"`
	Complete bool     `json:"complete"`
	Error    string   `json:"error,omitempty"`
}

// Process is a subprocess' resource use.
type Process struct {
	PeakRSSMiB  float64 `json:"peakRSSMiB"`
	CPUSeconds  float64 `json:"cpuSeconds"`
	WallSeconds float64 `json:"wallSeconds"`
	ExitCode    int     `json:"exitCode"`
}

// CaseFigures is one case.
type CaseFigures struct {
	CaseID string `json:"caseID"`
	Mode   string `json:"mode"`
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
	// APIRequests is the case's apiRequests total as meshbench recorded it; Top the most frequent verb+resource.
	APIRequests int64  `json:"apiRequests"`
	Top         string `json:"topVerbResource,omitempty"`
	TopCount    int64  `json:"topCount,omitempty"`
	// CollectSeconds is the collection time per window kind (meshbench's collect-<kind> timings); CollectWaitSeconds
	// the part of it spent waiting for Prometheus to ingest the window's last scrapes (collect-wait-<kind>: the
	// protocol's wait, two scrape steps + 2 s after the window's end), before the first query. The rest is the
	// collection's own work: listing the pod sets and the queries.
	CollectSeconds     map[string]float64 `json:"collectSeconds,omitempty"`
	CollectWaitSeconds map[string]float64 `json:"collectWaitSeconds,omitempty"`
	// PromQueries are the Prometheus API requests meshbench sent during the case (counted by the harness' proxy);
	// QueriesPerWindow divides them by the case's windows.
	PromQueries      int     `json:"promQueries"`
	QueriesPerWindow float64 `json:"queriesPerWindow"`
	// CaseSeconds is the case's wall time; WindowSeconds the measured windows in it; OverheadSeconds the rest
	// (switch, verification, load-client placement, settle, lead-in, collection); OverheadPct10m the rest as a
	// percentage of a 10-minute window.
	CaseSeconds     float64 `json:"caseSeconds"`
	WindowSeconds   float64 `json:"windowSeconds"`
	OverheadSeconds float64 `json:"overheadSeconds"`
	OverheadPct10m  float64 `json:"overheadPctOf10MinWindow"`
	// ToolSeconds is the "tool overhead per case": meshbench's steps around the windows (ensure,
	// mode-switch, wait-ready, verify, load-client placement, collection), without the measurement protocol's
	// lead-in, cool-down and idle look-back (set by the scrape interval, not by meshbench). ToolBeyondRolloutSeconds
	// takes out the cluster's own rollout of the switch (first new pod created -> last Deployment rolled out), which
	// meshbench waits for but cannot shorten; both also as a percentage of a 10-minute window.
	ToolSeconds              float64 `json:"toolSeconds"`
	ToolPct10m               float64 `json:"toolPctOf10MinWindow"`
	ToolBeyondRolloutSeconds float64 `json:"toolBeyondRolloutSeconds"`
	ToolBeyondRolloutPct10m  float64 `json:"toolBeyondRolloutPctOf10MinWindow"`
}

// toolSteps are the runner's timings that make up ToolSeconds (collect-<kind> are added by prefix).
var toolSteps = []string{"ensure", "mode-switch", "wait-ready", "verify", "load-clients"}

// SwitchFigures is one mode switch: meshbench's time against what the cluster took.
type SwitchFigures struct {
	CaseID string `json:"caseID"`
	Mode   string `json:"mode"`
	// SwitchSeconds is meshbench's mode-switch + wait-ready + verify.
	SwitchSeconds float64 `json:"switchSeconds"`
	// NewPods were created during the switch; RolloutSeconds is from the first one's creation to the last one
	// Ready (seen by the harness' informer): the API server's and controllers' rollout, independent of meshbench.
	NewPods        int     `json:"newPods"`
	RolloutSeconds float64 `json:"rolloutSeconds"`
	// LastReadyToVerifiedSeconds is from the last new pod Ready to meshbench's verification done.
	LastReadyToVerifiedSeconds float64 `json:"lastReadyToVerifiedSeconds"`
	// RolledOutSeconds is from the first new pod's creation to the last Deployment reporting its rollout complete
	// (status: latest generation observed, every replica updated and available, no old replica; what kubectl
	// rollout status waits for), seen by the harness' informer. The Deployment controller writes that status after
	// the pods are Ready, at its own pace (kube-controller-manager's API QPS): the cluster's rollout ends there.
	// LastRolledOutToVerifiedSeconds is from then to meshbench's verification done: what meshbench itself adds;
	// negative when meshbench saw the rollout done in the pods (target.podsRolledOut) before the status said so.
	RolledOutSeconds               float64 `json:"rolledOutSeconds"`
	LastRolledOutToVerifiedSeconds float64 `json:"lastRolledOutToVerifiedSeconds"`
}

// PodTimes is when the harness saw a pod created and Ready.
type PodTimes struct {
	Created, Ready time.Time
}

// CaseFiguresOf turns a recorded case into its figures; queries are the times of the Prometheus requests. It is
// pure.
func CaseFiguresOf(c results.CaseResult, queries []time.Time) CaseFigures {
	f := CaseFigures{CaseID: c.CaseID, Mode: string(c.Mode), Status: string(c.Status), Reason: c.Reason, CollectSeconds: map[string]float64{},
		CollectWaitSeconds: map[string]float64{}}
	if a := c.APIRequests; a != nil {
		f.APIRequests = a.Total
		keys := slices.Sorted(maps.Keys(a.ByVerbResource))
		for _, k := range keys {
			if a.ByVerbResource[k] > f.TopCount {
				f.Top, f.TopCount = k, a.ByVerbResource[k]
			}
		}
	}
	for step, d := range c.Timings {
		v, err := time.ParseDuration(d)
		if err != nil {
			continue
		}
		if kind, ok := strings.CutPrefix(step, "collect-wait-"); ok {
			f.CollectWaitSeconds[kind] = v.Seconds() // inside collect-<kind>: not added to the tool's time again
		} else if kind, ok := strings.CutPrefix(step, "collect-"); ok {
			f.CollectSeconds[kind] = v.Seconds()
			f.ToolSeconds += v.Seconds()
		} else if slices.Contains(toolSteps, step) {
			f.ToolSeconds += v.Seconds()
		}
	}
	f.ToolPct10m = 100 * f.ToolSeconds / TenMinutes.Seconds()
	f.ToolBeyondRolloutSeconds, f.ToolBeyondRolloutPct10m = f.ToolSeconds, f.ToolPct10m
	for _, q := range queries {
		if !q.Before(c.Start) && !q.After(c.End) {
			f.PromQueries++
		}
	}
	var win time.Duration
	for _, w := range c.Windows {
		win += w.Duration()
	}
	if n := len(c.Windows); n > 0 {
		f.QueriesPerWindow = float64(f.PromQueries) / float64(n)
	}
	f.CaseSeconds = c.End.Sub(c.Start).Seconds()
	f.WindowSeconds = win.Seconds()
	f.OverheadSeconds = max(0, f.CaseSeconds-f.WindowSeconds)
	f.OverheadPct10m = 100 * f.OverheadSeconds / TenMinutes.Seconds()
	return f
}

// BeyondRollout takes the cluster's rollout of the case's switch s out of the tool's time. It is pure.
func (f CaseFigures) BeyondRollout(s SwitchFigures) CaseFigures {
	// Only the part of the rollout meshbench waited through: up to verified when the status came later.
	waited := s.RolledOutSeconds
	if s.LastRolledOutToVerifiedSeconds < 0 {
		waited += s.LastRolledOutToVerifiedSeconds
	}
	f.ToolBeyondRolloutSeconds = max(0, f.ToolSeconds-waited)
	f.ToolBeyondRolloutPct10m = 100 * f.ToolBeyondRolloutSeconds / TenMinutes.Seconds()
	return f
}

// SwitchOf is the switch figures of a case that switched the mode (ok false otherwise): the switch starts after
// the case's ensure step and ends when verification is done (the runner's step order: ensure, mode-switch,
// wait-ready, verify); pods created in between are the rollout's, and rolledOut (when Deployments turned rolled
// out) in between are its end. It is pure.
func SwitchOf(c results.CaseResult, pods []PodTimes, rolledOut []time.Time) (SwitchFigures, bool) {
	d := func(step string) (time.Duration, bool) {
		v, err := time.ParseDuration(c.Timings[step])
		return v, err == nil
	}
	sw, ok1 := d("mode-switch")
	wr, ok2 := d("wait-ready")
	vf, ok3 := d("verify")
	if !ok1 || !ok2 || !ok3 {
		return SwitchFigures{}, false
	}
	ensure, _ := d("ensure")
	start := c.Start.Add(ensure)
	verified := start.Add(sw + wr + vf)
	f := SwitchFigures{CaseID: c.CaseID, Mode: string(c.Mode), SwitchSeconds: (sw + wr + vf).Seconds()}
	var first, last time.Time
	for _, p := range pods {
		if p.Created.Before(start.Add(-time.Second)) || p.Created.After(verified) { // creationTimestamp has 1 s resolution
			continue
		}
		f.NewPods++
		if first.IsZero() || p.Created.Before(first) {
			first = p.Created
		}
		if p.Ready.After(last) {
			last = p.Ready
		}
	}
	if f.NewPods > 0 && !last.IsZero() {
		f.RolloutSeconds = last.Sub(first).Seconds()
		f.LastReadyToVerifiedSeconds = verified.Sub(last).Seconds()
		// The Deployments' status may report the rollout after meshbench verified it (the wait reads the pods too,
		// target.podsRolledOut): their last report up to the case's end counts, and the gap is then negative.
		end := c.End
		if end.Before(verified) {
			end = verified
		}
		var done time.Time
		for _, t := range rolledOut {
			if t.After(start) && !t.After(end) && t.After(done) {
				done = t
			}
		}
		if !done.IsZero() {
			f.RolledOutSeconds = done.Sub(first).Seconds()
			f.LastRolledOutToVerifiedSeconds = verified.Sub(done).Seconds()
		}
	}
	return f, true
}

// WriteTable prints the figures as Markdown tables.
func WriteTable(w io.Writer, f Figures) {
	fmt.Fprintf(w, "# meshbench at scale: %d pods (%d workloads) in %d namespaces on %d fake nodes, modes %s, windows %.0f s\n\n",
		f.Pods, f.Workloads, f.Namespaces, f.FakeNodes, strings.Join(f.Modes, ","), f.WindowSeconds)
	fmt.Fprintln(w, "| case | status | API requests | top verb/resource | collect s (idle / load), of which ingest wait | Prometheus queries (per window) | case s | windows s | case outside windows s | tool s (% of 10 min) | tool beyond the rollout s (% of 10 min) |")
	fmt.Fprintln(w, "|---|---|---:|---|---|---:|---:|---:|---:|---:|---:|")
	for _, c := range f.Cases {
		fmt.Fprintf(w, "| %s | %s | %d | %s (%d) | %.1f / %.1f (wait %.1f / %.1f) | %d (%.0f) | %.0f | %.0f | %.0f | %.1f (%.1f %%) | %.1f (%.1f %%) |\n", c.CaseID, c.Status, c.APIRequests, c.Top, c.TopCount,
			c.CollectSeconds["idle"], c.CollectSeconds["load"], c.CollectWaitSeconds["idle"], c.CollectWaitSeconds["load"], c.PromQueries, c.QueriesPerWindow, c.CaseSeconds, c.WindowSeconds, c.OverheadSeconds,
			c.ToolSeconds, c.ToolPct10m, c.ToolBeyondRolloutSeconds, c.ToolBeyondRolloutPct10m)
	}
	fmt.Fprintln(w, "\n| switch (case) | mode | new pods | rollout s (first created -> last pod Ready) | rollout s (-> last Deployment rolled out) | meshbench switch s (apply + wait-ready + verify) | last pod Ready -> verified s | last Deployment rolled out -> verified s |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|")
	for _, s := range f.Switches {
		fmt.Fprintf(w, "| %s | %s | %d | %.1f | %.1f | %.1f | %.1f | %.1f |\n", s.CaseID, s.Mode, s.NewPods, s.RolloutSeconds, s.RolledOutSeconds, s.SwitchSeconds,
			s.LastReadyToVerifiedSeconds, s.LastRolledOutToVerifiedSeconds)
	}
	fmt.Fprintf(w, "\nmeshbench process: peak RSS %.0f MiB, CPU %.1f s, wall %.0f s, exit %d\n", f.Meshbench.PeakRSSMiB, f.Meshbench.CPUSeconds, f.Meshbench.WallSeconds, f.Meshbench.ExitCode)
	fmt.Fprintln(w, "\nStand-ins (not measured on real components):")
	for _, s := range f.StandIns {
		fmt.Fprintln(w, "- "+s)
	}
	for _, n := range f.Notes {
		fmt.Fprintln(w, "- note: "+n)
	}
	if f.Error != "" {
		fmt.Fprintln(w, "\nerror: "+f.Error)
	}
}

// sortCases orders cases by start.
func sortCases(cs []results.CaseResult) {
	slices.SortStableFunc(cs, func(a, b results.CaseResult) int { return cmp.Compare(a.Start.UnixNano(), b.Start.UnixNano()) })
}

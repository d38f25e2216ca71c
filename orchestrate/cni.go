package orchestrate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/mesh"
	"github.com/meshbench/meshbench/netbench"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/runner"
	"github.com/meshbench/meshbench/scenario"
)

// CNIConfig is one `meshbench cni`: the validated scenario (flags applied) and the bounds of its waits.
type CNIConfig struct {
	Scenario *scenario.Scenario
	// ResumeDir continues the cni run recorded there (Scenario is then its recorded scenario): its kept cases stay
	// as they are, the others run.
	ResumeDir string
	// Retain keeps the test namespace and pods after the run.
	Retain          bool
	ReadyTimeout    time.Duration
	FinalizeTimeout time.Duration
}

// CNIResult is what a network benchmark wrote: its directory and netbench's report.
type CNIResult struct {
	RunID  string
	Dir    string
	Report *netbench.Report
}

// CNI runs the pod-network benchmark. The collector is built (and the kubelet sampler calibrated) before the run
// directory is created; the returned error wraps *netbench.CasesFailedError when some cases failed.
func CNI(ctx context.Context, cfg CNIConfig, d Deps) (CNIResult, error) {
	s, log, clients := cfg.Scenario, d.Log, d.Clients
	// Kubelet fallback: sample at most every 5 s (cAdvisor's own stamps are ~10 s apart) so short tests get data.
	s.Spec.Prometheus.KubeletSampleInterval.Duration = min(s.Spec.Prometheus.KubeletSampleInterval.Duration, 5*time.Second)
	col, err := NewCollector(ctx, clients, s, log)
	if err != nil {
		return CNIResult{}, err
	}
	defer col.Stop()
	// The CNI baseline needs no control plane: Istio is detected for the record only (an undecidable revision is
	// just not recorded).
	ist, err := mesh.Detect(ctx, clients, s.Spec.Istio.Revision)
	if err != nil {
		log.Warn("detect istio", "err", err)
	}
	var store *results.Store
	var meta results.RunMeta
	var recorded *results.Run
	if cfg.ResumeDir != "" {
		st, run, err := results.Resume(cfg.ResumeDir)
		if err != nil {
			return CNIResult{}, inputError(err)
		}
		if !run.Meta.IsCNI() {
			_ = st.Close()
			return CNIResult{}, inputError(fmt.Errorf("resume %s: a %q run, not a cni run: continue it with meshbench run --resume", cfg.ResumeDir, run.Meta.Command))
		}
		for _, w := range run.Warnings {
			log.Warn("resume", "repaired", w.String())
		}
		store, meta, recorded = st, run.Meta, run
	} else {
		// run.json records the same plan type `meshbench plan` prints (its pod network part, case IDs <path>/<test>).
		plan := scenario.NewPlan(s)
		meta, err = newMeta(results.CommandCNI, s, scenario.Plan{Scenario: plan.Scenario, CNI: plan.CNI})
		if err != nil {
			return CNIResult{}, err
		}
		meta.Cluster, meta.Prometheus, meta.Notes = ClusterFacts(ctx, clients, s, d.KubeVersion, ist, log), col.Facts, append(meta.Notes, col.Notes...)
		// The run ID is also the namespace name (mb-<run id>): lower-case, digits and '-', short.
		if store, meta, err = CreateRun(s.Spec.Output.Dir, "cni", meta); err != nil {
			return CNIResult{}, err
		}
	}
	defer func() { _ = store.Close() }()
	res := CNIResult{RunID: meta.RunID, Dir: store.Dir()}
	nc := netbench.Config{
		RunID: meta.RunID, Namespace: "mb-" + meta.RunID, CNI: s.Spec.CNI, RunDir: store.Dir(), Keep: cfg.Retain,
		Images:       netbench.Images{Network: s.Spec.Images.Network, Agent: s.Spec.Images.Agent, PullPolicy: s.Spec.Images.PullPolicy},
		ReadyTimeout: cfg.ReadyTimeout, DeleteTimeout: cfg.FinalizeTimeout, RateRange: col.lead,
	}
	if ni := meta.NetworkImage; recorded != nil && ni != nil && ni.Pinned != "" {
		// A --resume runs the digest the recorded run's pods ran, whatever the tag points at now.
		nc.Images.Network = ni.Pinned
	}
	var out runner.Outcome
	b, done, runErr := NewCNIBench(ctx, nc, netbench.Deps{Kube: clients.Kube, Exec: kube.PodExecer{Config: clients.Config, Kube: clients.Kube},
		Resources: col, Log: log}, recorded)
	if b == nil || recorded != nil && runErr != nil {
		// A refused resume leaves the recorded run as it was (no summary or end time rewritten).
		return res, runErr
	}
	if recorded != nil {
		// This invocation's span starts now (as in meshbench run --resume): its "took" sums the active spans.
		meta = results.StartInvocation(meta, recorded.Cases, time.Now().UTC())
		if err := store.UpdateMeta(meta); err != nil {
			return res, err
		}
	}
	if runErr == nil {
		// One runner for both verbs: the bench's cases take the case loop, recording, interruption and finalizer
		// (namespace deletion, also after Ctrl-C; --retain keeps it) of meshbench run.
		out, runErr = RunCNICases(ctx, CNICases{Bench: b, RunID: meta.RunID, Store: store, Done: done, Measured: true, Guard: col.Guard(), Retain: cfg.Retain,
			FinalizeTimeout: cfg.FinalizeTimeout, Log: log, Progress: d.Progress})
	}
	meta.Cluster.CNI = b.Facts().CNI
	if ni := b.NetworkImage(); ni != nil {
		if meta.NetworkImage != nil {
			ni.Ref = meta.NetworkImage.Ref // a resumed run deployed the recorded digest: the configured reference stays
		}
		meta.NetworkImage = ni
	}
	// A resumed run's run.json already holds the notes of the sessions before: each note once.
	for _, n := range b.Notes() {
		if !slices.Contains(meta.Notes, n) {
			meta.Notes = append(meta.Notes, n)
		}
	}
	sum, _, err := Finish(store, meta, EndingOf(ctx, out, runErr), log)
	if err != nil {
		runErr = errors.Join(runErr, err)
	}
	res.Report = b.Report(sum)
	return res, runErr
}

package orchestrate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/meshbench/meshbench/cni"
	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/mesh"
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
	// Keep keeps the test namespace and pods after the run.
	Keep          bool
	ReadyTimeout  time.Duration
	DeleteTimeout time.Duration
}

// CNIResult is what a network benchmark wrote: its directory and cni's report.
type CNIResult struct {
	RunID  string
	Dir    string
	Report *cni.Report
}

// CNI runs the pod-network benchmark. The collector is built (and the kubelet sampler calibrated) before the run
// directory is created; the returned error wraps *cni.CasesFailedError when some cases failed.
func CNI(ctx context.Context, cfg CNIConfig, d Deps) (CNIResult, error) {
	s, log, clients := cfg.Scenario, d.Log, d.Clients
	if err := checkResumeDir(cfg.ResumeDir, results.CommandCNI); err != nil {
		return CNIResult{}, err
	}
	// Kubelet fallback: sample at most every 5 s (cAdvisor's own stamps are ~10 s apart) so short tests get data.
	s.Spec.Prometheus.KubeletSampleInterval.Duration = min(s.Spec.Prometheus.KubeletSampleInterval.Duration, 5*time.Second)
	col, err := newCollector(ctx, clients, s, log)
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
	// The run ID is also the namespace name (mb-<run id>): lower-case, digits and '-', short.
	sess, err := openSession(openOptions{command: results.CommandCNI, resumeDir: cfg.ResumeDir, outputDir: s.Spec.Output.Dir,
		prefix: "cni", log: log, newMeta: func() (results.RunMeta, error) { return newCNIMeta(ctx, d, s, ist, col) }})
	if err != nil {
		return CNIResult{}, err
	}
	defer sess.close()
	runID := sess.runID()
	res := CNIResult{RunID: runID, Dir: sess.dir()}
	nc := cni.Config{
		RunID: runID, Namespace: "mb-" + runID, CNI: s.Spec.CNI, RunDir: sess.dir(), Keep: cfg.Keep,
		Images:       cni.Images{Network: s.Spec.Images.Network, Agent: s.Spec.Images.Agent, PullPolicy: s.Spec.Images.PullPolicy},
		ReadyTimeout: cfg.ReadyTimeout, DeleteTimeout: cfg.DeleteTimeout, RateRange: col.lead,
	}
	if ni := sess.meta.NetworkImage; sess.resumed() && ni != nil && ni.Pinned != "" {
		// A --resume runs the digest the recorded run's pods ran, whatever the tag points at now.
		nc.Images.Network = ni.Pinned
	}
	var out runner.Outcome
	b, done, runErr := NewCNIBench(ctx, nc, cni.Deps{Kube: clients.Kube, Exec: kube.PodExecer{Config: clients.Config, Kube: clients.Kube},
		Resources: col, Log: log}, sess.recorded)
	if b == nil || sess.resumed() && runErr != nil {
		// A refused resume leaves the recorded run as it was (no summary or end time rewritten).
		return res, runErr
	}
	if err := sess.begin(fmt.Sprintf("%d cases", len(b.Cases()))); err != nil {
		return res, err
	}
	if runErr == nil {
		// One runner for both verbs: the bench's cases take the case loop, recording, interruption and finalizer
		// (namespace deletion, also after Ctrl-C; --keep keeps it) of meshbench run.
		out, runErr = RunCNICases(ctx, CNICases{Bench: b, RunID: runID, Store: sess.store, Done: done, Measured: true, Guard: col.Guard(), Keep: cfg.Keep,
			DeleteTimeout: cfg.DeleteTimeout, Log: log, Progress: d.Progress})
	}
	sess.meta.Cluster.CNI = b.Facts().CNI
	if ni := b.NetworkImage(); ni != nil {
		if sess.meta.NetworkImage != nil {
			ni.Ref = sess.meta.NetworkImage.Ref // a resumed run deployed the recorded digest: the configured reference stays
		}
		sess.meta.NetworkImage = ni
	}
	sess.addNotes(b.Notes()...)
	sum, _, err := sess.finish(ctx, out, runErr)
	if err != nil {
		runErr = errors.Join(runErr, err)
	}
	res.Report = b.Report(sum)
	return res, runErr
}

// newCNIMeta is run.json of a new cni run before its ID is drawn: it records the same plan type `meshbench plan`
// prints (its pod network part, case IDs <path>/<test>) and the cluster's and collector's facts.
func newCNIMeta(ctx context.Context, d Deps, s *scenario.Scenario, ist mesh.IstioInfo, col *Collector) (results.RunMeta, error) {
	plan := scenario.NewPlan(s)
	meta, err := newMeta(results.CommandCNI, s, scenario.Plan{Scenario: plan.Scenario, CNI: plan.CNI})
	if err != nil {
		return meta, err
	}
	meta.Cluster, meta.Prometheus = ClusterFacts(ctx, d.Clients, s, d.KubeVersion, ist, d.Log), col.Facts
	meta.Notes = append(meta.Notes, col.Notes...)
	return meta, nil
}

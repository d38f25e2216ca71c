package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/meshbench/meshbench/collectors/prom"
	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/internal/version"
	"github.com/meshbench/meshbench/mesh"
	"github.com/meshbench/meshbench/netbench"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

type cniFlags struct {
	file          string
	outputDir     string
	keep          bool
	readyTimeout  time.Duration
	deleteTimeout time.Duration
	imageRegistry string
	skipImages    bool
}

// NewCNICommand benchmarks the pod network underneath the mesh.
func NewCNICommand(streams Streams, g *GlobalFlags) *cobra.Command {
	f := &cniFlags{}
	cmd := &cobra.Command{
		Use:   "cni -f SCENARIO",
		Short: "Benchmark the pod network: same node, cross node, ClusterIP, host baseline (iperf3 TCP/UDP, TCP_RR, TCP_CRR)",
		Long: `Measure the pod network underneath the mesh, as study B and the CNI benchmarks did, with every cell either a
mean with its 95% confidence interval or the reason it is empty. Paths: same-node (client and server on node A),
cross-node (server on node B), service (a ClusterIP Service whose only backend is on node B; each iperf3 sample
proves it went through the Service), host (hostNetwork client on A to hostNetwork server on B: the baseline).
Tests: iperf3 TCP (goodput, retransmits, RTT), iperf3 UDP at spec.cni.udpBitrate (delivered rate, loss, jitter),
TCP_RR and TCP_CRR (netperf when the network image has it, else the built-in fortio tool of the agent image).

Everything runs in one namespace, deleted at the end (also on failure and Ctrl-C) unless --keep. Raw tool output is
kept in RUN_DIR/raw/, samples in RUN_DIR/samples.jsonl. The scenario needs a spec.cni section; a bad config exits 2
before the cluster is touched, and so does an image its registry does not have or refuses (the agent and network
images are resolved first; --skip-image-check). Exit 1 when a case failed (the table says why).`,
		Example: `  meshbench cni -f examples/study-b-network.yaml
  meshbench cni -f examples/study-b-network.yaml -o json --output-dir runs`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runCNI(cmd.Context(), streams, g, f) },
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.file, "file", "f", "", "scenario file (YAML) with a spec.cni section")
	fl.StringVar(&f.outputDir, "output-dir", "", "directory receiving the run directory (default spec.output.dir)")
	fl.BoolVar(&f.keep, "keep", false, "keep the test namespace and pods after the run (delete it yourself)")
	fl.DurationVar(&f.readyTimeout, "ready-timeout", 3*time.Minute, "how long the test pods may take to become ready")
	fl.DurationVar(&f.deleteTimeout, "delete-timeout", 3*time.Minute, "bound on deleting the test namespace (also after Ctrl-C)")
	addImageRegistryFlag(fl, &f.imageRegistry)
	addSkipImageCheckFlag(fl, &f.skipImages)
	return cmd
}

func runCNI(ctx context.Context, streams Streams, g *GlobalFlags, f *cniFlags) error {
	if err := g.checkOutput("table", "json", "yaml", "csv"); err != nil {
		return err
	}
	if f.file == "" {
		return badInput(errors.New("give the scenario with -f/--file (it needs a spec.cni section)"))
	}
	s, err := loadScenario(f.file, f.imageRegistry)
	if err != nil {
		return err
	}
	if !s.Spec.CNI.Configured() {
		return badInput(fmt.Errorf("%s: no spec.cni section: meshbench cni needs at least spec.cni.tests or spec.cni.paths", f.file))
	}
	if f.outputDir != "" {
		s.Spec.Output.Dir = f.outputDir
	}
	log := g.Logger(streams.ErrOut)
	clients, err := kube.NewClients(g.Kubeconfig, g.Context)
	if err != nil {
		return badInput(err)
	}
	if err := checkRunImages(ctx, g, streams, clients, s, false, true, f.skipImages); err != nil {
		return err
	}
	store, meta, err := createCNIRun(s)
	if err != nil {
		return err
	}
	defer func() { _ = store.Close() }()
	// Kubelet fallback: sample at most every 5 s (cAdvisor's own stamps are ~10 s apart) so short tests get data.
	s.Spec.Prometheus.KubeletSampleInterval.Duration = min(s.Spec.Prometheus.KubeletSampleInterval.Duration, 5*time.Second)
	col, promFacts, notes, stop, err := newCollector(ctx, clients, s, log)
	if err != nil {
		return err
	}
	defer stop()
	// The CNI baseline needs no control plane: Istio is detected for the record only (an undecidable revision is
	// just not recorded).
	ist, err := mesh.Detect(ctx, clients, s.Spec.Istio.Revision)
	if err != nil {
		log.Warn("detect istio", "err", err)
	}
	meta.Cluster, meta.Prometheus, meta.Notes = clusterFacts(ctx, clients, s, ist, log), promFacts, append(meta.Notes, notes...)
	if err := store.UpdateMeta(meta); err != nil {
		return err
	}
	cfg := netbench.Config{
		RunID: meta.RunID, Namespace: "mb-" + meta.RunID, CNI: s.Spec.CNI, RunDir: store.Dir(), Keep: f.keep,
		Images:       netbench.Images{Network: s.Spec.Images.Network, Agent: s.Spec.Images.Agent, PullPolicy: s.Spec.Images.PullPolicy},
		ReadyTimeout: f.readyTimeout, DeleteTimeout: f.deleteTimeout, RateRange: col.lead,
	}
	deps := netbench.Deps{Kube: clients.Kube, Exec: kube.PodExecer{Config: clients.Config, Kube: clients.Kube},
		Resources: collectFunc(col.collect), Store: store, Log: log}
	rep, runErr := netbench.Run(ctx, cfg, deps)
	meta.Cluster.CNI = rep.Facts.CNI
	meta.Notes = append(meta.Notes, rep.Notes...)
	if _, _, err := finish(store, meta, log); err != nil {
		runErr = errors.Join(runErr, err)
	}
	if err := printCNIReport(streams, g.Output, rep); err != nil {
		return errors.Join(runErr, err)
	}
	var cf *netbench.CasesFailedError
	if errors.As(runErr, &cf) {
		return &ExitError{Code: ExitRunFailed, Err: fmt.Errorf("%w; results in %s", runErr, store.Dir())}
	}
	return runErr
}

// createCNIRun creates the run directory with run.json (command cni, the scenario echo and the planned cases).
func createCNIRun(s *scenario.Scenario) (*results.Store, results.RunMeta, error) {
	start := time.Now().UTC()
	v := version.Get()
	suffix := make([]byte, 2)
	_, _ = rand.Read(suffix)
	meta := results.RunMeta{
		// Also the namespace name (mb-<run id>): lower-case, digits and '-', short.
		RunID: "cni-" + start.Format("20060102-150405") + "-" + hex.EncodeToString(suffix), Command: "cni", Start: start,
		Tool: results.ToolInfo{Version: v.Version, Commit: v.Commit, GoVersion: v.GoVersion, BuildDate: v.BuildDate},
	}
	var err error
	if meta.Scenario, err = json.Marshal(s); err != nil {
		return nil, meta, fmt.Errorf("encode scenario: %w", err)
	}
	if meta.Plan, err = json.Marshal(netbench.PlannedCases(s.Spec.CNI)); err != nil {
		return nil, meta, fmt.Errorf("encode plan: %w", err)
	}
	store, err := results.Create(filepath.Join(s.Spec.Output.Dir, meta.RunID), meta)
	if errors.Is(err, fs.ErrExist) {
		return nil, meta, badInput(err)
	}
	return store, meta, err
}

// collectFunc adapts the collector's function to netbench.ResourceCollector.
type collectFunc func(ctx context.Context, w results.Window, sets []prom.PodSet) (prom.Collected, error)

func (f collectFunc) Collect(ctx context.Context, w results.Window, sets []prom.PodSet) (prom.Collected, error) {
	return f(ctx, w, sets)
}

func printCNIReport(streams Streams, format string, rep *netbench.Report) error {
	if format == "csv" {
		out, err := rep.CSV()
		if err != nil {
			return err
		}
		_, err = fmt.Fprint(streams.Out, out)
		return err
	}
	return printValue(streams.Out, format, rep, rep.Table)
}

package results

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// SchemaVersion is written into run.json and summary.json; readers refuse majors they do not know.
const SchemaVersion = "meshbench.dev/results/v1"

// Window kinds: what the cluster was doing while a window was measured.
const (
	WindowIdle = "idle" // workloads deployed, no traffic
	WindowLoad = "load" // steady-state part of a load run (after warm-up and trims)
	WindowTest = "test" // one network test sample (iperf3, RR, CRR)
)

// benchmarkComponents are the benchmark's own pods and proxies: what meshbench runs to measure, never the cost of
// the app or of its mesh.
var benchmarkComponents = []Component{ComponentLoadgen, ComponentLoadgenProxy, ComponentCNITest}

// IsBenchmarkComponent reports whether component is the benchmark's own (the load clients, their proxies, the pod
// network test pods): reports keep it apart from the app's and the mesh's cost.
func IsBenchmarkComponent(component Component) bool {
	return slices.Contains(benchmarkComponents, component)
}

// LabelLoadTarget names the load target of a loadgen sample when a run has several: such samples are one target's
// part of the unlabelled sample of the same metric, so sums over a case's loadgen samples skip them.
const LabelLoadTarget = "target"

// IsLoadTargetPart reports whether labels mark one load target's part (see LabelLoadTarget).
func IsLoadTargetPart(labels map[string]string) bool { return labels[LabelLoadTarget] != "" }

// The commands whose runs a run directory holds (RunMeta.Command): meshbench run (the mesh benchmark; "" in run.json
// files older than the field) and meshbench cni (the pod network benchmark).
const (
	CommandRun = "run"
	CommandCNI = "cni"
)

// IsCNI reports whether m is the run.json of a meshbench cni run.
func (m RunMeta) IsCNI() bool { return m.Command == CommandCNI }

// RunMeta is run.json.
type RunMeta struct {
	SchemaVersion string          `json:"schemaVersion"`
	RunID         string          `json:"runID"`
	Command       string          `json:"command"` // CommandRun | CommandCNI
	Tool          ToolInfo        `json:"tool"`
	Start         time.Time       `json:"start"`
	End           *time.Time      `json:"end,omitempty"` // nil while running or after a crash
	Cluster       ClusterFacts    `json:"cluster"`
	Prometheus    *PromFacts      `json:"prometheus,omitempty"`
	Scenario      json.RawMessage `json:"scenario,omitempty"` // the config as loaded, defaults applied
	Plan          json.RawMessage `json:"plan,omitempty"`     // the expanded plan
	Notes         []string        `json:"notes,omitempty"`    // honest caveats shown in every report (e.g. stand-in data plane)
	// Invocations are the meshbench processes that worked on the run, in order: the first, then one per --resume.
	// The run's active time (Took) is the sum of their spans, not Start..End, which would count the time between an
	// interruption and its --resume. Absent in runs recorded before them.
	Invocations []Invocation `json:"invocations,omitempty"`
	// Interrupted marks a run whose latest invocation was stopped (a signal) before every planned case was
	// recorded; nil when its plan completed (a --resume that completes clears it).
	Interrupted *Interruption `json:"interrupted,omitempty"`
	// Insecure names the clients whose TLS verification the user turned off (e.g. "prometheus" for
	// spec.prometheus.insecureSkipVerify): verification is on by default everywhere, so a figure read over an
	// unverified connection says so in its run.
	Insecure []string `json:"insecure,omitempty"`
	// NetworkImage is what a cni run's network image (spec.images.network) was: the digest its pods ran and the
	// tools' versions. nil for mesh runs and runs recorded before it.
	NetworkImage *NetworkImage `json:"networkImage,omitempty"`
}

// NetworkImage is the image of a cni run's iperf3 and netperf pods. A tag such as the default's :latest moves: the
// first test pod's node resolves it, and every later pod of the run (and of its --resume) runs that digest.
type NetworkImage struct {
	// Ref is spec.images.network as configured.
	Ref string `json:"ref"`
	// ImageID is the first test pod's status.containerStatuses[].imageID for the tools' container: what its node
	// ran, as the container runtime names it (containerd: <repository>@sha256:<digest>).
	ImageID string `json:"imageID,omitempty"`
	// Digest is the registry digest in ImageID ("" when the runtime reported only a local image ID); Pinned is Ref's
	// repository at Digest, the reference every later pod ran ("" when Digest is unknown: they ran Ref).
	Digest string `json:"digest,omitempty"`
	Pinned string `json:"pinned,omitempty"`
	// Iperf3 and Netperf are the versions the image's tools report (`iperf3 --version`, `netperf -V`): "3.16",
	// "2.7.1"; "" when a tool is absent or did not answer.
	Iperf3  string `json:"iperf3,omitempty"`
	Netperf string `json:"netperf,omitempty"`
}

// Invocation outcomes.
const (
	OutcomeCompleted   = "completed"   // every planned case recorded (some may have failed)
	OutcomeInterrupted = "interrupted" // stopped by a signal (or a cancelled context) before the plan's end
	OutcomeError       = "error"       // stopped by an error that is not a case's (recording, finalizers)
	// OutcomeCrashed is an invocation that ended without writing its end (kill -9, a power cut), found by the next
	// --resume: its end is then its last case record.
	OutcomeCrashed = "crashed"
	// OutcomeUnrecorded is the first invocation of a run recorded before invocations existed, rebuilt by a --resume
	// from start and end: older meshbench wrote end after Ctrl-C too, so how it ended is unknown.
	OutcomeUnrecorded = "unrecorded"
)

// Invocation is one meshbench process's span of work on a run.
type Invocation struct {
	Start time.Time  `json:"start"`
	End   *time.Time `json:"end,omitempty"` // nil while it runs
	// Outcome is one of the Outcome* constants ("" while it runs).
	Outcome string `json:"outcome,omitempty"`
	// Signal names the signal that interrupted it (SIGINT, SIGTERM), if one did.
	Signal string `json:"signal,omitempty"`
}

// Interruption is where an interrupted run stopped.
type Interruption struct {
	// Signal is SIGINT or SIGTERM; "" when the run was cancelled otherwise.
	Signal string    `json:"signal,omitempty"`
	At     time.Time `json:"at"`
	// Case is the case that was running or about to start; Phase the runner step it was in (ensure, mode-switch,
	// wait-ready, verify, load-clients, settle, idle, load, collect-idle, collect-load), "" between cases.
	Case  string `json:"case,omitempty"`
	Phase string `json:"phase,omitempty"`
	// Completed of Planned cases are recorded (ok, failed or skipped; earlier invocations' included).
	Completed int `json:"completed"`
	Planned   int `json:"planned"`
	// NotRun are the planned cases without a record, in plan order: what --resume would run.
	NotRun []string `json:"notRun,omitempty"`
}

// InsecurePrometheus is RunMeta.Insecure's name for spec.prometheus.insecureSkipVerify.
const InsecurePrometheus = "prometheus"

// ToolInfo identifies the meshbench build that produced a run.
type ToolInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	GoVersion string `json:"goVersion"`
	BuildDate string `json:"buildDate"`
}

// ClusterFacts describes the cluster under test.
type ClusterFacts struct {
	KubernetesVersion string      `json:"kubernetesVersion,omitempty"`
	Profile           string      `json:"profile,omitempty"` // scenario profile, e.g. localcluster
	CNI               string      `json:"cni,omitempty"`     // detected CNI, or "" when unknown
	Nodes             []NodeFacts `json:"nodes,omitempty"`
	Istio             *IstioFacts `json:"istio,omitempty"`
	// ClusterDomain is the DNS domain of the app's fully qualified service names (scenario or kubelet clusterDomain).
	ClusterDomain string `json:"clusterDomain,omitempty"`
}

// NodeFacts describes one node.
type NodeFacts struct {
	Name             string `json:"name"`
	KubeletVersion   string `json:"kubeletVersion,omitempty"`
	KernelVersion    string `json:"kernelVersion,omitempty"`
	OSImage          string `json:"osImage,omitempty"`
	ContainerRuntime string `json:"containerRuntime,omitempty"`
	CPU              string `json:"cpu,omitempty"`    // allocatable, Kubernetes quantity
	Memory           string `json:"memory,omitempty"` // allocatable, Kubernetes quantity
	InternalIP       string `json:"internalIP,omitempty"`
	// MachineID and BootID are status.nodeInfo.machineID and .bootID (kubernetes/kubernetes
	// staging/src/k8s.io/api/core/v1/types.go, NodeSystemInfo, k8s.io/api v0.37.2): nodes with both equal run on one
	// host (HostGroups), whose whole-node figures must be counted once. Absent in runs recorded before them.
	MachineID string `json:"machineID,omitempty"`
	BootID    string `json:"bootID,omitempty"`
}

// DataPlaneKind is what ran a data-plane component of a run.
type DataPlaneKind string

// The data-plane kinds, from the most to the least representative of Istio's own cost.
const (
	// DataPlaneIstio is Istio's own proxies as released (istio-proxy, ztunnel): a user's cluster.
	DataPlaneIstio DataPlaneKind = "istio"
	// DataPlaneUpstreamEnvoy is upstream Envoy under Istio's real pilot-agent, with Istio's own filters (telemetry,
	// metadata exchange, ALPN) off because a standard Envoy build does not have them: the local test bed's sidecar.
	// Its figures are a lower bound of istio-proxy's.
	DataPlaneUpstreamEnvoy DataPlaneKind = "upstream envoy"
	// DataPlaneStandIn is a hack/ test double: its figures are not any proxy's.
	DataPlaneStandIn DataPlaneKind = "test stand-in"
)

// Representative reports whether figures of this kind may be read as Istio's own cost (only DataPlaneIstio).
func (k DataPlaneKind) Representative() bool { return k == DataPlaneIstio }

// rank orders kinds from the most representative (0) to the least.
func (k DataPlaneKind) rank() int {
	switch k {
	case DataPlaneIstio:
		return 0
	case DataPlaneUpstreamEnvoy:
		return 1
	default:
		return 2
	}
}

// ComponentDataPlane says what ran one data-plane component (ComponentSidecar, ComponentZtunnel,
// ComponentWaypoint) in a run.
type ComponentDataPlane struct {
	Component Component     `json:"component"`
	Kind      DataPlaneKind `json:"kind"`
	// Description names it for a reader, e.g. "upstream Envoy 1.40.0 (pilot-agent 1.31-dev; Istio telemetry
	// filters off)", "test stand-in (hack/localistio/cmd/hbone-node: the Go HBONE node proxy, not ztunnel)".
	Description string `json:"description,omitempty"`
}

// LeastRepresentative is the kind of the least representative component (DataPlaneIstio for none): the run's
// overall data-plane kind.
func LeastRepresentative(cs []ComponentDataPlane) DataPlaneKind {
	out := DataPlaneIstio
	for _, c := range cs {
		if c.Kind.rank() > out.rank() {
			out = c.Kind
		}
	}
	return out
}

// DataPlaneOf is the entry of component in cs; ok is false when cs says nothing of it.
func DataPlaneOf(cs []ComponentDataPlane, component Component) (ComponentDataPlane, bool) {
	for _, c := range cs {
		if c.Component == component {
			return c, true
		}
	}
	return ComponentDataPlane{}, false
}

// IstioFacts describes the Istio installation a run measured.
type IstioFacts struct {
	Version  string `json:"version,omitempty"`
	Revision string `json:"revision,omitempty"`
	// RevisionSource says how the revision was chosen (spec.istio.revision, the only control plane, the default
	// injector); Revisions are every istiod revision installed.
	RevisionSource string   `json:"revisionSource,omitempty"`
	Revisions      []string `json:"revisions,omitempty"`
	Profile        string   `json:"profile,omitempty"`
	AmbientCapable bool     `json:"ambientCapable"`
	NativeSidecars *bool    `json:"nativeSidecars,omitempty"`
	ZtunnelImage   string   `json:"ztunnelImage,omitempty"`
	ProxyImage     string   `json:"proxyImage,omitempty"`
	// DataPlane is the least representative kind of DataPlanes (a run with one stand-in component is a stand-in
	// run as a whole); DataPlanes says it per component.
	DataPlane               DataPlaneKind        `json:"dataPlane,omitempty"`
	DataPlanes              []ComponentDataPlane `json:"dataPlanes,omitempty"`
	GatewayAPIBundleVersion string               `json:"gatewayAPIBundleVersion,omitempty"`
	// RootNamespace holds mesh-wide policies (mesh config rootNamespace).
	RootNamespace string `json:"rootNamespace,omitempty"`
	// MTLS is the mesh-wide PeerAuthentication mode in RootNamespace ("PERMISSIVE (no mesh-wide PeerAuthentication)"
	// when none exists); the effective mode of the app's namespaces is a case fact ("mtls").
	MTLS string `json:"mtls,omitempty"`
}

// PromFacts records how resource samples were obtained.
type PromFacts struct {
	URL    string `json:"url,omitempty"`
	Source string `json:"source"` // prometheus | kubelet-resource (fallback)
	// ScrapeInterval is how often the cAdvisor data is read: the scrape interval of Prometheus' cAdvisor job (the
	// kubelet fallback: its sampling interval).
	ScrapeInterval time.Duration `json:"scrapeInterval"`
	// SampleSpacing is the measured median time between cAdvisor's own sample timestamps (0 = not measured); it is
	// wider than the scrape interval when cAdvisor's housekeeping is slower than the scrape.
	SampleSpacing time.Duration `json:"sampleSpacing,omitempty"`
	// Step is the resolution the figures use (the wider of the two, whole seconds); RateRange is the range of the
	// CPU rate points of min/max (4 steps).
	Step      time.Duration `json:"step,omitempty"`
	RateRange time.Duration `json:"rateRange"`
	// Guard is how far every window kept from a phase change (a load's start or stop), and how far beyond a
	// window's edges its samples were read as its own: two median sample spacings (0 = runs before it existed).
	Guard time.Duration `json:"guard,omitempty"`
}

// Window is a measured interval. Start and End are exact wall-clock times (UTC).
type Window struct {
	Kind  string    `json:"kind"` // WindowIdle | WindowLoad | WindowTest
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

// Duration is the window's length.
func (w Window) Duration() time.Duration { return w.End.Sub(w.Start) }

// Sample is one flat measurement, one line of samples.jsonl.
type Sample struct {
	RunID      string            `json:"runID"`
	CaseID     string            `json:"caseID"`
	Mode       Mode              `json:"mode,omitempty"`     // Modes ("" for cni)
	Variant    string            `json:"variant,omitempty"`  // the case's variant (scenario spec.variants); "" for the plain mode
	Topology   string            `json:"topology,omitempty"` // topology name from the plan
	Load       string            `json:"load,omitempty"`     // requested QPS level: "1000", "max"; "" for idle-only
	Repetition int               `json:"repetition"`
	Window     Window            `json:"window"`
	Source     string            `json:"source"` // prometheus | kubelet-resource | fortio | iperf3 | netperf | builtin
	Component  Component         `json:"component"`
	Metric     Metric            `json:"metric"`
	Stat       Stat              `json:"stat"`
	Value      float64           `json:"value"`
	Unit       Unit              `json:"unit"`
	Labels     map[string]string `json:"labels,omitempty"`
	// Attempt is set by Store.AppendCase: 1 for the first run of a case, 2 for its first re-run after --resume, ...
	// Read keeps only the samples of each case's latest recorded attempt.
	Attempt int `json:"attempt,omitempty"`
}

// CaseResult is one line of cases.jsonl: what happened to a planned case.
type CaseResult struct {
	RunID      string             `json:"runID"`
	CaseID     string             `json:"caseID"`
	Mode       Mode               `json:"mode,omitempty"`
	Variant    string             `json:"variant,omitempty"` // see Sample.Variant
	Topology   string             `json:"topology,omitempty"`
	Load       string             `json:"load,omitempty"`
	Repetition int                `json:"repetition"`
	Status     Status             `json:"status"`
	Reason     string             `json:"reason,omitempty"` // why it failed or was skipped, with the fix when known
	Start      time.Time          `json:"start"`
	End        time.Time          `json:"end"`
	Windows    []Window           `json:"windows,omitempty"`
	Timings    map[string]string  `json:"timings,omitempty"` // step -> duration string, e.g. "mode-switch": "2.7s"
	Facts      map[FactKey]string `json:"facts,omitempty"`   // per-case facts: placement, MTU, replicas, waypoints
	Attempt    int                `json:"attempt,omitempty"` // set by Store.AppendCase; see Sample.Attempt
	// APIRequests are the Kubernetes API requests meshbench sent during the case (client side, every client of the
	// run: deploy, mode switch, readiness waits, load-client placement, collection).
	APIRequests *APIRequests `json:"apiRequests,omitempty"`
	// Partial, on an ok case, is why some of its samples failed although the case counts (cases.jsonl: the reason,
	// after CNIPartialPrefix; see caseresult.go).
	Partial string `json:"-"`
	// CollectorWarnings are what the resource collector warned of; SampleWarnings the warnings of a pod network
	// case's samples (cases.jsonl: facts collector-warnings and warnings, "; "-joined).
	CollectorWarnings []string `json:"-"`
	SampleWarnings    []string `json:"-"`
	// LoadShortfall, when set, says the load achieved less than it asked for by more than LoadShortfallPct: the case
	// measured a saturated system, not the asked load.
	LoadShortfall *LoadShortfall `json:"loadShortfall,omitempty"`
	// PodStartups are the app pods that started during the case's switch (deploy, a sidecar switch's restart, or
	// startup.restart), each from creation to Ready; the first case of a mode carries them (startup.go).
	PodStartups []PodStartup `json:"podStartups,omitempty"`
	// Transition is a transition case's move and the load's per-second record around it.
	Transition *Transition `json:"transition,omitempty"`
	// Enforcement is an enforce case's policy changes and the per-second records of its load's two slices.
	Enforcement *Enforcement `json:"enforcement,omitempty"`
}

// LoadShortfallPct is how far below the requested rate (in percent) the achieved rate may be before a case says so.
const LoadShortfallPct = 1.0

// LoadShortfall is a load's requested and achieved rates, in requests per second.
type LoadShortfall struct {
	RequestedQPS float64 `json:"requestedQPS"`
	AchievedQPS  float64 `json:"achievedQPS"`
}

// ShortOf is the shortfall of achieving achieved requests per second for requested, or nil: the load asked for no
// rate (max speed, requested <= 0) or achieved it within LoadShortfallPct. It is pure.
func ShortOf(requested, achieved float64) *LoadShortfall {
	if requested <= 0 || achieved >= requested*(1-LoadShortfallPct/100) {
		return nil
	}
	return &LoadShortfall{RequestedQPS: requested, AchievedQPS: achieved}
}

// Pct is how far below the requested rate the achieved one was, in percent.
func (s LoadShortfall) Pct() float64 { return 100 * (1 - s.AchievedQPS/s.RequestedQPS) }

// APIRequests counts API requests: all of them and per "verb resource" (e.g. "list pods", "patch deployments.apps",
// "create pods/exec"; kube.VerbResource).
type APIRequests struct {
	Total          int64            `json:"total"`
	ByVerbResource map[string]int64 `json:"byVerbResource,omitempty"`
}

// DataPlaneComponentsOfMode are the data-plane components a mode runs (none and unknown modes: none).
func DataPlaneComponentsOfMode(mode Mode) []Component {
	switch mode {
	case ModeSidecar:
		return []Component{ComponentSidecar}
	case ModeAmbient:
		return []Component{ComponentZtunnel}
	case ModeWaypoint:
		return []Component{ComponentZtunnel, ComponentWaypoint}
	}
	return nil
}

// SummaryDataPlaneNotes are DataPlaneNotes for the components of modes, from a summary (or run.json's facts):
// the caveats a figure of those modes carries wherever it is shown. A summary recorded before per-component facts
// with the stand-in data plane gets the one sentence those runs carried.
func SummaryDataPlaneNotes(kind DataPlaneKind, dps []ComponentDataPlane, modes []Mode) []string {
	if len(dps) == 0 {
		if kind == DataPlaneStandIn {
			return []string{"data plane: test stand-in, figures are not Istio's"}
		}
		return nil
	}
	var comps []Component
	for _, m := range modes {
		comps = append(comps, DataPlaneComponentsOfMode(m)...)
	}
	return DataPlaneNotes(dps, comps)
}

// DataPlaneNotes are the caveats of a run's data plane, one per component of components that is not Istio's own
// (in the order of dps): what ran it and what its figures are. A run of Istio's own proxies has none. It is pure.
func DataPlaneNotes(dps []ComponentDataPlane, components []Component) []string {
	var out []string
	for _, c := range dps {
		if c.Kind.Representative() || !slices.Contains(components, c.Component) {
			continue
		}
		desc := c.Description
		if desc == "" {
			desc = string(c.Kind)
		}
		switch c.Kind {
		case DataPlaneUpstreamEnvoy:
			out = append(out, fmt.Sprintf("data plane: %s is %s: a lower bound of Istio's own %s cost, not Istio's figure", c.Component, desc, c.Component))
		default:
			out = append(out, fmt.Sprintf("data plane: %s is a %s: its figures are not %s's", c.Component, desc, c.Component))
		}
	}
	return out
}

package scenario

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// APIVersion and Kind identify a meshbench scenario file.
const (
	APIVersion = "meshbench.dev/v1alpha1"
	Kind       = "Scenario"
)

// Scenario is the whole configuration of a benchmark.
type Scenario struct {
	// APIVersion must be "meshbench.dev/v1alpha1".
	APIVersion string `json:"apiVersion"`
	// Kind must be "Scenario".
	Kind string `json:"kind"`
	// Metadata names the scenario.
	Metadata Metadata `json:"metadata"`
	// Spec is what to deploy, compare, load and measure.
	Spec Spec `json:"spec"`
}

// Metadata names the scenario.
type Metadata struct {
	// Name is used in run IDs and reports: lower-case letters, digits and '-'.
	Name string `json:"name"`
	// Description is free text shown in reports.
	Description string `json:"description,omitempty" mb:"max=4096"`
}

// Spec is what to deploy, which modes to compare, how to load and measure.
type Spec struct {
	// Profile selects defaults: "default" (public images, real clusters) or "localcluster" (the images the
	// project's local cluster harness builds, small resource requests).
	Profile Profile `json:"profile,omitempty" mb:"defaulted"`
	// Workload is the demo app and where it runs.
	Workload Workload `json:"workload"`
	// Modes are the data-plane modes to compare, in the order given (the first is the baseline for deltas
	// unless "none" is present).
	Modes []Mode `json:"modes,omitempty" mb:"defaulted"`
	// Waypoint configures the L7 waypoint used by mode "waypoint".
	Waypoint Waypoint `json:"waypoint,omitzero"`
	// Istio says which installed control plane serves the app.
	Istio Istio `json:"istio,omitzero"`
	// Load is how the fortio clients drive the app.
	Load LoadSpec `json:"load,omitzero"`
	// Windows are the measurement windows, repetitions and ordering.
	Windows Windows `json:"windows,omitzero"`
	// Variants are mesh features measured on top of modes (mTLS, authorization rules, access logging), each
	// compared with its plain mode.
	Variants []Variant `json:"variants,omitempty"`
	// Transitions measures moves between modes under load.
	Transitions Transitions `json:"transitions,omitzero"`
	// Enforcement measures how long a deny policy takes to be enforced and lifted under load.
	Enforcement Enforcement `json:"enforcement,omitzero"`
	// Startup configures the pod startup measurement.
	Startup Startup `json:"startup,omitzero"`
	// Prometheus is where resource metrics come from; empty means the kubelet fallback.
	Prometheus Prometheus `json:"prometheus,omitzero"`
	// CNI configures `meshbench cni`, the pod network benchmark.
	CNI CNI `json:"cni,omitzero"`
	// Images overrides every container image the tool uses.
	Images Images `json:"images,omitzero"`
	// Output configures where results go.
	Output Output `json:"output,omitzero"`
}

// Startup configures how pod startup is measured per mode (docs/measurement.md, "Pod startup").
type Startup struct {
	// RestartApp rolls every app workload out again after each mode switch, so that each mode's pods start in it
	// and their start is recorded; without it, only the pods a deploy or a sidecar switch starts are.
	RestartApp bool `json:"restartApp,omitempty"`
}

// Profile selects a set of defaults.
type Profile string

// profiles.
const (
	ProfileDefault      Profile = "default"
	ProfileLocalCluster Profile = "localcluster"
)

// profiles lists the valid profiles.
var profiles = []Profile{ProfileDefault, ProfileLocalCluster}

// App is a demo application from the catalog.
type App string

// Apps.
const (
	AppBankOfAnthos App = "bank-of-anthos"
	AppFortioChain  App = "fortio-chain"
	// AppBookinfo is Istio's sample Bookinfo (productpage, details, reviews v1-v3, ratings), the app of the published
	// ambient-vs-sidecar blog benchmarks.
	AppBookinfo App = "bookinfo"
	// AppManifests is the team's own app from its YAML files, directories or a kustomization (workload.manifests).
	AppManifests App = "manifests"
	// AppExisting is an app already deployed in namespaces the user names (workload.existing); never deleted.
	AppExisting App = "existing"
)

// Apps lists the valid apps.
var Apps = []App{AppBankOfAnthos, AppFortioChain, AppBookinfo, AppManifests, AppExisting}

// CatalogApps are the apps whose objects meshbench builds itself.
var CatalogApps = []App{AppBankOfAnthos, AppFortioChain, AppBookinfo}

// UserApp reports whether the app is the user's own (manifests or existing): its load targets come from
// spec.load.targets, and every workload it runs counts as component "app".
func (a App) UserApp() bool { return a == AppManifests || a == AppExisting }

// Workload is the app and its placement.
type Workload struct {
	// App is "bank-of-anthos" (8 services + 2 databases, as in study A), "fortio-chain" (synthetic service graph),
	// "bookinfo", or the team's own: "manifests" or "existing". Required, without a default, for the mesh benchmark
	// (meshbench run): it is what is measured. A scenario for meshbench cni alone leaves workload out.
	App App `json:"app"`
	// Chain shapes the fortio-chain graph; only with app fortio-chain.
	Chain *Chain `json:"chain,omitempty"`
	// Manifests is where the objects of app "manifests" come from; only with that app.
	Manifests *Manifests `json:"manifests,omitempty"`
	// Existing names the namespaces of app "existing"; only with that app.
	Existing *Existing `json:"existing,omitempty"`
	// Topologies to deploy the app in; each is measured with every mode. Default: one "single" topology.
	Topologies []Topology `json:"topologies,omitempty" mb:"defaulted"`
	// Replicas per service (Deployments; databases stay at 1). A topology may override it.
	Replicas int `json:"replicas,omitempty" mb:"defaulted"`
	// NamespacePrefix prefixes every namespace the tool creates for the app. A namespace of that name that another
	// meshbench run created is refused (meshbench cleanup --run <id> removes it once that run is over).
	NamespacePrefix string `json:"namespacePrefix,omitempty" mb:"defaulted"`
	// NodeSelector restricts app and load-client pods to matching nodes.
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// Tolerations let app and load-client pods onto tainted nodes (a dedicated node pool); applied wherever
	// nodeSelector is. Kubernetes' toleration fields: key, operator (Equal or Exists), value, effect, tolerationSeconds.
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	// Resources sets app container requests and limits (e.g. "100m", "64Mi"), field by field over the catalog's values
	// of each container (an empty field keeps them); a request above the limit it meets is refused. Not with apps
	// manifests and existing (their own manifests and deployed workloads keep theirs).
	Resources *Resources `json:"resources,omitempty"`
	// ClusterDomain is the cluster's DNS domain used in the fully qualified service names of multi-namespace
	// topologies (svc.ns.svc.<domain>). Empty: detected from the kubelet's configuration (clusterDomain), else
	// "cluster.local".
	ClusterDomain string `json:"clusterDomain,omitempty"`
}

// Manifests is the user's own app as Kubernetes YAML: namespaced objects whose workloads are Deployments and
// StatefulSets, applied into each topology's namespaces (the kinds refused and what meshbench changes:
// docs/scenario.md).
type Manifests struct {
	// Paths are YAML or JSON files, or directories whose *.yaml, *.yml and *.json files are read (not recursive),
	// relative to the scenario file's directory. Multi-document YAML is read document by document.
	Paths []string `json:"paths,omitempty"`
	// Kustomization is a directory holding a kustomization.yaml, relative to the scenario file's directory, built
	// with sigs.k8s.io/kustomize/api (the library of kubectl kustomize).
	Kustomization string `json:"kustomization,omitempty"`
	// Scale lists the Deployments and StatefulSets ("name" or "Kind/name") that take the topology's replicas
	// (workload.replicas or topologies[].replicas); the others keep the replicas of their manifest.
	Scale []string `json:"scale,omitempty"`
	// Placement puts objects into the namespaces of a multi topology: object name (every kind of that name) or
	// "Kind/name" -> namespace index (0 is the entry namespace). Objects not named go to namespace 0. Only with
	// multi topologies.
	Placement map[string]int `json:"placement,omitempty"`
	// ServiceRefs are the Service names whose references in container env values and args are rewritten to fully
	// qualified names (svc.ns.svc.<domain>) when the Service lands in another namespace than the referring pod, so
	// a multi topology's cross-namespace calls resolve. A reference is the name as a whole host: "backend",
	// "backend:8080", "http://backend/x"; "backend-v2" is not touched.
	ServiceRefs []string `json:"serviceRefs,omitempty"`

	// BaseDir is the directory relative paths are read from: the scenario file's directory (set by Load), else the
	// working directory. Not part of the file.
	BaseDir string `json:"-"`
}

// Resolve is path as read: relative paths are taken from BaseDir.
func (m Manifests) Resolve(path string) string {
	if filepath.IsAbs(path) || m.BaseDir == "" {
		return path
	}
	return filepath.Join(m.BaseDir, path)
}

// Existing is an app already deployed: meshbench changes only its namespaces' mode labels and workloads' restart
// annotations, records each change before making it and restores them (docs/scenario.md). Needs
// --allow-existing-namespaces.
type Existing struct {
	// Namespaces holding the app, the entry namespace first.
	Namespaces []string `json:"namespaces"`
	// Workloads restricts the app to these Deployments and StatefulSets ("name", "Kind/name" or
	// "namespace/Kind/name"); empty: every Deployment and StatefulSet of the namespaces.
	Workloads []string `json:"workloads,omitempty"`
}

// Istio selects the control plane the benchmark uses.
type Istio struct {
	// Revision is the istiod revision that serves the app ("canary", or "default" for a non-revisioned install).
	// Sidecar mode then labels namespaces istio.io/rev=<revision> (istio-injection=enabled only reaches a default
	// injector) and waypoint Gateways carry istio.io/rev=<revision>. Empty: detected; with several control planes
	// and no default the run refuses to guess.
	Revision string `json:"revision,omitempty"`
}

// Chain is the synthetic fortio service graph: a tree of Depth levels where every service calls FanOut children.
// Each field left out takes its default, also in a chain mapping that sets only some of them.
type Chain struct {
	// Depth is the number of hops below the entry service (1 = entry + one level).
	Depth int `json:"depth,omitempty" mb:"defaulted"`
	// FanOut is how many downstream services each non-leaf service calls.
	FanOut int `json:"fanOut,omitempty" mb:"defaulted"`
	// PayloadBytes is the response size the leaves return (at least 1).
	PayloadBytes int `json:"payloadBytes,omitempty" mb:"defaulted"`
	// Serial makes a service call its children one after another instead of in parallel.
	Serial bool `json:"serial,omitempty"`
}

// Services is the number of services in the chain: 1 + f + f^2 + ... + f^depth.
func (c Chain) Services() int {
	n, level := 1, 1
	for i := 0; i < c.Depth; i++ {
		level *= c.FanOut
		n += level
	}
	return n
}

// TopologyKind says how services are spread over namespaces.
type TopologyKind string

// Topology kinds.
const (
	TopologySingle TopologyKind = "single" // every service in one namespace
	TopologyMulti  TopologyKind = "multi"  // services spread over several namespaces
)

// Topology is one placement of the app.
type Topology struct {
	// Name identifies the topology in case IDs; default "single" or "multi<N>".
	Name string `json:"name,omitempty" mb:"defaulted"`
	// Kind is "single" or "multi".
	Kind TopologyKind `json:"kind"`
	// Namespaces is, for multi, the number of namespaces services are spread over round-robin;
	// 0 means one service per namespace (study A's enterprise case).
	Namespaces int `json:"namespaces,omitempty"`
	// Replicas overrides workload.replicas for this topology.
	Replicas int `json:"replicas,omitempty" mb:"defaulted"`
	// ChainDepth overrides workload.chain.depth for this topology (fortio-chain only, 1..6; unset: the
	// workload's depth), so that one run measures several depths and `meshbench project` can fit the latency added
	// per hop. The default name then ends in "-d<depth>" (e.g. "single-d4").
	ChainDepth int `json:"chainDepth,omitempty" mb:"defaulted"`
}

// maxChainDepth is the deepest chain a scenario may ask for (workload.chain.depth and topologies[].chainDepth).
const maxChainDepth = 6

// ChainFor is the chain topology t deploys: workload.chain with t's chainDepth when set; nil without a chain.
func (w Workload) ChainFor(t Topology) *Chain {
	if w.Chain == nil {
		return nil
	}
	c := *w.Chain
	if t.ChainDepth > 0 {
		c.Depth = t.ChainDepth
	}
	return &c
}

// Resources are container resource requests and limits as Kubernetes quantities.
type Resources struct {
	CPURequest    string `json:"cpuRequest,omitempty"`
	MemoryRequest string `json:"memoryRequest,omitempty"`
	CPULimit      string `json:"cpuLimit,omitempty"`
	MemoryLimit   string `json:"memoryLimit,omitempty"`
}

// Mode is an Istio data-plane mode.
type Mode string

// Modes.
const (
	ModeNone     Mode = "none"     // no mesh: the baseline
	ModeSidecar  Mode = "sidecar"  // Envoy sidecar per pod
	ModeAmbient  Mode = "ambient"  // ztunnel per node (L4)
	ModeWaypoint Mode = "waypoint" // ztunnel + waypoint proxies (L4 + L7)
	// ModeMixed is what namespaces in different modes are found in (mesh.Transition.From); never a scenario's.
	ModeMixed Mode = "mixed"
)

// AllModes lists the valid modes in their canonical order.
var AllModes = []Mode{ModeNone, ModeSidecar, ModeAmbient, ModeWaypoint}

// Waypoint configures the ambient L7 proxies.
type Waypoint struct {
	// Scope is "per-namespace" (one waypoint in every app namespace, as in study A) or "shared" (one waypoint
	// for all app namespaces).
	Scope WaypointScope `json:"scope,omitempty" mb:"defaulted"`
	// Name of the waypoint Gateway; default "waypoint".
	Name string `json:"name,omitempty" mb:"defaulted"`
	// For is the istio.io/waypoint-for label: service (default), workload, all.
	For string `json:"for,omitempty" mb:"defaulted"`
}

// WaypointScope says how many waypoints there are.
type WaypointScope string

// Waypoint scopes.
const (
	WaypointPerNamespace WaypointScope = "per-namespace"
	WaypointShared       WaypointScope = "shared"
)

// Windows are the fixed measurement windows and the repetition scheme.
type Windows struct {
	// Idle is the window measured with the app deployed and no traffic, once per topology, mode and repetition
	// (before the repetition's first load level), so idle figures get intervals like the load ones.
	Idle Duration `json:"idle,omitzero" mb:"defaulted"`
	// Load is the measured steady-state window inside each load run (study A used 10m).
	Load Duration `json:"load,omitzero" mb:"defaulted"`
	// Repetitions of the whole mode x load matrix, for confidence intervals: reports show intervals and judge
	// changes from 3 on.
	Repetitions int `json:"repetitions,omitempty" mb:"defaulted"`
	// Interleave orders modes across repetitions: "serpentine" (A B C, C B A, ...: interleaved, fewest switches),
	// "random" (seeded shuffle per repetition) or "none" (all repetitions of a mode back to back).
	Interleave Interleave `json:"interleave,omitempty" mb:"defaulted"`
	// Seed for "random" interleaving; 0 derives one from the scenario name so plans stay reproducible.
	Seed int64 `json:"seed,omitempty"`
	// Settle is waited after a mode switch is verified and before the idle window (lets restarts calm down).
	Settle Duration `json:"settle,omitzero" mb:"defaulted"`
	// Attempts is how many times a case is measured (idle and load windows again) while a resource window comes
	// back incomplete: Prometheus has no samples for part of it (missed scrapes of a busy kubelet, a Prometheus
	// restart). A transient gap costs one more measurement instead of the case; every discarded measurement's
	// reason is recorded with the case and in the report. 1 records the first incomplete window as a failed case.
	// Cni cases are measured once (their samples are the result).
	Attempts int `json:"attempts,omitempty" mb:"defaulted"`
}

// Interleave is a mode-ordering scheme.
type Interleave string

// Interleave schemes.
const (
	InterleaveSerpentine Interleave = "serpentine"
	InterleaveRandom     Interleave = "random"
	InterleaveNone       Interleave = "none"
)

// Prometheus is the metrics source for resource usage.
type Prometheus struct {
	// URL of the Prometheus HTTP API, e.g. http://127.0.0.1:19090. Without credentials (user:password@ is
	// refused: run.json, logs and the scheduled ConfigMap would hold them): use bearerTokenFile.
	URL string `json:"url,omitempty"`
	// Service reaches an in-cluster Prometheus through the API server's service proxy (no port-forward needed).
	Service *ServiceRef `json:"service,omitempty"`
	// BearerTokenFile is re-read on every request (projected tokens expire). Only its path is recorded, never the
	// token; `meshbench schedule` mounts the token from a Secret (--prometheus-secret).
	BearerTokenFile string `json:"bearerTokenFile,omitempty"`
	// CAFile verifies the server (TLS verification is on by default, against the system's roots).
	CAFile string `json:"caFile,omitempty"`
	// InsecureSkipVerify turns TLS verification off (not recommended): the run warns and run.json records it
	// (insecure: ["prometheus"]).
	InsecureSkipVerify bool `json:"insecureSkipVerify,omitempty"`
	// ScrapeInterval of the cAdvisor job; 0 = auto-detect from Prometheus.
	ScrapeInterval Duration `json:"scrapeInterval,omitzero"`
	// Timeout per query.
	Timeout Duration `json:"timeout,omitzero" mb:"defaulted"`
	// KubeletSampleInterval is the sampling period of the fallback used when neither URL nor Service is set:
	// the kubelets' resource metrics read through the API server.
	KubeletSampleInterval Duration `json:"kubeletSampleInterval,omitzero" mb:"defaulted"`
}

// ServiceRef names an in-cluster Service.
type ServiceRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Port      string `json:"port,omitempty" mb:"defaulted"`   // port name or number; default "9090"
	Scheme    string `json:"scheme,omitempty" mb:"defaulted"` // http (default) or https
}

// CNI configures the pod network benchmark.
type CNI struct {
	// Tests to run: tcp (iperf3 TCP), udp (iperf3 UDP), rr (TCP_RR), crr (TCP_CRR).
	Tests []CNITest `json:"tests,omitempty" mb:"defaulted"`
	// Paths to measure: same-node, cross-node, service (ClusterIP, backend on the other node), host (hostNetwork baseline).
	Paths []CNIPath `json:"paths,omitempty" mb:"defaulted"`
	// Duration of each test sample.
	Duration Duration `json:"duration,omitzero" mb:"defaulted"`
	// Samples per path and test (>= 3 for a confidence interval).
	Samples int `json:"samples,omitempty" mb:"defaulted"`
	// Streams is the number of parallel iperf3 TCP streams (-P).
	Streams int `json:"streams,omitempty" mb:"defaulted"`
	// Omit is cut from the start of each iperf3 test (-O), to skip TCP slow start.
	Omit Duration `json:"omit,omitzero" mb:"defaulted"`
	// UDPBitrate is the iperf3 UDP target rate (-b) in bit/s with an optional decimal suffix K, M, G or T (1G =
	// 10^9 bit/s, as iperf3 reads it), e.g. "1G", "500M"; "0" = unlimited; at most "1T". Required with the udp
	// test: iperf3's silent 1 Mbit/s default is not a measurement.
	UDPBitrate string `json:"udpBitrate,omitempty"`
	// UDPPacketBytes is the UDP datagram size (-l); 0 = iperf3's default (path MTU based).
	UDPPacketBytes int `json:"udpPacketBytes,omitempty"`
	// RequestBytes and ResponseBytes are the RR/CRR message sizes (default 100: a 1-byte request does not make a
	// proxy open its upstream).
	RequestBytes  int `json:"requestBytes,omitempty" mb:"defaulted"`
	ResponseBytes int `json:"responseBytes,omitempty" mb:"defaulted"`
	// RRTool picks the RR/CRR implementation: auto (netperf when the image has it, else builtin), netperf, builtin.
	RRTool RRTool `json:"rrTool,omitempty" mb:"defaulted"`
	// Placement pins the test pods; empty picks two Ready schedulable nodes automatically.
	Placement CNIPlacement `json:"placement,omitzero"`
}

// CNITest is one pod network test.
type CNITest string

// CNI tests.
const (
	CNITestTCP CNITest = "tcp"
	CNITestUDP CNITest = "udp"
	CNITestRR  CNITest = "rr"
	CNITestCRR CNITest = "crr"
)

// AllCNITests lists the valid tests.
var AllCNITests = []CNITest{CNITestTCP, CNITestUDP, CNITestRR, CNITestCRR}

// CNIPath is one data path.
type CNIPath string

// CNI paths.
const (
	CNIPathSameNode  CNIPath = "same-node"
	CNIPathCrossNode CNIPath = "cross-node"
	CNIPathService   CNIPath = "service"
	CNIPathHost      CNIPath = "host"
)

// AllCNIPaths lists the valid paths.
var AllCNIPaths = []CNIPath{CNIPathSameNode, CNIPathCrossNode, CNIPathService, CNIPathHost}

// RRTool selects the request/response implementation.
type RRTool string

// RR tools.
const (
	RRToolAuto    RRTool = "auto"
	RRToolNetperf RRTool = "netperf"
	RRToolBuiltin RRTool = "builtin"
)

// CNIPlacement pins CNI test pods to nodes.
type CNIPlacement struct {
	// ClientNode runs the clients and the same-node server.
	ClientNode string `json:"clientNode,omitempty"`
	// ServerNode runs the cross-node and Service backend servers; must differ from ClientNode.
	ServerNode string `json:"serverNode,omitempty"`
}

// Images are every container image meshbench runs. Empty fields take the profile's default.
type Images struct {
	// Registry holds the images meshbench builds itself (`meshbench images push --registry REG` publishes them):
	// the agent (<registry>/meshbench-agent:<tag>) and the CLI of scheduled runs (<registry>/meshbench:<tag>). One
	// setting moves both; agent and meshbench below override each. Profile localcluster: "172.30.0.1:5000/meshbench",
	// the local cluster harness's registry. The flag --image-registry replaces it.
	Registry string `json:"registry,omitempty" mb:"defaulted"`
	// Tag of the images meshbench builds. Default: the version of the meshbench that loads the scenario, as an image
	// tag ("v0.1.0", "df4d013-dirty"), so agent and CLI always match; "dev" where no version is known. The run's
	// recorded scenario keeps the resolved value.
	Tag string `json:"tag,omitempty" mb:"defaulted"`
	// Agent is meshbench-agent: fortio-chain services, load clients, built-in RR/CRR. Default <registry>/meshbench-agent:<tag>.
	Agent string `json:"agent,omitempty" mb:"defaulted"`
	// Meshbench is the meshbench CLI image the CronJob of `meshbench schedule` runs. Default <registry>/meshbench:<tag>.
	Meshbench string `json:"meshbench,omitempty" mb:"defaulted"`
	// Network has iperf3 (and netperf's netserver/netperf when present) for `meshbench cni`. It is not built by
	// meshbench, so registry does not move it; profile localcluster: "172.30.0.1:5000/meshbench/iperf3:dev" (built by
	// the harness). The default is a moving tag: a run resolves it once (its first test pod) and runs every other pod,
	// and its --resume, from that digest, recorded in run.json networkImage with the iperf3 and netperf versions; pin
	// it across runs with "<repository>@sha256:<digest>" (preflight prints the digest the tag resolves to now).
	Network string `json:"network,omitempty" mb:"defaulted"`
	// BankOfAnthos is the registry path and tag of the Bank of Anthos images.
	BankOfAnthos BankOfAnthosImages `json:"bankOfAnthos,omitzero"`
	// Bookinfo is the registry path and tag of Istio's Bookinfo images: <registry>/examples-bookinfo-<deployment>:<tag>.
	Bookinfo BookinfoImages `json:"bookinfo,omitzero"`
	// PullPolicy for every pod; default IfNotPresent.
	PullPolicy string `json:"pullPolicy,omitempty" mb:"defaulted"`
}

// BankOfAnthosImages locates the Bank of Anthos images: <Registry>/<service>:<Tag>.
type BankOfAnthosImages struct {
	Registry string `json:"registry,omitempty" mb:"defaulted"`
	Tag      string `json:"tag,omitempty" mb:"defaulted"`
}

// BookinfoImages locates Istio's Bookinfo images: <Registry>/examples-bookinfo-<service>-<version>:<Tag>.
type BookinfoImages struct {
	// Registry is where Istio 1.30 publishes them; "docker.io/istio" is where 1.29 and older did (Docker Hub
	// rate-limits anonymous pulls), or a mirror.
	Registry string `json:"registry,omitempty" mb:"defaulted"`
	// Tag is the Bookinfo release (1.20.3 in both registries).
	Tag string `json:"tag,omitempty" mb:"defaulted"`
}

// Output is where results are written.
type Output struct {
	// Dir receives one directory per run (run.json, samples.jsonl, cases.jsonl, summary.json, report).
	Dir string `json:"dir,omitempty" mb:"defaulted"`
}

// maxDuration bounds every duration setting (windows, load runs, timeouts): a day is already far beyond any
// benchmark window, and the bound keeps sums such as the plan's estimate far from overflowing.
const maxDuration = 24 * time.Hour

// Duration is a time.Duration written as a Go duration string ("10m", "30s").
type Duration struct{ time.Duration }

// D is shorthand for building a Duration.
func D(d time.Duration) Duration { return Duration{d} }

// MarshalJSON writes the duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads a duration string, or a number of seconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf(`duration %q: use a Go duration such as "30s" or "10m"`, s)
		}
		d.Duration = v
		return nil
	}
	var secs float64
	if err := json.Unmarshal(b, &secs); err != nil || math.Abs(secs) > maxDuration.Seconds()*1000 {
		return fmt.Errorf(`duration %s: use a Go duration such as "30s" or "10m"`, string(b))
	}
	d.Duration = time.Duration(secs * float64(time.Second))
	return nil
}

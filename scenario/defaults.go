package scenario

import (
	"fmt"
	"hash/fnv"
	"net/url"
	"strings"
	"time"
)

// Default images: meshbench's own are <Images.Registry>/<repository>:<Images.Tag> (the tag defaults to the loading
// meshbench's version, DefaultImageTag here); profile "default" uses public registries, "localcluster" the harness's.
const (
	// DefaultRegistry holds meshbench's published images (profile default).
	DefaultRegistry = "ghcr.io/meshbench"
	// localClusterRegistry is the local cluster harness's registry (plain HTTP, on the nodes' bridge address);
	// `meshbench images push --registry 172.30.0.1:5000/meshbench --insecure` fills it.
	localClusterRegistry = "172.30.0.1:5000/meshbench"
	// DefaultImageTag is the tag of meshbench's own images when the loader gives none: internal/version's "dev".
	DefaultImageTag = "dev"
	// AgentRepository and MeshbenchRepository name meshbench's own images under the registry.
	AgentRepository     = "meshbench-agent"
	MeshbenchRepository = "meshbench"

	defaultAgentImage       = DefaultRegistry + "/" + AgentRepository + ":" + DefaultImageTag
	defaultMeshbenchImage   = DefaultRegistry + "/" + MeshbenchRepository + ":" + DefaultImageTag
	DefaultNetworkImage     = "quay.io/cloud-bulldozer/k8s-netperf:latest" // iperf3 + netperf + uperf (k8s-netperf)
	DefaultBankOfAnthosRepo = "us-central1-docker.pkg.dev/bank-of-anthos-ci/bank-of-anthos"
	DefaultBankOfAnthosTag  = "v0.6.10"
	// DefaultBookinfoRepo and DefaultBookinfoTag: istio/istio 1.30.0 samples/bookinfo/platform/kube/bookinfo.yaml
	// (registry.istio.io: Docker Hub rate-limits anonymous pulls; workloads/bookinfo_upstream_test.go pins it).
	DefaultBookinfoRepo    = "registry.istio.io/release"
	DefaultBookinfoTag     = "1.20.3"
	LocalClusterAgentImage = localClusterRegistry + "/" + AgentRepository + ":" + DefaultImageTag
	// localClusterNetworkImage is built by the harness, not by meshbench: spec.images.registry does not move it.
	localClusterNetworkImage = localClusterRegistry + "/iperf3:dev"
)

// imageRef is <registry>/<repository>:<tag>, the reference of one of meshbench's own images.
func imageRef(registry, repository, tag string) string {
	return strings.TrimSuffix(registry, "/") + "/" + repository + ":" + tag
}

// LoadOptions carry what the loader knows before defaults are applied: flags and build facts of the command.
type LoadOptions struct {
	// ImageRegistry, when set, replaces spec.images.registry (flag --image-registry). It is applied before the
	// defaults, so every image derived from the registry moves; explicit spec.images.agent/meshbench stay.
	ImageRegistry string
	// ImageTag is the default of spec.images.tag: the running meshbench's version as an image tag. Empty:
	// DefaultImageTag.
	ImageTag string
	// BaseDir is the directory workload.manifests paths are relative to: LoadWith sets the scenario file's
	// directory; empty: the working directory.
	BaseDir string
}

// apply sets what the options decide on a decoded scenario, before SetDefaults.
func (o LoadOptions) apply(s *Scenario) {
	if o.ImageRegistry != "" {
		s.Spec.Images.Registry = o.ImageRegistry
	}
	setDefault(&s.Spec.Images.Tag, o.ImageTag)
	if m := s.Spec.Workload.Manifests; m != nil {
		m.BaseDir = o.BaseDir
	}
}

// SetDefaults fills every unset field. It is idempotent and pure. The cni section is defaulted only when present:
// a scenario without one simply cannot be used with `meshbench cni`.
func SetDefaults(s *Scenario) {
	sp := &s.Spec
	if sp.Profile == "" {
		sp.Profile = ProfileDefault
	}
	setWorkloadDefaults(&sp.Workload)
	if len(sp.Modes) == 0 {
		sp.Modes = append([]Mode(nil), AllModes...)
	}
	setDefault(&sp.Waypoint.Scope, WaypointPerNamespace)
	setDefault(&sp.Waypoint.Name, "waypoint")
	setDefault(&sp.Waypoint.For, "service")
	setLoadDefaults(&sp.Load, sp.Workload.App)
	setWindowDefaults(&sp.Windows, s.Metadata.Name)
	sp.Load.fillDuration(sp.Windows.Load.Duration)
	if sp.Prometheus.Timeout.Duration == 0 {
		sp.Prometheus.Timeout = D(30 * time.Second)
	}
	if sp.Prometheus.KubeletSampleInterval.Duration == 0 {
		sp.Prometheus.KubeletSampleInterval = D(10 * time.Second)
	}
	if svc := sp.Prometheus.Service; svc != nil {
		setDefault(&svc.Port, "9090")
		setDefault(&svc.Scheme, "http")
	}
	if sp.CNI.configured() {
		setCNIDefaults(&sp.CNI)
	}
	if sp.Transitions.configured() && len(sp.Load.QPS) > 0 {
		setTransitionDefaults(&sp.Transitions, sp.Load.QPS[0])
	}
	if sp.Enforcement.configured() && len(sp.Load.QPS) > 0 {
		setEnforcementDefaults(&sp.Enforcement, sp.Load.QPS[0])
	}
	setVariantDefaults(sp.Variants)
	setImageDefaults(&sp.Images, sp.Profile)
	setDefault(&sp.Output.Dir, "runs")
}

func setDefault[T comparable](p *T, v T) {
	var zero T
	if *p == zero {
		*p = v
	}
}

func setWorkloadDefaults(w *Workload) {
	if w.App == AppFortioChain && w.Chain == nil {
		w.Chain = &Chain{}
	}
	if c := w.Chain; c != nil { // field by field: a chain that sets only its depth keeps the default fan-out and payload
		setDefault(&c.Depth, 2)
		setDefault(&c.FanOut, 1)
		setDefault(&c.PayloadBytes, 128)
	}
	setDefault(&w.Replicas, 1)
	setDefault(&w.NamespacePrefix, "mb-")
	if len(w.Topologies) == 0 {
		w.Topologies = []Topology{{Kind: TopologySingle}}
	}
	for i := range w.Topologies {
		t := &w.Topologies[i]
		if t.Name == "" {
			t.Name = string(t.Kind)
			if t.Kind == TopologyMulti && t.Namespaces > 0 {
				t.Name = fmt.Sprintf("multi%d", t.Namespaces)
			}
			if t.ChainDepth > 0 { // keeps the names, and so the case IDs, of topologies of several depths distinct
				t.Name += fmt.Sprintf("-d%d", t.ChainDepth)
			}
		}
		setDefault(&t.Replicas, w.Replicas)
	}
}

func setLoadDefaults(l *LoadSpec, app App) {
	if len(l.QPS) == 0 {
		l.QPS = []QPS{{Value: 1000}}
	}
	setDefault(&l.Connections, 4) // Istio's published performance figures use 4 client connections
	if l.Path == "" {
		l.Path = "/"
		switch app {
		case AppBankOfAnthos:
			l.Path = "/home"
		case AppBookinfo:
			l.Path = "/productpage"
		}
	}
	for i := range l.Targets {
		t := &l.Targets[i]
		setDefault(&t.Protocol, ProtocolHTTP)
		setDefault(&t.Weight, 1)
		if t.URL == "" {
			switch t.Protocol {
			case ProtocolGRPC:
				setDefault(&t.Port, 8079)
			case ProtocolTCP:
				setDefault(&t.Port, 8078)
			default:
				setDefault(&t.Port, 80)
			}
			if t.Protocol == ProtocolHTTP {
				setDefault(&t.Path, l.Path)
			}
		}
		if t.Name == "" {
			t.Name = t.Service
			if t.Name == "" {
				t.Name = urlHost(t.URL)
			}
		}
	}
	if l.Login != nil {
		l.Login.SetDefaults()
	}
	if l.WarmUp.Duration == 0 {
		l.WarmUp = D(30 * time.Second)
	}
	if l.TrimEnd.Duration == 0 {
		l.TrimEnd = D(5 * time.Second)
	}
	setDefault(&l.Clients, 1)
}

// SetDefaults fills a login's unset fields: method GET, port 80, SetHeader Cookie, Value "<cookie name>={value}" for
// a cookie capture else "{value}", timeout 3 minutes. Exported so that workloads defaults a login built in Go (an
// app's built-in login) by the same rules as one read from a scenario.
func (lg *Login) SetDefaults() {
	setDefault(&lg.Method, "GET")
	if lg.URL == "" {
		setDefault(&lg.Port, 80)
	}
	setDefault(&lg.SetHeader, "Cookie")
	if lg.Value == "" {
		lg.Value = "{value}"
		if name, ok := strings.CutPrefix(lg.Capture, "cookie:"); ok && strings.EqualFold(lg.SetHeader, "Cookie") {
			lg.Value = name + "={value}"
		}
	}
	if lg.Timeout.Duration == 0 {
		lg.Timeout = D(3 * time.Minute)
	}
}

// urlHost is the host of a target URL (with or without a scheme), or the URL itself when it has none.
func urlHost(raw string) string {
	u := raw
	if !strings.Contains(u, "://") {
		u = "x://" + u
	}
	if pu, err := url.Parse(u); err == nil && pu.Hostname() != "" {
		return pu.Hostname()
	}
	return raw
}

// fillDuration defaults the load run to exactly cover warm-up, trims and the measured window.
func (l *LoadSpec) fillDuration(window time.Duration) {
	if l.Duration.Duration == 0 {
		l.Duration = D(l.MinDuration(window))
	}
}

// MinDuration is the shortest load run that contains the measured window. It saturates instead of overflowing, so
// out-of-range settings are reported by Validate rather than wrapped into a negative figure.
func (l LoadSpec) MinDuration(window time.Duration) time.Duration {
	return satSum(l.WarmUp.Duration, l.TrimStart.Duration, window, l.TrimEnd.Duration)
}

func setWindowDefaults(w *Windows, name string) {
	if w.Idle.Duration == 0 {
		w.Idle = D(5 * time.Minute)
	}
	if w.Load.Duration == 0 {
		w.Load = D(10 * time.Minute) // study A's fixed window
	}
	setDefault(&w.Repetitions, 3)
	setDefault(&w.Interleave, InterleaveSerpentine)
	if w.Seed == 0 {
		w.Seed = seedFromName(name)
	}
	if w.Settle.Duration == 0 {
		w.Settle = D(15 * time.Second)
	}
	setDefault(&w.Attempts, 2)
}

// seedFromName makes the default interleaving seed a pure function of the scenario, so the same file always gives
// the same plan.
func seedFromName(name string) int64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte("meshbench/" + name))
	return int64(h.Sum64() & 0x7fffffffffffffff)
}

func (c CNI) configured() bool {
	return len(c.Tests) > 0 || len(c.Paths) > 0 || c.Duration.Duration > 0 || c.Samples > 0 || c.UDPBitrate != "" ||
		c.Streams > 0 || c.RRTool != "" || c.Placement != (CNIPlacement{}) || c.RequestBytes > 0 || c.ResponseBytes > 0
}

// Configured reports whether the scenario has a cni section.
func (c CNI) Configured() bool { return c.configured() }

func setCNIDefaults(c *CNI) {
	if len(c.Tests) == 0 {
		c.Tests = append([]CNITest(nil), AllCNITests...)
	}
	if len(c.Paths) == 0 {
		c.Paths = append([]CNIPath(nil), AllCNIPaths...)
	}
	if c.Duration.Duration == 0 {
		c.Duration = D(10 * time.Second)
	}
	setDefault(&c.Samples, 3)
	setDefault(&c.Streams, 1)
	if c.Omit.Duration == 0 {
		c.Omit = D(time.Second)
	}
	setDefault(&c.RequestBytes, 100)
	setDefault(&c.ResponseBytes, 100)
	setDefault(&c.RRTool, RRToolAuto)
}

func setImageDefaults(im *Images, p Profile) {
	registry, network := DefaultRegistry, DefaultNetworkImage
	if p == ProfileLocalCluster {
		registry, network = localClusterRegistry, localClusterNetworkImage
	}
	setDefault(&im.Registry, registry)
	setDefault(&im.Tag, DefaultImageTag)
	setDefault(&im.Agent, imageRef(im.Registry, AgentRepository, im.Tag))
	setDefault(&im.Meshbench, imageRef(im.Registry, MeshbenchRepository, im.Tag))
	setDefault(&im.Network, network)
	setDefault(&im.BankOfAnthos.Registry, DefaultBankOfAnthosRepo)
	setDefault(&im.BankOfAnthos.Tag, DefaultBankOfAnthosTag)
	setDefault(&im.Bookinfo.Registry, DefaultBookinfoRepo)
	setDefault(&im.Bookinfo.Tag, DefaultBookinfoTag)
	setDefault(&im.PullPolicy, "IfNotPresent")
}

package results

import (
	"cmp"
	"slices"
	"strings"
)

// The vocabulary of the results files (modes, components, metrics, stats, units, case fact keys), typed and defined
// here once with its canonical order; the strings are those the files hold. vocab_test.go rejects their literals
// in product code outside this package.

// Mode is an Istio data-plane mode as the results record it (Sample.Mode, CaseResult.Mode, Key.Mode; "" for cni).
// scenario.Mode is the same set as configured; scenario's test pins its order to Modes.
type Mode string

// The data-plane modes.
const (
	ModeNone     Mode = "none"     // no mesh: the baseline
	ModeSidecar  Mode = "sidecar"  // Envoy sidecar per pod
	ModeAmbient  Mode = "ambient"  // ztunnel per node (L4)
	ModeWaypoint Mode = "waypoint" // ztunnel + waypoint proxies (L4 + L7)
)

// Modes is the canonical order of the modes: charts, reports, capacity and compare sort by it.
var Modes = []Mode{ModeNone, ModeSidecar, ModeAmbient, ModeWaypoint}

// Component is the part of the system a sample is attributed to.
type Component string

// Components are the parts of the system a resource sample is attributed to.
const (
	ComponentApp      Component = "app"       // application containers of the demo app
	ComponentSidecar  Component = "sidecar"   // istio-proxy containers inside app pods (never the load clients')
	ComponentZtunnel  Component = "ztunnel"   // per-node ambient L4 proxy of the nodes running the app or its waypoints
	ComponentWaypoint Component = "waypoint"  // ambient L7 proxies (Gateway istio-waypoint)
	ComponentIstiod   Component = "istiod"    // control plane
	ComponentIstioCNI Component = "istio-cni" // node agent
	ComponentLoadgen  Component = "loadgen"   // fortio clients
	// ComponentLoadgenProxy is the load clients' own proxies (their sidecars; ambient: the ztunnels of nodes with
	// clients but no app or waypoint pod): the benchmark's, never in the app's figures, the mesh total or a fit.
	ComponentLoadgenProxy Component = "loadgen-proxy"
	ComponentCNITest      Component = "cni-test" // iperf3 / RR / CRR client and server pods
	ComponentNode         Component = "node"     // whole node (host) CPU and memory
	ComponentMesh         Component = "mesh"     // derived: sidecars, or ztunnel + waypoints, plus istiod
	// ComponentAppByWorkload is the application containers of one workload's pods (label LabelWorkload).
	ComponentAppByWorkload Component = "app-by-workload"
	// ComponentSidecarByWorkload is the istio-proxy containers of one workload's pods (label LabelWorkload).
	ComponentSidecarByWorkload Component = "sidecar-by-workload"
	// ComponentWorkloadTotal is derived by Summarize: app plus sidecar of one workload, per window (the average of a
	// window's sum), label LabelWorkload.
	ComponentWorkloadTotal Component = "workload-total"
)

// Components is the canonical order of the components (Series order, charts, reports).
var Components = []Component{ComponentApp, ComponentSidecar, ComponentZtunnel, ComponentWaypoint, ComponentIstiod,
	ComponentIstioCNI, ComponentLoadgen, ComponentLoadgenProxy, ComponentCNITest, ComponentNode, ComponentMesh,
	ComponentAppByWorkload, ComponentSidecarByWorkload, ComponentWorkloadTotal}

// Metric names what a sample measures.
type Metric string

// The metrics.
const (
	MetricCPU    Metric = "cpu"    // millicores
	MetricMemory Metric = "memory" // MiB
	MetricPods   Metric = "pods"   // pods of a component (StatCount)

	// Load generator (loadgen).
	MetricQPS        Metric = "qps"           // achieved requests per second (stat value), and the requested rate (stat target)
	MetricLatency    Metric = "latency"       // ms; loadgen: 2xx requests' service time (sent -> done); cni: rr/crr transaction latency
	MetricErrLatency Metric = "error-latency" // ms, the other requests (when there are any); the same stats
	// Response time: due -> done (service time plus how late the request was sent: coordinated omission); ms, 2xx and
	// the others apart, the same stats; only for a fixed rate.
	MetricResponseTime    Metric = "response-time"
	MetricErrResponseTime Metric = "error-response-time"
	MetricRequests        Metric = "requests"    // count of completed requests in the measured phase
	MetricErrors          Metric = "errors"      // count of non-2xx responses and connection errors; rr/crr failed transactions
	MetricErrorRate       Metric = "error-rate"  // errors / requests, %
	MetricResponses       Metric = "responses"   // count per HTTP status (label code)
	MetricConnection      Metric = "connections" // sockets opened (stat count) and connections asked for (stat target)

	// Pod network (cni).
	MetricThroughput  Metric = "throughput"  // tcp goodput, udp delivered rate (receiver side)
	MetricSent        Metric = "sent"        // udp rate the client sent
	MetricLoss        Metric = "loss"        // udp datagram loss
	MetricJitter      Metric = "jitter"      // udp jitter
	MetricRetransmits Metric = "retransmits" // tcp
	MetricRTT         Metric = "rtt"         // tcp mean smoothed RTT of the sender
	MetricRR          Metric = "rr"          // TCP_RR transactions/s
	MetricCRR         Metric = "crr"         // TCP_CRR transactions/s

	// MetricRestarts is container restarts: compare judges it (lower is better); no collector records it yet.
	MetricRestarts Metric = "restarts"
)

// Stat names which statistic of a metric a sample is.
type Stat string

// The stats.
const (
	StatMin    Stat = "min"
	StatMax    Stat = "max"
	StatAvg    Stat = "avg"
	StatP50    Stat = "p50"
	StatP75    Stat = "p75"
	StatP90    Stat = "p90"
	StatP95    Stat = "p95"
	StatP99    Stat = "p99"
	StatP999   Stat = "p99.9"
	StatP9999  Stat = "p99.99"
	StatValue  Stat = "value"  // a single figure
	StatCount  Stat = "count"  // a count
	StatTarget Stat = "target" // what was asked for (the requested rate, the connections)
	// Allocation (see SourcePodSpec): the requests' sum, the limits' sum, the containers without a limit.
	StatRequest Stat = "request"
	StatLimit   Stat = "limit"
	StatNoLimit Stat = "no-limit"
)

// Percentiles is the canonical order of the distribution stats (min, the percentiles, max).
var Percentiles = []Stat{StatMin, StatP50, StatP75, StatP90, StatP95, StatP99, StatP999, StatP9999, StatMax}

// Unit is a sample's unit.
type Unit string

// The units.
const (
	UnitMillicores Unit = "millicores"
	UnitMiB        Unit = "MiB"
	UnitRPS        Unit = "rps"
	UnitMs         Unit = "ms"
	UnitGbps       Unit = "Gbit/s"
	UnitMbps       Unit = "Mbit/s"
	UnitKbps       Unit = "Kbit/s" // bit rates convert among UnitBps, UnitKbps, UnitMbps, UnitGbps
	UnitBps        Unit = "bit/s"
	UnitPct        Unit = "%"
	UnitTPS        Unit = "tps"
	UnitCount      Unit = "count"
	UnitContainers Unit = "containers"
	UnitPods       Unit = "pods"
)

// CNITest is a pod network test (label CNILabelTest; scenario.CNITest is the same set as configured).
type CNITest string

// The pod network tests.
const (
	CNITestTCP CNITest = "tcp"
	CNITestUDP CNITest = "udp"
	CNITestRR  CNITest = "rr"
	CNITestCRR CNITest = "crr"
)

// CNITests is the canonical order of the pod network tests.
var CNITests = []CNITest{CNITestTCP, CNITestUDP, CNITestRR, CNITestCRR}

// CNIPath is a pod network path (label CNILabelPath; scenario.CNIPath is the same set as configured).
type CNIPath string

// The pod network paths.
const (
	CNIPathHost      CNIPath = "host"
	CNIPathSameNode  CNIPath = "same-node"
	CNIPathCrossNode CNIPath = "cross-node"
	CNIPathService   CNIPath = "service"
)

// CNIPaths is the canonical order of the pod network paths in tables and charts (the host baseline first).
var CNIPaths = []CNIPath{CNIPathHost, CNIPathSameNode, CNIPathCrossNode, CNIPathService}

// Status is what happened to a planned case (CaseResult.Status).
type Status string

// Case statuses in cases.jsonl.
const (
	StatusOK      Status = "ok"
	StatusFailed  Status = "failed"
	StatusSkipped Status = "skipped"
)

// Order is a canonical order of a vocabulary: Rank sorts its values first, in its order, then unknown values by name.
func Order[T ~string](order []T) func(a, b T) int {
	pos := func(s T) int {
		if i := slices.Index(order, s); i >= 0 {
			return i
		}
		return len(order)
	}
	return func(a, b T) int {
		if c := cmp.Compare(pos(a), pos(b)); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	}
}

// SortModes sorts modes in the order of Modes, unknown ones after them by name.
func SortModes(ms []Mode) { slices.SortStableFunc(ms, Order(Modes)) }

// SortComponents sorts components in the order of Components, unknown ones after them by name.
func SortComponents(cs []Component) { slices.SortStableFunc(cs, Order(Components)) }

// SortPercentiles sorts stats in the order of Percentiles, others after them by name.
func SortPercentiles(ss []Stat) { slices.SortStableFunc(ss, Order(Percentiles)) }

// SortCNIPaths sorts pod network paths in the order of CNIPaths.
func SortCNIPaths(ps []CNIPath) { slices.SortStableFunc(ps, Order(CNIPaths)) }

// SortCNITests sorts pod network tests in the order of CNITests.
func SortCNITests(ts []CNITest) { slices.SortStableFunc(ts, Order(CNITests)) }

// join is strings.Join for a vocabulary's values.
func join[T ~string](xs []T, sep string) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = string(x)
	}
	return strings.Join(s, sep)
}

package hbonenode

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Description is what this proxy is called everywhere (start line, metrics, image label, stand-in marker): a test
// double in ztunnel's place, whose CPU and memory are never presented as ztunnel's.
const Description = "Go HBONE node proxy (test double; not ztunnel's cost)"

// Protocol is how a connection travels: HBONE (HTTP/2 CONNECT over mTLS), or plain TCP.
type Protocol string

const (
	ProtocolHBONE     Protocol = "hbone"
	ProtocolTCP       Protocol = "tcp"       // outbound plaintext
	ProtocolPlaintext Protocol = "plaintext" // inbound plaintext (the pod's 15006)
)

// Via is the kind of next hop of an outbound connection.
type Via string

const (
	ViaWaypoint    Via = "waypoint"    // HBONE to the destination's waypoint
	ViaNode        Via = "node"        // HBONE to the destination pod's node proxy (the pod's 15008)
	ViaDirect      Via = "direct"      // plaintext to a known pod that takes no HBONE (sidecar or outside the mesh)
	ViaPassthrough Via = "passthrough" // plaintext to an address workload discovery does not know
	ViaNone        Via = "none"        // refused before a next hop was chosen
)

// Result is the outcome of one connection as the counters record it.
type Result string

const (
	ResultOK      Result = "ok"
	ResultError   Result = "error"
	ResultAllowed Result = "allowed"
	ResultDenied  Result = "denied"
)

// Direction of copied bytes, seen from the enrolled pod.
type Direction string

const (
	DirectionOutbound Direction = "outbound"
	DirectionInbound  Direction = "inbound"
)

// Metric names: all prefixed hbone_node_, never ztunnel_ or istio_, so no dashboard mistakes them for ztunnel's.
const (
	metricInfo         = "hbone_node_info"
	metricOutbound     = "hbone_node_outbound_connections_total"
	metricInbound      = "hbone_node_inbound_connections_total"
	metricBytes        = "hbone_node_bytes_total"
	metricCSR          = "hbone_node_csr_total"
	metricCertificates = "hbone_node_certificates"
	metricWorkloads    = "hbone_node_workloads"
	metricXDSResources = "hbone_node_xds_resources"
	metricZDSConnected = "hbone_node_zds_connected"
)

// Metrics are the node proxy's counters on :15020/metrics (its own registry, plus the Go and process collectors
// so its CPU and memory can be read the same way).
type Metrics struct {
	Registry     *prometheus.Registry
	outbound     *prometheus.CounterVec
	inbound      *prometheus.CounterVec
	bytes        *prometheus.CounterVec
	csr          *prometheus.CounterVec
	certificates prometheus.Gauge
	workloads    prometheus.Gauge
	xds          *prometheus.GaugeVec
	zds          prometheus.Gauge
}

// NewMetrics registers the node proxy's metrics; version goes on hbone_node_info.
func NewMetrics(version string) *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		outbound: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricOutbound,
			Help: "Outbound connections of enrolled pods, by protocol, next hop kind and result."}, []string{"protocol", "via", "result"}),
		inbound: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricInbound,
			Help: "Inbound connections to enrolled pods (15008 HBONE, 15006 plaintext), by protocol and result."}, []string{"protocol", "result"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricBytes,
			Help: "Payload bytes copied for enrolled pods, by direction (outbound: from the pod)."}, []string{"direction"}),
		csr: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricCSR,
			Help: "Certificate signing requests sent to istiod's CA, by result."}, []string{"result"}),
		certificates: prometheus.NewGauge(prometheus.GaugeOpts{Name: metricCertificates,
			Help: "Workload identities with a certificate held."}),
		workloads: prometheus.NewGauge(prometheus.GaugeOpts{Name: metricWorkloads,
			Help: "Pods enrolled on this node (from the istio-cni agent)."}),
		xds: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: metricXDSResources,
			Help: "Resources held from istiod's workload discovery, by type."}, []string{"type"}),
		zds: prometheus.NewGauge(prometheus.GaugeOpts{Name: metricZDSConnected,
			Help: "1 while connected to the istio-cni node agent."}),
	}
	info := prometheus.NewGauge(prometheus.GaugeOpts{Name: metricInfo, Help: "The node proxy's build; it is a test double, not ztunnel.",
		ConstLabels: prometheus.Labels{"version": version, "standin": "true", "description": Description}})
	info.Set(1)
	m.Registry.MustRegister(info, m.outbound, m.inbound, m.bytes, m.csr, m.certificates, m.workloads, m.xds, m.zds,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *Metrics) outboundConn(p Protocol, v Via, r Result) {
	m.outbound.WithLabelValues(string(p), string(v), string(r)).Inc()
}

func (m *Metrics) inboundConn(p Protocol, r Result) {
	m.inbound.WithLabelValues(string(p), string(r)).Inc()
}

func (m *Metrics) copied(d Direction, n int64) { m.bytes.WithLabelValues(string(d)).Add(float64(n)) }

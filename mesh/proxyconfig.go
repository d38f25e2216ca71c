package mesh

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"

	"github.com/meshbench/meshbench/internal/kube"
)

// Where a proxy's own counters are read through pods/proxy: Envoy's Prometheus listener (15090), pilot-agent's merged
// stats (15020) as the fallback (istio/istio tools/packaging/common/envoy_bootstrap.json, pkg/config/constants).
const (
	EnvoyStatsPort = 15090
	agentStatsPort = 15020
	statsPath      = "/stats/prometheus"
)

// xdsCounter is one of Envoy's counters of the config updates it received, named as admin /stats shows it
// (envoyproxy/envoy envoy/config/subscription.h ALL_SUBSCRIPTION_STATS); Istio's stats matcher always keeps them
// (pkg/bootstrap/config.go requiredEnvoyStatsMatcherInclusionPrefixes).
type xdsCounter string

// The counters meshbench reads.
const (
	LDSRejected xdsCounter = "listener_manager.lds.update_rejected"
	CDSRejected xdsCounter = "cluster_manager.cds.update_rejected"
	LDSSuccess  xdsCounter = "listener_manager.lds.update_success"
	CDSSuccess  xdsCounter = "cluster_manager.cds.update_success"
)

// xdsCounters are every counter a ProxyConfigProof holds, rejections first.
var xdsCounters = []xdsCounter{LDSRejected, CDSRejected, LDSSuccess, CDSSuccess}

// promName is the counter's name in Envoy's Prometheus output ("envoy_" + the name with dots as underscores).
func (c xdsCounter) promName() string { return "envoy_" + strings.ReplaceAll(string(c), ".", "_") }

// XDSStats are a proxy's xDS counters; a counter the text did not carry is absent.
type XDSStats map[xdsCounter]float64

// ParseXDSStats reads the xDS counters from Prometheus text exposition (Envoy's /stats/prometheus or the agent's
// merged stats). It is pure. A text with none of them is an error: it is not an Envoy's.
func ParseXDSStats(text []byte) (XDSStats, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("parse proxy stats: %w", err)
	}
	out := XDSStats{}
	for _, c := range xdsCounters {
		f, ok := fams[c.promName()]
		if !ok || len(f.GetMetric()) == 0 {
			continue
		}
		out[c] = metricValue(f.GetMetric()[0])
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("parse proxy stats: none of %s in the text (not Envoy's stats?)", LDSRejected.promName())
	}
	return out, nil
}

func metricValue(m *dto.Metric) float64 {
	switch {
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	default:
		return m.GetUntyped().GetValue()
	}
}

// ProxyConfigProof is what one proxy's counters say about the configuration istiod sent it.
type ProxyConfigProof struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Node      string `json:"node,omitempty"`
	// Port is where the counters were read (EnvoyStatsPort or agentStatsPort); 0 when they could not be.
	Port  int      `json:"port,omitempty"`
	Stats XDSStats `json:"stats,omitempty"`
	// ReadError says why the counters could not be read.
	ReadError string `json:"readError,omitempty"`
}

// Rejected lists the rejection counters above zero.
func (p ProxyConfigProof) Rejected() []xdsCounter {
	var out []xdsCounter
	for _, c := range []xdsCounter{LDSRejected, CDSRejected} {
		if p.Stats[c] > 0 {
			out = append(out, c)
		}
	}
	return out
}

// Describe is the counters as one line: "listener_manager.lds.update_rejected=2, ... (:15090)".
func (p ProxyConfigProof) Describe() string {
	if p.ReadError != "" {
		return "counters not read: " + p.ReadError
	}
	parts := make([]string, 0, len(xdsCounters))
	for _, c := range xdsCounters {
		if v, ok := p.Stats[c]; ok {
			parts = append(parts, string(c)+"="+strconv.FormatFloat(v, 'f', -1, 64))
		}
	}
	return fmt.Sprintf("%s (read on :%d)", strings.Join(parts, ", "), p.Port)
}

// proxyConfigError fails a case whose proxies refused configuration: measuring it would measure a mesh that does
// not do what its config says (missing listeners or clusters), not the mode.
type proxyConfigError struct {
	// Rejecting are the sampled proxies with a rejection counter above zero; Sampled is how many were read.
	Rejecting []ProxyConfigProof
	Sampled   int
}

func (e *proxyConfigError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d sampled proxies rejected configuration from istiod: not measured, the mesh does not run the config it was given",
		len(e.Rejecting), e.Sampled)
	for _, p := range e.Rejecting {
		fmt.Fprintf(&b, "\n  pod %s/%s", p.Namespace, p.Name)
		if p.Node != "" {
			fmt.Fprintf(&b, " (node %s)", p.Node)
		}
		fmt.Fprintf(&b, ": %s", p.Describe())
	}
	if len(e.Rejecting) > 0 {
		p := e.Rejecting[0]
		fmt.Fprintf(&b, "\n  fix: `kubectl logs -n %s %s -c %s | grep -i rejected` names the refused resource and why; the usual causes "+
			"are an EnvoyFilter that patches in a filter or field this Envoy does not know, and a proxy version far from istiod's "+
			"(`istioctl proxy-status`). Remove or fix it, then run again",
			p.Namespace, p.Name, ProxyContainer)
	}
	return b.String()
}

// sampleProxies picks at most n pods to read, deterministically: one per workload first (a bad EnvoyFilter usually
// selects workloads), spread over nodes, then more of each in turn. Pods are taken in name order within a group.
// It is pure.
func sampleProxies(pods []*corev1.Pod, n int) []*corev1.Pod {
	if n <= 0 || len(pods) == 0 {
		return nil
	}
	groups := map[string][]*corev1.Pod{}
	var keys []string
	for _, p := range pods {
		k := p.Namespace + "/" + workloadOf(p)
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], p)
	}
	slices.Sort(keys)
	for _, k := range keys {
		g := groups[k]
		slices.SortFunc(g, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
		groups[k] = spreadNodes(g)
	}
	var out []*corev1.Pod
	for round := 0; len(out) < n; round++ {
		added := false
		for _, k := range keys {
			if g := groups[k]; round < len(g) && len(out) < n {
				out = append(out, g[round])
				added = true
			}
		}
		if !added {
			break
		}
	}
	return out
}

// spreadNodes orders pods so that consecutive ones sit on different nodes where possible.
func spreadNodes(pods []*corev1.Pod) []*corev1.Pod {
	byNode := map[string][]*corev1.Pod{}
	var nodes []string
	for _, p := range pods {
		if _, ok := byNode[p.Spec.NodeName]; !ok {
			nodes = append(nodes, p.Spec.NodeName)
		}
		byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p)
	}
	slices.Sort(nodes)
	out := make([]*corev1.Pod, 0, len(pods))
	for i := 0; len(out) < len(pods); i++ {
		for _, n := range nodes {
			if i < len(byNode[n]) {
				out = append(out, byNode[n][i])
			}
		}
	}
	return out
}

// workloadOf names the pod's controller without the pod-template hash: the ReplicaSet's Deployment, or the owner.
func workloadOf(p *corev1.Pod) string {
	for _, o := range p.OwnerReferences {
		if o.Controller != nil && *o.Controller {
			if h := p.Labels["pod-template-hash"]; o.Kind == "ReplicaSet" && h != "" {
				return strings.TrimSuffix(o.Name, "-"+h)
			}
			return o.Name
		}
	}
	return p.Name
}

// proxyConfigProofs reads the xDS counters of a bounded sample of pods (sampleProxies) through the pods/proxy
// subresource, Envoy's port first and the agent's second. A proxy whose counters cannot be read is reported as
// such (ReadError), not as rejecting.
func (s *Switcher) proxyConfigProofs(ctx context.Context, pods []*corev1.Pod, sample int) []ProxyConfigProof {
	picked := sampleProxies(pods, sample)
	out := make([]ProxyConfigProof, 0, len(picked))
	for _, p := range picked {
		out = append(out, s.readProxyConfig(ctx, p))
	}
	return out
}

func (s *Switcher) readProxyConfig(ctx context.Context, p *corev1.Pod) ProxyConfigProof {
	pr := ProxyConfigProof{Namespace: p.Namespace, Name: p.Name, Node: p.Spec.NodeName}
	var errs []string
	for _, port := range []int{EnvoyStatsPort, agentStatsPort} {
		body, err := kube.ProxyGet(ctx, s.Clients.Kube, "pods", p.Namespace, fmt.Sprintf("%s:%d", p.Name, port), statsPath, nil)
		if err == nil {
			var st XDSStats
			if st, err = ParseXDSStats(body); err == nil {
				pr.Port, pr.Stats = port, st
				return pr
			}
		}
		errs = append(errs, fmt.Sprintf(":%d: %v", port, err))
		if ctx.Err() != nil {
			break
		}
	}
	pr.ReadError = strings.Join(errs, "; ")
	return pr
}

// checkProxyConfig fails with a *proxyConfigError when a sampled proxy rejected configuration; proxies whose
// counters could not be read do not fail the case (the proofs stand), they are kept in the verification.
func checkProxyConfig(proofs []ProxyConfigProof) error {
	var bad []ProxyConfigProof
	for _, p := range proofs {
		if len(p.Rejected()) > 0 {
			bad = append(bad, p)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return &proxyConfigError{Rejecting: bad, Sampled: len(proofs)}
}

// SummarizeProxyConfig says in one line what the sampled proxies' counters showed (the case fact
// results.FactProxyConfig): how many accepted their config, rejected it, or could not be read.
func SummarizeProxyConfig(proofs []ProxyConfigProof) string {
	accepted, rejecting, unread := 0, 0, 0
	var why string
	for _, p := range proofs {
		switch {
		case p.ReadError != "":
			unread++
			if why == "" {
				why = p.Namespace + "/" + p.Name + ": " + p.ReadError
			}
		case len(p.Rejected()) > 0:
			rejecting++
		default:
			accepted++
		}
	}
	s := fmt.Sprintf("%d of %d sampled proxies accepted their configuration (%s and %s = 0)", accepted, len(proofs), LDSRejected, CDSRejected)
	if rejecting > 0 {
		s += fmt.Sprintf(", %d rejected some", rejecting)
	}
	if unread > 0 {
		s += fmt.Sprintf(", %d unread (%s)", unread, why)
	}
	return s
}

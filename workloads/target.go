package workloads

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/scenario"
)

// Labels meshbench puts on the app's objects and pods (besides kube.RunLabels).
const (
	// AppLabel names the catalog app ("bank-of-anthos", "fortio-chain") on every object and pod of the app.
	AppLabel = "meshbench.dev/app"
	// ComponentLabel names the service or database inside the app ("frontend", "chain-3").
	ComponentLabel = "meshbench.dev/component"
	// ClusterDomain is the DNS domain of fully qualified service addresses when the scenario names none
	// (spec.workload.clusterDomain; `meshbench run` fills it from the kubelets' configuration).
	ClusterDomain = kube.DefaultClusterDomain
)

// Target is what the rest of meshbench needs to drive and observe a deployed app.
type Target struct {
	// App is the catalog app.
	App scenario.App `json:"app"`
	// Topology is the topology name from the scenario ("single", "multi3").
	Topology string `json:"topology"`
	// Namespaces are the app's namespaces, in placement order (the entry namespace first).
	Namespaces []string `json:"namespaces"`
	// EntryService and EntryNamespace locate the service load is sent to.
	EntryService   string `json:"entryService"`
	EntryNamespace string `json:"entryNamespace"`
	// EntryURL is the in-cluster URL load clients request, including the path (and, for fortio-chain, ?size=).
	EntryURL string `json:"entryURL"`
	// Headers are sent with every load request (bank-of-anthos: the Cookie Login returns).
	Headers map[string]string `json:"headers,omitempty"`
	// AppSelector is the label selector of the app's pods (and of its Deployments and StatefulSets).
	AppSelector string `json:"appSelector"`
	// Services are the app's Service names, in placement order.
	Services []string `json:"services"`
	// Workloads are the app's Deployments and StatefulSets with their desired replicas.
	Workloads []WorkloadRef `json:"workloads"`
	// ClusterDomain is the DNS domain of the app's fully qualified service names.
	ClusterDomain string `json:"clusterDomain,omitempty"`
}

// WorkloadRef names one Deployment or StatefulSet of the app.
type WorkloadRef struct {
	Kind      string `json:"kind"` // Deployment | StatefulSet
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Replicas  int32  `json:"replicas"`
}

// String is "Kind ns/name".
func (w WorkloadRef) String() string { return w.Kind + " " + w.Namespace + "/" + w.Name }

// ExpectedPods is the number of app pods when every workload is rolled out.
func (t Target) ExpectedPods() int {
	n := 0
	for _, w := range t.Workloads {
		n += int(w.Replicas)
	}
	return n
}

// WorkloadsIn returns the workloads in namespace ns, in order.
func (t Target) WorkloadsIn(ns string) []WorkloadRef {
	var out []WorkloadRef
	for _, w := range t.Workloads {
		if w.Namespace == ns {
			out = append(out, w)
		}
	}
	return out
}

// AppLabels are the labels on every object of app in run runID; their selector is Target.AppSelector.
func AppLabels(app scenario.App, runID string) map[string]string {
	return kube.MergeLabels(kube.RunLabels(runID), map[string]string{AppLabel: string(app)})
}

// AppSelector selects the pods and workloads of app in run runID.
func AppSelector(app scenario.App, runID string) string {
	return labels.Set(AppLabels(app, runID)).String()
}

// Namespaces returns the namespaces a topology uses, in placement order: "<prefix><name>" for single,
// "<prefix><name>-<i>" for multi. components is the number of services and databases of the app (multi with
// Namespaces 0 means one namespace per component; more namespaces than components are clamped).
func Namespaces(prefix string, topo scenario.Topology, components int) []string {
	if topo.Kind != scenario.TopologyMulti {
		return []string{prefix + topo.Name}
	}
	k := topo.Namespaces
	if k <= 0 || k > components {
		k = components
	}
	out := make([]string, k)
	for i := range out {
		out[i] = fmt.Sprintf("%s%s-%d", prefix, topo.Name, i)
	}
	return out
}

// placement maps component names to namespaces round-robin, and renders service addresses: short names when the
// whole app is in one namespace, FQDNs otherwise.
type placement struct {
	namespaces []string
	byName     map[string]string
	multi      bool
	domain     string
}

func newPlacement(w scenario.Workload, topo scenario.Topology, components []string) placement {
	ns := Namespaces(w.NamespacePrefix, topo, len(components))
	p := placement{namespaces: ns, byName: make(map[string]string, len(components)), multi: topo.Kind == scenario.TopologyMulti,
		domain: DomainOf(w)}
	for i, c := range components {
		p.byName[c] = ns[i%len(ns)]
	}
	return p
}

func (p placement) ns(component string) string { return p.byName[component] }

// host is the DNS name other services use to reach component.
func (p placement) host(component string) string {
	if !p.multi {
		return component
	}
	return p.fqdn(component)
}

// fqdn is component's fully qualified Service name.
func (p placement) fqdn(component string) string { return FQDN(component, p.ns(component), p.domain) }

// addr is host:port.
func (p placement) addr(component string, port int) string {
	return fmt.Sprintf("%s:%d", p.host(component), port)
}

// FQDN is the fully qualified name of a Service in a cluster whose DNS domain is domain.
func FQDN(service, namespace, domain string) string {
	return service + "." + namespace + ".svc." + domain
}

// DomainOf is the cluster DNS domain of the workload: spec.workload.clusterDomain, else ClusterDomain.
func DomainOf(w scenario.Workload) string {
	if w.ClusterDomain != "" {
		return w.ClusterDomain
	}
	return ClusterDomain
}

// withQuery appends a query parameter to a path that may already carry a query.
func withQuery(path, kv string) string {
	if strings.Contains(path, "?") {
		return path + "&" + kv
	}
	return path + "?" + kv
}

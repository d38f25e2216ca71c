package workloads

import (
	"fmt"
	"strings"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/scenario"
)

// Labels meshbench puts on the app's objects and pods (besides kube.RunLabels); their home is internal/target.
const (
	// appLabel names the catalog app on every object and pod of the app (target.AppLabel).
	appLabel = target.AppLabel
	// ComponentLabel names the service or database inside the app (target.ComponentLabel).
	ComponentLabel = target.ComponentLabel
	// clusterDomain is the DNS domain of fully qualified service addresses when the scenario names none
	// (spec.workload.clusterDomain; `meshbench run` fills it from the kubelets' configuration).
	clusterDomain = kube.DefaultClusterDomain
)

// workloadRef names one Deployment or StatefulSet of the app (target.WorkloadRef).
type workloadRef = target.WorkloadRef

// appLabels are the labels on every object of app in run runID; their selector is Target.AppSelector.
func appLabels(app scenario.App, runID string) map[string]string { return target.AppLabels(app, runID) }

// appSelector selects the pods and workloads of app in run runID.
func appSelector(app scenario.App, runID string) string { return target.AppSelector(app, runID) }

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
		domain: domainOf(w)}
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
func (p placement) fqdn(component string) string { return fqdn(component, p.ns(component), p.domain) }

// addr is host:port.
func (p placement) addr(component string, port int) string {
	return fmt.Sprintf("%s:%d", p.host(component), port)
}

// fqdn is the fully qualified name of a Service in a cluster whose DNS domain is domain.
func fqdn(service, namespace, domain string) string {
	return service + "." + namespace + ".svc." + domain
}

// domainOf is the cluster DNS domain of the workload: spec.workload.clusterDomain, else clusterDomain.
func domainOf(w scenario.Workload) string {
	if w.ClusterDomain != "" {
		return w.ClusterDomain
	}
	return clusterDomain
}

// withQuery appends a query parameter to a path that may already carry a query.
func withQuery(path, kv string) string {
	if strings.Contains(path, "?") {
		return path + "&" + kv
	}
	return path + "?" + kv
}

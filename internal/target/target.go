package target

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

// Labels meshbench puts on the app's objects and pods (besides kube.RunLabels).
const (
	// AppLabel names the catalog app ("bank-of-anthos", "fortio-chain") on every object and pod of the app.
	AppLabel = "meshbench.dev/app"
	// ComponentLabel names the service or database inside the app ("frontend", "chain-3"); with the app selector it
	// selects one workload's pods.
	ComponentLabel = "meshbench.dev/component"
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
	// EntryURL is the in-cluster URL load clients request, including the path (and, for fortio-chain, ?size=). With
	// LoadTargets it is the first load target's URL.
	EntryURL string `json:"entryURL"`
	// LoadTargets are where load goes, each with its share (load.targets of apps manifests and existing). Empty for the
	// catalog apps: their one load target is EntryURL (see LoadTargetsOrEntry).
	LoadTargets []LoadTarget `json:"loadTargets,omitempty"`
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
	// Facts are recorded with every case measured on this target (replicas, services, ...); the runner writes them.
	Facts map[results.FactKey]string `json:"-"`
}

// LoadTarget is one destination of load.
type LoadTarget struct {
	// Name labels the load target's samples.
	Name string `json:"name"`
	// URL is http://host:port/path (http), host:port (grpc) or tcp://host:port (tcp).
	URL string `json:"url"`
	// Protocol is scenario.ProtocolHTTP, ProtocolGRPC or ProtocolTCP.
	Protocol string `json:"protocol"`
	// Weight is the load target's relative share of the load (>= 1).
	Weight int `json:"weight"`
	// Headers are sent with the load target's requests besides Target.Headers.
	Headers map[string]string `json:"headers,omitempty"`
}

// LoadTargetsOrEntry are LoadTargets, or the one http load target EntryURL stands for (named after the entry service), for a
// target without them.
func (t Target) LoadTargetsOrEntry() []LoadTarget {
	if len(t.LoadTargets) > 0 {
		return t.LoadTargets
	}
	if t.EntryURL == "" {
		return nil
	}
	name := t.EntryService
	if name == "" {
		name = "entry"
	}
	return []LoadTarget{{Name: name, URL: t.EntryURL, Protocol: scenario.ProtocolHTTP, Weight: 1}}
}

// Workload kinds of WorkloadRef.Kind.
const (
	KindDeployment  = "Deployment"
	KindStatefulSet = "StatefulSet"
)

// WorkloadRef names one Deployment or StatefulSet of the app.
type WorkloadRef struct {
	Kind      string `json:"kind"` // KindDeployment | KindStatefulSet
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Replicas  int32  `json:"replicas"`
	// Selector, when set, is the label selector of the workload's pods (its spec.selector): app "existing", whose
	// pods carry none of meshbench's labels. Empty: the app selector plus ComponentLabel=Name.
	Selector string `json:"selector,omitempty"`
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

// PodSelector selects the pods of workload w: the app selector plus w's ComponentLabel (the workloads package names
// every workload after its component).
func (t Target) PodSelector(w WorkloadRef) (labels.Selector, error) {
	if w.Selector != "" {
		return labels.Parse(w.Selector)
	}
	sel, err := labels.Parse(t.AppSelector)
	if err != nil {
		return nil, err
	}
	req, err := labels.NewRequirement(ComponentLabel, "=", []string{w.Name})
	if err != nil {
		return nil, err
	}
	return sel.Add(*req), nil
}

// AppLabels are the labels on every object of app in run runID; their selector is Target.AppSelector.
func AppLabels(app scenario.App, runID string) map[string]string {
	return kube.MergeLabels(kube.RunLabels(runID), map[string]string{AppLabel: string(app)})
}

// AppSelector selects the pods and workloads of app in run runID.
func AppSelector(app scenario.App, runID string) string {
	return labels.Set(AppLabels(app, runID)).String()
}

// IsManaged reports whether a namespace was created by meshbench (its labels may change freely; a namespace that
// was not has its labels recorded and restored).
func IsManaged(ns *corev1.Namespace) bool {
	return ns != nil && ns.Labels[kube.ManagedByLabel] == kube.ManagedByValue
}

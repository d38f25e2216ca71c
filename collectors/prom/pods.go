package prom

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/meshbench/meshbench/internal/podset"
	"github.com/meshbench/meshbench/results"
)

// Scope says where the measured workload lives.
type Scope struct {
	// AppNamespaces hold the app (and the load clients).
	AppNamespaces []string
	// AppSelector selects the app's pods in AppNamespaces (label selector).
	AppSelector string
	// LoadgenSelector selects the load client pods in AppNamespaces; "" = none.
	LoadgenSelector string
	// Node adds the whole-node component of the test nodes: the nodes running the app, load client and waypoint
	// pods (the data path; ztunnel runs on every node and istiod is the control plane). Each node is measured on
	// its own (see NodeSet).
	Node bool
	// Workloads are the app's Deployments and StatefulSets: each app pod is attributed to the first that selects it,
	// so the app and sidecar figures are also given per workload (PodSet.Workloads). None: totals only.
	Workloads []Workload
	// OnlyWorkloadPods counts as the app only the pods one of Workloads selects (app existing: the app selector
	// picks every pod meshbench did not create in the user's namespaces, which may run other teams' services or
	// workloads the scenario left out of spec.workload.existing.workloads, and they are not the app's cost).
	OnlyWorkloadPods bool
	// Mesh says which shared Istio components serve the app in this case; the zero value (mode none) counts none:
	// the ztunnels and other apps' waypoints of an ambient-profile cluster are not this app's cost.
	Mesh MeshScope
}

// MeshScope selects the Istio components that serve the app under test.
type MeshScope struct {
	// Istiod counts the control plane's pods (any mesh mode). IstiodRevision restricts them to one revision
	// (istio.io/rev on the istiod pods, "default" for a non-revisioned install; "" = every istiod).
	Istiod         bool
	IstiodRevision string
	// NodeAgents counts ztunnel and istio-cni (ambient modes), on the test nodes only: a ztunnel serves every
	// ambient pod of its node, so it is shared, and a node without the app runs none of its traffic.
	NodeAgents bool
	// Waypoints are the waypoint Gateways the run created; their pods are selected by gateway-name (every Istio
	// 1.24+ waypoint pod has it; testdata/upstream/istio.yaml). A Gateway without pods is an error.
	Waypoints []NamespacedName
}

// Workload is one of the app's workloads: its key (results.WorkloadKey), namespace and pod selector.
type Workload struct {
	Key, Namespace string
	Selector       labels.Selector
}

// workloadOf is the key of the first workload of ws in namespace ns that selects p ("" for none), and a note when a
// later one selects it too (overlapping selectors: the pod is counted once, in the first).
func workloadOf(ws []Workload, ns string, p corev1.Pod) (key, note string) {
	var also []string
	for _, w := range ws {
		if w.Namespace != ns || w.Selector == nil || !w.Selector.Matches(labels.Set(p.Labels)) {
			continue
		}
		if key == "" {
			key = w.Key
		} else {
			also = append(also, w.Key)
		}
	}
	if len(also) > 0 {
		note = fmt.Sprintf("pod %s/%s is selected by workload %s and by %s: its per-workload figures count in %s only",
			ns, p.Name, key, strings.Join(also, ", "), key)
	}
	return key, note
}

// NamespacedName names one object.
type NamespacedName struct{ Namespace, Name string }

// Labels Istio's charts put on the component pods (testdata/upstream/istio.yaml, 1.24.0 ... 1.31.0-rc.0).
const (
	ztunnelSelector  = "app=ztunnel"
	istioCNISelector = "k8s-app=istio-cni-node" // istio-cni pods have no app label
	istiodSelector   = "app=istiod"             // istio=pilot only without a revision; istio=istiod with one
	gatewayNameLabel = "gateway.networking.k8s.io/gateway-name"
)

// PodLister is the part of the Kubernetes API PodSets needs.
type PodLister interface {
	List(ctx context.Context, namespace, selector string) ([]corev1.Pod, error)
	// Node reads one node (for its addresses: scrape targets name nodes by IP as often as by name).
	Node(ctx context.Context, name string) (*corev1.Node, error)
}

// KubePods lists pods with a clientset.
type KubePods struct{ Kube kubernetes.Interface }

// List lists the pods matching selector in namespace ("" = all namespaces).
func (k KubePods) List(ctx context.Context, namespace, selector string) ([]corev1.Pod, error) {
	l, err := k.Kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("list pods %q in namespace %q: %w", selector, namespace, err)
	}
	return l.Items, nil
}

// Node reads the node called name.
func (k KubePods) Node(ctx context.Context, name string) (*corev1.Node, error) {
	n, err := k.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get node %q: %w", name, err)
	}
	return n, nil
}

// splitter returns the function that reads one app namespace's app pods and load-client pods. With load clients it
// lists the namespace once and sorts its pods by the two selectors here: one request per namespace instead of two
// keeps a many-namespace collection inside client-go's rate limit, and the namespaces hold little but those pods.
func splitter(appSelector, loadgenSelector string) (func(ctx context.Context, l PodLister, ns string) (app, loadgen []corev1.Pod, err error), error) {
	if loadgenSelector == "" {
		return func(ctx context.Context, l PodLister, ns string) ([]corev1.Pod, []corev1.Pod, error) {
			app, err := l.List(ctx, ns, appSelector)
			return app, nil, err
		}, nil
	}
	appSel, err := labels.Parse(appSelector)
	if err != nil {
		return nil, fmt.Errorf("app selector %q: %w", appSelector, err)
	}
	lgSel, err := labels.Parse(loadgenSelector)
	if err != nil {
		return nil, fmt.Errorf("load client selector %q: %w", loadgenSelector, err)
	}
	return func(ctx context.Context, l PodLister, ns string) (app, loadgen []corev1.Pod, err error) {
		pods, err := l.List(ctx, ns, "")
		if err != nil {
			return nil, nil, err
		}
		for _, p := range pods {
			set := labels.Set(p.Labels)
			if lgSel.Matches(set) {
				loadgen = append(loadgen, p)
			}
			if appSel.Matches(set) {
				app = append(app, p)
			}
		}
		return app, loadgen, nil
	}, nil
}

// PodSets finds every component's pods by label (the sets and why the load clients' proxies are loadgen-proxy:
// docs/measurement.md), and with Scope.Node the nodes the app, load client and waypoint pods run on. Components
// without pods are left out; ended pods are ignored, pods being deleted kept (they ran during the window).
func PodSets(ctx context.Context, l PodLister, sc Scope) ([]podset.PodSet, error) {
	b := newSetBuilder(len(sc.Workloads) > 0)
	split, err := splitter(sc.AppSelector, sc.LoadgenSelector)
	if err != nil {
		return nil, err
	}
	for _, ns := range sc.AppNamespaces {
		appPods, lgPods, err := split(ctx, l, ns)
		if err != nil {
			return nil, err
		}
		clients := b.addClients(ns, lgPods)
		b.addApp(ns, appPods, clients, sc)
	}
	// The primary figures: a case without the app's or its proxies' CPU and memory is not measured.
	b.app.Required, b.sidecar.Required = true, true
	if err := b.addWaypoints(ctx, l, sc.Mesh.Waypoints); err != nil {
		return nil, err
	}
	var ztunnel, cni, istiod podset.PodSet
	if sc.Mesh.NodeAgents {
		if ztunnel, cni, err = b.nodeAgents(ctx, l); err != nil {
			return nil, err
		}
	}
	if sc.Mesh.Istiod {
		if istiod, err = istiodSet(ctx, l, sc.Mesh.IstiodRevision); err != nil {
			return nil, err
		}
	}
	sets := []podset.PodSet{b.app, b.sidecar, ztunnel, b.waypoint, istiod, cni, b.loadgen, b.clientProxy}
	if sc.Node {
		sets = append(sets, testNodeSet(ctx, l, b.testNodes))
	}
	out := sets[:0]
	for _, s := range sets {
		if !s.Empty() {
			for ns := range s.Pods {
				slices.Sort(s.Pods[ns])
			}
			out = append(out, s)
		}
	}
	return out, nil
}

// setBuilder gathers the sets of the app namespaces and the waypoints, and where their pods run.
type setBuilder struct {
	app, sidecar, loadgen, waypoint podset.PodSet
	// clientProxy is the clients' sidecars; in ambient modes the ztunnels of the nodes only clients run on.
	clientProxy podset.PodSet
	testNodes   []string            // where the data path runs, in the order found
	appNodes    map[string]bool     // nodes running app or waypoint pods
	clientPods  map[string][]string // node -> the load client pods on it (namespace/name)
}

func newSetBuilder(perWorkload bool) *setBuilder {
	newSet := func(component results.Component, container string) podset.PodSet {
		return podset.PodSet{Component: component, Pods: map[string][]string{}, Container: container, Allocation: &podset.Allocation{}}
	}
	b := &setBuilder{
		app: newSet(results.ComponentApp, matchNotProxy), sidecar: newSet(results.ComponentSidecar, matchProxy),
		loadgen: newSet(results.ComponentLoadgen, matchNotProxy), clientProxy: newSet(results.ComponentLoadgenProxy, matchProxy),
		waypoint: newSet(results.ComponentWaypoint, ""), appNodes: map[string]bool{}, clientPods: map[string][]string{},
	}
	if perWorkload {
		b.app.Workloads, b.sidecar.Workloads = map[string]string{}, map[string]string{}
	}
	return b
}

// addNode records the node a measured pod runs on as a test node.
func (b *setBuilder) addNode(p corev1.Pod) {
	if p.Spec.NodeName != "" && !slices.Contains(b.testNodes, p.Spec.NodeName) {
		b.testNodes = append(b.testNodes, p.Spec.NodeName)
	}
}

// noteReservation keeps, on the set a pod is counted in, that the scheduler reserves more for it than its containers
// ask.
func noteReservation(s *podset.PodSet, p corev1.Pod) {
	if n := reservationNote(p); n != "" {
		s.Notes = append(s.Notes, n)
	}
}

// addClients counts namespace ns's live load client pods (loadgen, and their sidecars as loadgen-proxy) and returns
// their names.
func (b *setBuilder) addClients(ns string, pods []corev1.Pod) map[string]bool {
	names := map[string]bool{}
	for _, p := range pods {
		if !live(p) {
			continue
		}
		b.addNode(p)
		b.clientPods[p.Spec.NodeName] = append(b.clientPods[p.Spec.NodeName], ns+"/"+p.Name)
		names[p.Name] = true
		noteReservation(&b.loadgen, p)
		b.loadgen.Pods[ns] = append(b.loadgen.Pods[ns], p.Name)
		addPod(b.loadgen.Allocation, p, notProxy)
		if hasProxy(p) {
			b.clientProxy.Pods[ns] = append(b.clientProxy.Pods[ns], p.Name)
			addPod(b.clientProxy.Allocation, p, onlyProxy)
		}
	}
	return names
}

// addApp counts namespace ns's live app pods that are not load clients (app, and their sidecars), each attributed to
// its workload; with Scope.OnlyWorkloadPods only those a workload selects.
func (b *setBuilder) addApp(ns string, pods []corev1.Pod, clients map[string]bool, sc Scope) {
	for _, p := range pods {
		if !live(p) || clients[p.Name] {
			continue
		}
		wl, wlNote := workloadOf(sc.Workloads, ns, p)
		if wl == "" && sc.OnlyWorkloadPods {
			continue
		}
		b.addNode(p)
		b.appNodes[p.Spec.NodeName] = true
		noteReservation(&b.app, p)
		b.app.Pods[ns] = append(b.app.Pods[ns], p.Name)
		addPod(b.app.Allocation, p, notProxy)
		if wlNote != "" {
			b.app.Notes = append(b.app.Notes, wlNote)
		}
		if wl != "" {
			b.app.Workloads[podset.PodKey(ns, p.Name)] = wl
		}
		if hasProxy(p) {
			b.sidecar.Pods[ns] = append(b.sidecar.Pods[ns], p.Name)
			addPod(b.sidecar.Allocation, p, onlyProxy)
			if wl != "" {
				b.sidecar.Workloads[podset.PodKey(ns, p.Name)] = wl
			}
		}
	}
}

// addWaypoints counts the live pods of the run's waypoint Gateways; a Gateway without one is an error (waypoint mode
// would read like ambient). The waypoints are required when there are any.
func (b *setBuilder) addWaypoints(ctx context.Context, l PodLister, gateways []NamespacedName) error {
	for _, gw := range gateways {
		pods, err := l.List(ctx, gw.Namespace, gatewayNameLabel+"="+gw.Name)
		if err != nil {
			return err
		}
		n := 0
		for _, p := range pods {
			if live(p) {
				b.addNode(p)
				b.appNodes[p.Spec.NodeName] = true
				b.waypoint.Pods[p.Namespace] = append(b.waypoint.Pods[p.Namespace], p.Name)
				addPod(b.waypoint.Allocation, p, allContainers)
				noteReservation(&b.waypoint, p)
				n++
			}
		}
		if n == 0 {
			return fmt.Errorf("waypoint %s/%s has no running pod (selected by %s=%s): its cost cannot be measured, and waypoint mode would read like ambient",
				gw.Namespace, gw.Name, gatewayNameLabel, gw.Name)
		}
	}
	b.waypoint.Required = len(gateways) > 0
	return nil
}

// nodeAgents (ambient modes) is the ztunnel and istio-cni sets of the test nodes. The ztunnels of the nodes only load
// clients run on replace the clients' proxies (loadgen-proxy); the others carry the app's traffic and are required.
func (b *setBuilder) nodeAgents(ctx context.Context, l PodLister) (ztunnel, cni podset.PodSet, err error) {
	onTestNodes := append([]string{}, b.testNodes...) // never nil: no test node means no node agent
	zpods, err := runningPods(ctx, l, ztunnelSelector, onTestNodes)
	if err != nil {
		return ztunnel, cni, err
	}
	ztunnel, clientZtunnels := splitClientZtunnels(zpods, b.appNodes, b.clientPods)
	if !b.clientProxy.Empty() {
		// The load generator refuses such a client (loadgen.checkClientPod): a note, should one get through.
		ztunnel.Notes = append(ztunnel.Notes, fmt.Sprintf("load client pod(s) %s have an istio-proxy sidecar in an ambient mode: it is not counted",
			strings.Join(slices.Sorted(maps.Keys(podKeys(b.clientProxy.Pods))), ", ")))
	}
	b.clientProxy = clientZtunnels
	if cni, err = clusterPods(ctx, l, results.ComponentIstioCNI, istioCNISelector, onTestNodes); err != nil {
		return ztunnel, cni, err
	}
	ztunnel.Required = true
	return ztunnel, cni, nil
}

// istiodSet is the set of the istiod pods, of one revision unless revision is "".
func istiodSet(ctx context.Context, l PodLister, revision string) (podset.PodSet, error) {
	sel := istiodSelector
	if revision != "" {
		sel += ",istio.io/rev=" + revision
	}
	return clusterPods(ctx, l, results.ComponentIstiod, sel, nil)
}

// splitClientZtunnels splits the ztunnel pods: those on nodes with load clients (clientPods: node -> namespace/name)
// but no app or waypoint pod (appNodes) are the loadgen-proxy set, the others the ztunnel set; a ztunnel serving both
// stays ztunnel, with a note. It is pure.
func splitClientZtunnels(pods []corev1.Pod, appNodes map[string]bool, clientPods map[string][]string) (app, client podset.PodSet) {
	var appPods, clientOnly []corev1.Pod
	var notes []string
	for _, p := range pods {
		node := p.Spec.NodeName
		switch {
		case len(clientPods[node]) > 0 && !appNodes[node]:
			clientOnly = append(clientOnly, p)
			continue
		case len(clientPods[node]) > 0:
			notes = append(notes, fmt.Sprintf("ztunnel %s/%s on node %s carries the load client pod(s) %s as well as the app's: its figure includes the clients' outbound proxying, which sidecar mode counts apart (%s)",
				p.Namespace, p.Name, node, strings.Join(clientPods[node], ", "), results.ComponentLoadgenProxy))
		}
		appPods = append(appPods, p)
	}
	app, client = setOf(results.ComponentZtunnel, appPods), setOf(results.ComponentLoadgenProxy, clientOnly)
	app.Notes = append(app.Notes, notes...)
	return app, client
}

// clusterPods is the set of a component's running pods in every namespace, restricted to nodes unless nodes is nil.
func clusterPods(ctx context.Context, l PodLister, component results.Component, selector string, nodes []string) (podset.PodSet, error) {
	pods, err := runningPods(ctx, l, selector, nodes)
	if err != nil {
		return podset.PodSet{}, err
	}
	return setOf(component, pods), nil
}

// runningPods are the running pods selector matches in every namespace, on nodes unless nodes is nil.
func runningPods(ctx context.Context, l PodLister, selector string, nodes []string) ([]corev1.Pod, error) {
	pods, err := l.List(ctx, "", selector)
	if err != nil {
		return nil, err
	}
	out := pods[:0]
	for _, p := range pods {
		if live(p) && (nodes == nil || slices.Contains(nodes, p.Spec.NodeName)) {
			out = append(out, p)
		}
	}
	return out, nil
}

// setOf is the set of a component's pods, every container counted. It is pure.
func setOf(component results.Component, pods []corev1.Pod) podset.PodSet {
	s := podset.PodSet{Component: component, Pods: map[string][]string{}, Allocation: &podset.Allocation{}}
	for _, p := range pods {
		s.Pods[p.Namespace] = append(s.Pods[p.Namespace], p.Name)
		addPod(s.Allocation, p, allContainers)
		if n := reservationNote(p); n != "" {
			s.Notes = append(s.Notes, n)
		}
	}
	return s
}

// testNodeSet is the node set of the named nodes, sorted; a node that cannot be read is still measured by name
// (a node label or instance="<name>" identifies it), with a note.
func testNodeSet(ctx context.Context, l PodLister, names []string) podset.PodSet {
	slices.Sort(names)
	set := podset.NodeSet()
	for _, name := range names {
		n, err := l.Node(ctx, name)
		if err != nil {
			set.Notes = append(set.Notes, fmt.Sprintf("node %s: %v: only its name can identify its series", name, err))
			set.Nodes = append(set.Nodes, podset.NodeRef{Name: name})
			continue
		}
		set.Nodes = append(set.Nodes, podset.NodeRefOf(n))
	}
	// Nodes of one host (the local cluster) each report that machine's figures: the case's facts say so.
	set.Notes = append(set.Notes, podset.SharedHostNotes(set.Nodes)...)
	return set
}

func live(p corev1.Pod) bool {
	return p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// hasProxy reports whether the pod has an istio-proxy container, as a regular container or as a native sidecar
// (an init container with restartPolicy Always).
func hasProxy(p corev1.Pod) bool {
	for _, c := range p.Spec.Containers {
		if c.Name == proxyContainer {
			return true
		}
	}
	for _, c := range p.Spec.InitContainers {
		if c.Name == proxyContainer {
			return true
		}
	}
	return false
}

// CheckRequired fails when a Required set got no figure of its own in a window (no memory average, or no CPU
// statistic): a waypoint case without waypoint samples would pass for ambient. A missing CPU average alone is only a
// warning (an idle container's sparse samples). It is pure.
func CheckRequired(sets []podset.PodSet, samples []results.Sample) error {
	var missing []string
	for _, set := range sets {
		if !set.Required {
			continue
		}
		cpu, mem := false, false
		for _, s := range samples {
			if s.Component != set.Component {
				continue
			}
			// Allocation samples (request, limit) come from the pod specs, not from measuring: they prove nothing.
			cpu = cpu || (s.Metric == results.MetricCPU && results.UsageStat(s.Stat))
			mem = mem || (s.Metric == results.MetricMemory && s.Stat == results.StatAvg)
		}
		if !cpu {
			missing = append(missing, fmt.Sprintf("%s cpu (%d pods)", set.Component, set.PodCount()))
		}
		if !mem {
			missing = append(missing, fmt.Sprintf("%s memory average (%d pods)", set.Component, set.PodCount()))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("no figure for %s: the case cannot be measured without them", strings.Join(missing, ", "))
	}
	return nil
}

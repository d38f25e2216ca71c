package mesh

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/results"
)

// IstioInfo is what Detect found about the Istio installation.
type IstioInfo struct {
	// Installed is true when at least one istiod pod exists.
	Installed bool         `json:"installed"`
	Istiods   []IstiodInfo `json:"istiods,omitempty"`
	// Version is the control plane version ("1.31-dev"), from istiod's :15014/version, else its image tag.
	Version       string `json:"version,omitempty"`
	VersionSource string `json:"versionSource,omitempty"` // "istiod /version" | "image tag"
	// ControlPlanes are every installed istiod revision and tag; the facts below are of the chosen one only, so two
	// control planes are never mixed.
	ControlPlanes ControlPlanes `json:"controlPlanes"`
	// Revision is the chosen revision ("default" for a non-revisioned install); RevisionSource says why, and
	// RevisionError why none could be chosen (several control planes and no default, or spec.istio.revision not
	// installed).
	Revision       string `json:"revision,omitempty"`
	RevisionSource string `json:"revisionSource,omitempty"`
	RevisionError  string `json:"revisionError,omitempty"`
	Namespace      string `json:"namespace,omitempty"` // istiod's namespace
	// RootNamespace is the mesh config's rootNamespace (mesh-wide policies live there; default istio-system).
	RootNamespace string `json:"rootNamespace,omitempty"`
	// PilotEnableAmbient is istiod's PILOT_ENABLE_AMBIENT.
	PilotEnableAmbient bool `json:"pilotEnableAmbient"`
	// Ztunnel and IstioCNI are the node agents' DaemonSets (nil when absent).
	Ztunnel  *DaemonSetInfo `json:"ztunnel,omitempty"`
	IstioCNI *DaemonSetInfo `json:"istioCNI,omitempty"`
	// IstioCNIEvidence says how istio-cni was found without a DaemonSet (host process: its ConfigMap, or pods it
	// annotated).
	IstioCNIEvidence string `json:"istioCNIEvidence,omitempty"`
	// HBONE is ISTIO_META_ENABLE_HBONE in the mesh config's proxyMetadata (the ambient profile sets it).
	HBONE bool `json:"hbone"`
	// AmbientCapable is PILOT_ENABLE_AMBIENT, a ztunnel and istio-cni; AmbientMissing says what is not there.
	AmbientCapable bool     `json:"ambientCapable"`
	AmbientMissing []string `json:"ambientMissing,omitempty"`
	// NativeSidecars is whether injected sidecars will be native (init containers with restartPolicy Always):
	// ENABLE_NATIVE_SIDECARS=true, or auto (the default from 1.27) with every kubelet >= 1.33.
	NativeSidecars       *bool  `json:"nativeSidecars,omitempty"`
	NativeSidecarsReason string `json:"nativeSidecarsReason,omitempty"`
	// ProxyImage is the sidecar image from the injector values (hub/image:tag[-variant]).
	ProxyImage   string         `json:"proxyImage,omitempty"`
	ZtunnelImage string         `json:"ztunnelImage,omitempty"`
	GatewayAPI   GatewayAPIInfo `json:"gatewayAPI"`
	// StandIn is true when the data plane is a hack/ test stand-in (figures are not Istio's); StandInEvidence says
	// why.
	StandIn bool `json:"standIn"`
	// DataPlanes say what runs each data-plane component: Istio's own proxies, or, on the test bed (its marker
	// ConfigMap and pod annotations), upstream Envoy or a stand-in.
	DataPlanes         []results.ComponentDataPlane `json:"dataPlanes,omitempty"`
	StandInEvidence    []string                     `json:"standInEvidence,omitempty"`
	StandInDescription string                       `json:"standInDescription,omitempty"`
	// Problems are reads that failed (e.g. forbidden); the rest of the information is still valid.
	Problems []string `json:"problems,omitempty"`

	// What the injector's values say it adds to sidecar pods: the stand-in or the upstream-Envoy annotation.
	injectsStandIn, injectsUpstreamEnvoy bool
}

// IstiodInfo is one istiod pod.
type IstiodInfo struct {
	Namespace string `json:"namespace"`
	Pod       string `json:"pod"`
	Revision  string `json:"revision,omitempty"`
	Image     string `json:"image,omitempty"`
	Ready     bool   `json:"ready"`
	Version   string `json:"version,omitempty"`
}

// DaemonSetInfo is a node agent's DaemonSet.
type DaemonSetInfo struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Image     string `json:"image,omitempty"`
	Desired   int32  `json:"desired"`
	Ready     int32  `json:"ready"`
}

// OwnNamespaces are the install's own namespaces, which no app may use beyond scenario.ProtectedNamespace: the mesh
// config's root namespace and istiod's namespace, either of which may be a custom one (not istio-*).
func (i IstioInfo) OwnNamespaces() []string {
	var out []string
	for _, ns := range []string{i.RootNamespace, i.Namespace} {
		if ns != "" && !slices.Contains(out, ns) {
			out = append(out, ns)
		}
	}
	return out
}

// Facts converts the detection into the run's results.IstioFacts.
func (i IstioInfo) Facts(profile string) *results.IstioFacts {
	if !i.Installed {
		return nil
	}
	dps := i.DataPlanes
	if len(dps) == 0 { // an IstioInfo not from Detect
		dps = dataPlanesFromMarker(nil, i.ProxyImage, i.ZtunnelImage)
	}
	dp := results.LeastRepresentative(dps)
	if i.StandIn && dp != results.DataPlaneStandIn {
		dp = results.DataPlaneStandIn
	}
	return &results.IstioFacts{DataPlanes: dps,
		Version: i.Version, Revision: i.Revision, RevisionSource: i.RevisionSource, Revisions: i.ControlPlanes.Revisions,
		RootNamespace: i.RootNamespace, Profile: profile, AmbientCapable: i.AmbientCapable,
		NativeSidecars: i.NativeSidecars, ZtunnelImage: i.ZtunnelImage, ProxyImage: i.ProxyImage, DataPlane: dp,
		GatewayAPIBundleVersion: i.GatewayAPI.BundleVersion,
	}
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// Detect reads what Istio is installed, for revision wantRevision ("" for the only or default one; what it reads:
// docs/modes.md). Only a failed istiod list is an error; an unchoosable revision is a RevisionError; other failed
// reads are listed in Problems.
func Detect(ctx context.Context, c *kube.Clients, wantRevision string) (IstioInfo, error) {
	var info IstioInfo
	cp, all, problem, err := detectControlPlanes(ctx, c.Kube)
	if err != nil {
		return info, fmt.Errorf("detect istio: %w", err)
	}
	info.ControlPlanes = cp
	if problem != "" {
		info.Problems = append(info.Problems, problem)
	}
	choice, err := resolveRevision(wantRevision, cp)
	if err != nil {
		info.RevisionError = err.Error()
	}
	info.Revision, info.RevisionSource = choice.Revision, choice.Source
	envs := readIstiods(ctx, c.Kube, revisionPods(all, choice.Revision), &info)
	info.Installed = len(cp.Revisions) > 0
	useFirstReadyIstiod(&info, envs)

	info.Ztunnel = findDaemonSet(ctx, c.Kube, "app=ztunnel", &info)
	if info.Ztunnel != nil {
		info.ZtunnelImage = info.Ztunnel.Image
	}
	info.IstioCNI = findDaemonSet(ctx, c.Kube, "k8s-app=istio-cni-node", &info)
	if info.IstioCNI == nil {
		info.IstioCNIEvidence = hostCNIEvidence(ctx, c, &info)
	}
	if info.Namespace != "" {
		detectMeshConfig(ctx, c, &info)
	}
	if info.Installed && info.RootNamespace == "" {
		// pkg/config/mesh/mesh.go DefaultMeshConfig and the istio-discovery chart (global.istioNamespace): istio-system,
		// whatever namespace istiod runs in.
		info.RootNamespace = "istio-system"
	}
	detectNativeSidecars(ctx, c, envs, &info)
	detectGatewayAPI(ctx, c, &info)
	detectStandIn(ctx, c, &info)
	info.AmbientMissing = append(info.AmbientMissing, ambientMissing(info)...)
	info.AmbientCapable = len(info.AmbientMissing) == 0
	return info, nil
}

// revisionPods are the istiod pods of revision (no label: the default revision) that are not terminating, sorted by
// namespace/name so the first ready one is the same on every call.
func revisionPods(all []corev1.Pod, revision string) []corev1.Pod {
	items := make([]corev1.Pod, 0, len(all))
	for _, p := range all {
		rev := p.Labels[LabelRevision]
		if rev == "" {
			rev = defaultRevision
		}
		if p.DeletionTimestamp == nil && rev == revision {
			items = append(items, p)
		}
	}
	sort.Slice(items, func(i, j int) bool {
		return items[i].Namespace+"/"+items[i].Name < items[j].Namespace+"/"+items[j].Name
	})
	return items
}

// readIstiods appends each pod to info.Istiods with its image and, when ready, its /version (a failed read goes to
// info.Problems). It returns the environment of the last pod's discovery container.
func readIstiods(ctx context.Context, kc kubernetes.Interface, pods []corev1.Pod, info *IstioInfo) map[string]string {
	var envs map[string]string
	for _, p := range pods {
		d := IstiodInfo{Namespace: p.Namespace, Pod: p.Name, Revision: p.Labels["istio.io/rev"], Ready: podReady(p)}
		for _, ct := range p.Spec.Containers {
			if ct.Name == "discovery" || d.Image == "" {
				d.Image = ct.Image
				if ct.Name == "discovery" {
					envs = containerEnv(ct)
				}
			}
		}
		if d.Ready {
			vctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			body, err := kube.ProxyGet(vctx, kc, "pods", p.Namespace, p.Name+":15014", "/version", nil)
			cancel()
			if err == nil {
				d.Version = parseIstiodVersion(string(body))
			} else {
				info.Problems = append(info.Problems, fmt.Sprintf("istiod %s/%s version: %v", p.Namespace, p.Name, err))
			}
		}
		info.Istiods = append(info.Istiods, d)
	}
	return envs
}

// useFirstReadyIstiod takes the namespace and version from the first ready istiod (else the first one; the image tag
// when /version gave nothing) and PILOT_ENABLE_AMBIENT from envs.
func useFirstReadyIstiod(info *IstioInfo, envs map[string]string) {
	if len(info.Istiods) == 0 {
		return
	}
	first := info.Istiods[0]
	for _, d := range info.Istiods {
		if d.Ready {
			first = d
			break
		}
	}
	info.Namespace = first.Namespace
	info.Version, info.VersionSource = first.Version, "istiod /version"
	if info.Version == "" {
		info.Version, info.VersionSource = imageTag(first.Image), "image tag"
	}
	info.PilotEnableAmbient = strings.EqualFold(envs["PILOT_ENABLE_AMBIENT"], "true")
}

// ambientMissing lists what ambient mode needs and the detection did not find, in the order a user installs it.
func ambientMissing(info IstioInfo) []string {
	var missing []string
	switch {
	case !info.Installed:
		missing = append(missing, "istiod")
	case len(info.Istiods) == 0:
		missing = append(missing, "a chosen istiod revision")
	case !info.PilotEnableAmbient:
		missing = append(missing, "PILOT_ENABLE_AMBIENT=true on istiod")
	}
	if info.Ztunnel == nil {
		missing = append(missing, "ztunnel DaemonSet (app=ztunnel)")
	} else if info.Ztunnel.Ready < info.Ztunnel.Desired {
		missing = append(missing, fmt.Sprintf("ztunnel ready on every node (%d of %d)", info.Ztunnel.Ready, info.Ztunnel.Desired))
	}
	if info.IstioCNI == nil && info.IstioCNIEvidence == "" {
		missing = append(missing, "istio-cni node agent (DaemonSet k8s-app=istio-cni-node)")
	}
	return missing
}

// parseIstiodVersion reads istiod's :15014/version body: "<version>-<git revision>-<build status>" (BuildInfo.String,
// e.g. "1.31-dev-eed52ebb66ad-Clean"), or a JSON BuildInfo from other builds. It returns the version.
func parseIstiodVersion(body string) string {
	body = strings.TrimSpace(body)
	if strings.HasPrefix(body, "{") {
		var v struct {
			Version string `json:"version"`
		}
		if json.Unmarshal([]byte(body), &v) == nil {
			return v.Version
		}
		return ""
	}
	parts := strings.Split(body, "-")
	if len(parts) >= 3 {
		return strings.Join(parts[:len(parts)-2], "-")
	}
	return body
}

func imageTag(image string) string {
	if i := strings.LastIndex(image, "@"); i >= 0 {
		image = image[:i]
	}
	i := strings.LastIndex(image, ":")
	if i < 0 || strings.Contains(image[i:], "/") {
		return ""
	}
	return strings.TrimSuffix(image[i+1:], "-distroless")
}

func containerEnv(c corev1.Container) map[string]string {
	out := map[string]string{}
	for _, e := range c.Env {
		out[e.Name] = e.Value
	}
	return out
}

// findDaemonSet finds a node agent's DaemonSet by its pods' label (Istio's charts put app=ztunnel and
// k8s-app=istio-cni-node on the pod template, not always on the DaemonSet itself).
func findDaemonSet(ctx context.Context, kc kubernetes.Interface, selector string, info *IstioInfo) *DaemonSetInfo {
	sel, err := labels.Parse(selector)
	if err != nil {
		return nil
	}
	list, err := kc.AppsV1().DaemonSets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		info.Problems = append(info.Problems, fmt.Sprintf("list DaemonSets: %v", err))
		return nil
	}
	var items []appsv1.DaemonSet
	for _, ds := range list.Items {
		if sel.Matches(labels.Set(ds.Labels)) || sel.Matches(labels.Set(ds.Spec.Template.Labels)) {
			items = append(items, ds)
		}
	}
	if len(items) == 0 {
		return nil
	}
	sort.Slice(items, func(i, j int) bool {
		return items[i].Namespace+"/"+items[i].Name < items[j].Namespace+"/"+items[j].Name
	})
	ds := items[0]
	return &DaemonSetInfo{Namespace: ds.Namespace, Name: ds.Name, Image: firstImage(ds), Desired: ds.Status.DesiredNumberScheduled, Ready: ds.Status.NumberReady}
}

func firstImage(ds appsv1.DaemonSet) string {
	if len(ds.Spec.Template.Spec.Containers) == 0 {
		return ""
	}
	return ds.Spec.Template.Spec.Containers[0].Image
}

// hostCNIEvidence finds an istio-cni agent that runs outside a DaemonSet (the local cluster runs it as a host
// process): pods it annotated with ambient.istio.io/redirection, or its istio-cni-config ConfigMap.
func hostCNIEvidence(ctx context.Context, c *kube.Clients, info *IstioInfo) string {
	pods, err := c.Kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err == nil {
		for _, p := range pods.Items {
			if v, ok := p.Annotations[AnnotationRedirection]; ok {
				return fmt.Sprintf("pod %s/%s annotated %s=%s (an istio-cni agent runs outside a DaemonSet)", p.Namespace, p.Name, AnnotationRedirection, v)
			}
		}
	} else {
		info.Problems = append(info.Problems, fmt.Sprintf("list pods: %v", err))
	}
	cms, err := c.Kube.CoreV1().ConfigMaps(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=istio-cni-config"})
	if err != nil {
		info.Problems = append(info.Problems, fmt.Sprintf("find ConfigMap istio-cni-config: %v", err))
		return ""
	}
	for _, cm := range cms.Items {
		if strings.EqualFold(cm.Data["AMBIENT_ENABLED"], "true") || cm.Data["AMBIENT_ENABLED"] == "" {
			return fmt.Sprintf("ConfigMap %s/istio-cni-config (istio-cni configured; no DaemonSet: a host-process agent is assumed)", cm.Namespace)
		}
	}
	return ""
}

// detectMeshConfig reads HBONE from ConfigMap "istio" (meshConfig proxyMetadata) and the proxy image from the
// injector values in istiod's namespace.
func detectMeshConfig(ctx context.Context, c *kube.Clients, info *IstioInfo) {
	cms := c.Kube.CoreV1().ConfigMaps(info.Namespace)
	name := "istio"
	if info.Revision != "" && info.Revision != "default" {
		name = "istio-" + info.Revision
	}
	if cm, err := cms.Get(ctx, name, metav1.GetOptions{}); err == nil {
		var mc struct {
			RootNamespace string `json:"rootNamespace"`
			DefaultConfig struct {
				ProxyMetadata map[string]string `json:"proxyMetadata"`
			} `json:"defaultConfig"`
		}
		if err := yaml.Unmarshal([]byte(cm.Data["mesh"]), &mc); err == nil {
			info.HBONE = strings.EqualFold(mc.DefaultConfig.ProxyMetadata["ISTIO_META_ENABLE_HBONE"], "true")
			info.RootNamespace = mc.RootNamespace
		}
	} else if !apierrors.IsNotFound(err) {
		info.Problems = append(info.Problems, fmt.Sprintf("read mesh config %s/%s: %v", info.Namespace, name, err))
	}
	inj := "istio-sidecar-injector"
	if info.Revision != "" && info.Revision != "default" {
		inj += "-" + info.Revision
	}
	cm, err := cms.Get(ctx, inj, metav1.GetOptions{})
	if err != nil {
		if !apierrors.IsNotFound(err) {
			info.Problems = append(info.Problems, fmt.Sprintf("read injector config %s/%s: %v", info.Namespace, inj, err))
		}
		return
	}
	info.ProxyImage = proxyImageFromValues(cm.Data["values"])
	if strings.Contains(cm.Data["values"], StandInAnnotation) || strings.Contains(cm.Data["config"], StandInAnnotation) {
		info.StandIn, info.injectsStandIn = true, true
		info.StandInEvidence = append(info.StandInEvidence, fmt.Sprintf("ConfigMap %s/%s injects %s", info.Namespace, inj, StandInAnnotation))
	}
	if strings.Contains(cm.Data["values"], DataPlaneAnnotation) || strings.Contains(cm.Data["config"], DataPlaneAnnotation) {
		info.injectsUpstreamEnvoy = true
	}
}

// proxyImageFromValues renders the sidecar image from the injector's Helm values JSON:
// global.hub/global.proxy.image:global.tag[-global.variant] (an image with a "/" is used as is).
func proxyImageFromValues(values string) string {
	var v struct {
		Global struct {
			Hub     string `json:"hub"`
			Tag     any    `json:"tag"`
			Variant string `json:"variant"`
			Proxy   struct {
				Image string `json:"image"`
			} `json:"proxy"`
		} `json:"global"`
	}
	if json.Unmarshal([]byte(values), &v) != nil {
		return ""
	}
	g := v.Global
	img := g.Proxy.Image
	if img == "" {
		img = "proxyv2"
	}
	if strings.Contains(img, "/") {
		return img
	}
	tag := fmt.Sprint(g.Tag)
	if g.Tag == nil {
		tag = ""
	}
	out := img
	if g.Hub != "" {
		out = strings.TrimSuffix(g.Hub, "/") + "/" + img
	}
	if tag != "" {
		out += ":" + tag
		if g.Variant != "" && g.Variant != "default" {
			out += "-" + g.Variant
		}
	}
	return out
}

// detectNativeSidecars decides whether injection will produce native sidecars.
func detectNativeSidecars(ctx context.Context, c *kube.Clients, envs map[string]string, info *IstioInfo) {
	if !info.Installed {
		return
	}
	nodes, err := c.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		info.Problems = append(info.Problems, fmt.Sprintf("list nodes: %v", err))
		return
	}
	allNew := len(nodes.Items) > 0
	var old []string
	for _, n := range nodes.Items {
		if !versionAtLeast(n.Status.NodeInfo.KubeletVersion, 1, 33) {
			allNew = false
			old = append(old, n.Name+" "+n.Status.NodeInfo.KubeletVersion)
		}
	}
	setting := envs["ENABLE_NATIVE_SIDECARS"]
	var native bool
	switch {
	case setting == "true":
		native, info.NativeSidecarsReason = true, "ENABLE_NATIVE_SIDECARS=true on istiod"
	case setting == "false":
		native, info.NativeSidecarsReason = false, "ENABLE_NATIVE_SIDECARS=false on istiod"
	case setting == "auto" || (setting == "" && versionAtLeast(info.Version, 1, 27)):
		native = allNew
		if allNew {
			info.NativeSidecarsReason = "ENABLE_NATIVE_SIDECARS=auto and every kubelet >= 1.33"
		} else {
			info.NativeSidecarsReason = "ENABLE_NATIVE_SIDECARS=auto but kubelets older than 1.33: " + strings.Join(old, ", ")
		}
	default:
		native, info.NativeSidecarsReason = false, "ENABLE_NATIVE_SIDECARS not set (default false before Istio 1.27)"
	}
	info.NativeSidecars = &native
}

// detectStandIn looks for the markers of hack/'s stand-in data plane: a ConfigMap labelled
// meshbench.dev/test-standin=true (the authoritative marker, in istio-system), and ztunnel or waypoint pods annotated
// with it. (The injector values are checked by detectMeshConfig.)
func detectStandIn(ctx context.Context, c *kube.Clients, info *IstioInfo) {
	var marker map[string]string
	cms, err := c.Kube.CoreV1().ConfigMaps(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: StandInAnnotation + "=true"})
	if err == nil {
		for _, cm := range cms.Items {
			if marker == nil {
				marker = cm.Data
			}
			info.StandIn = true
			info.StandInEvidence = append(info.StandInEvidence, fmt.Sprintf("marker ConfigMap %s/%s", cm.Namespace, cm.Name))
			if d := cm.Data["description"]; d != "" && info.StandInDescription == "" {
				info.StandInDescription = d
			}
		}
	} else {
		info.Problems = append(info.Problems, fmt.Sprintf("list stand-in marker ConfigMaps: %v", err))
	}
	info.DataPlanes = dataPlanesFromMarker(marker, info.ProxyImage, info.ZtunnelImage)
	if info.injectsUpstreamEnvoy {
		setDataPlane(info.DataPlanes, results.ComponentSidecar, results.DataPlaneUpstreamEnvoy,
			upstreamEnvoyDescription(marker[markerEnvoyVersion], marker[markerIstioVersion]))
	}
	if info.injectsStandIn {
		setDataPlane(info.DataPlanes, results.ComponentSidecar, results.DataPlaneStandIn, standInDescription(results.ComponentSidecar, marker))
	}
	for _, sel := range []struct {
		selector  string
		component results.Component
	}{{"app=ztunnel", results.ComponentZtunnel}, {GatewayNameLabel, results.ComponentWaypoint}} {
		pods, err := c.Kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: sel.selector})
		if err != nil {
			continue
		}
		for _, p := range pods.Items {
			switch podDataPlane(&p) {
			case results.DataPlaneStandIn:
				info.StandIn = true
				info.StandInEvidence = append(info.StandInEvidence, fmt.Sprintf("pod %s/%s annotated %s", p.Namespace, p.Name, StandInAnnotation))
				setDataPlane(info.DataPlanes, sel.component, results.DataPlaneStandIn, standInDescription(sel.component, marker))
			case results.DataPlaneUpstreamEnvoy:
				setDataPlane(info.DataPlanes, sel.component, results.DataPlaneUpstreamEnvoy,
					upstreamEnvoyDescription(marker[markerEnvoyVersion], marker[markerIstioVersion]))
			}
		}
	}
}

// setDataPlane makes component's entry kind (with desc) unless it is already at least as far from Istio's own.
func setDataPlane(dps []results.ComponentDataPlane, component results.Component, kind results.DataPlaneKind, desc string) {
	for i := range dps {
		if dps[i].Component == component && leastOf([]results.DataPlaneKind{dps[i].Kind, kind}) == kind && dps[i].Kind != kind {
			dps[i].Kind, dps[i].Description = kind, desc
		}
	}
}

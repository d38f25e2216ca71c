package mesh

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/scenario"
	"github.com/meshbench/meshbench/workloads"
)

// CheckStatus is a preflight verdict.
type CheckStatus string

// Verdicts. FAIL blocks the run (exit 2); WARN is shown with its fix but does not block.
const (
	StatusOK   CheckStatus = "OK"
	StatusWarn CheckStatus = "WARN"
	StatusFail CheckStatus = "FAIL"
)

// Check is one line of the preflight report.
type Check struct {
	Name   string      `json:"name"`
	Status CheckStatus `json:"status"`
	Detail string      `json:"detail"`
	// Fix says what to do about a WARN or FAIL.
	Fix string `json:"fix,omitempty"`
}

// Permission is one API permission a run needs (the cmd layer converts schedule.RequiredPermissions).
type Permission struct {
	Group       string
	Resource    string
	Subresource string
	Verbs       []string
	Why         string
}

// PreflightOptions configures Preflight.
type PreflightOptions struct {
	// Permissions are checked with SelfSubjectAccessReview, cluster-wide.
	Permissions []Permission
	// AllowExisting mirrors --allow-existing-namespaces: existing foreign namespaces are a WARN, not a FAIL.
	AllowExisting bool
	// SkipPrometheus skips the Prometheus check (tests).
	SkipPrometheus bool
	// Images, when set, resolves every image the scenario's pods pull (nil: not checked).
	Images ImageChecker
}

// ImageChecker resolves the images a scenario will pull, one check per image. The cmd layer adapts package images,
// so mesh does not depend on registries; nodePlatforms ("linux/amd64") are the nodes' (nil when not listed).
type ImageChecker interface {
	CheckImages(ctx context.Context, s *scenario.Scenario, nodePlatforms []string) []Check
}

// PreflightReport is the whole preflight: every check in a fixed order, and what was detected.
type PreflightReport struct {
	Scenario string          `json:"scenario"`
	Modes    []scenario.Mode `json:"modes"`
	Checks   []Check         `json:"checks"`
	Istio    *IstioInfo      `json:"istio,omitempty"`
	// KubernetesVersion is the API server's version.
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
}

// Failed reports whether any check failed: the requested run cannot work.
func (r PreflightReport) Failed() bool {
	for _, c := range r.Checks {
		if c.Status == StatusFail {
			return true
		}
	}
	return false
}

// Table renders the report for humans: one line per check, the fix indented below each WARN or FAIL.
func (r PreflightReport) Table() string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STATUS\tCHECK\tDETAIL")
	for _, c := range r.Checks {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Status, c.Name, c.Detail)
		if c.Fix != "" && c.Status != StatusOK {
			fmt.Fprintf(tw, "\t\tfix: %s\n", c.Fix)
		}
	}
	_ = tw.Flush()
	fails, warns := 0, 0
	for _, c := range r.Checks {
		switch c.Status {
		case StatusFail:
			fails++
		case StatusWarn:
			warns++
		}
	}
	switch {
	case fails > 0:
		fmt.Fprintf(&b, "\n%d FAIL, %d WARN: the run cannot work as configured (modes %v); fix the FAIL lines first.\n", fails, warns, r.Modes)
	case warns > 0:
		fmt.Fprintf(&b, "\n%d WARN: the run can start; read the warnings above.\n", warns)
	default:
		b.WriteString("\nall checks passed.\n")
	}
	return b.String()
}

// Preflight checks, without changing anything, whether scenario s can run on the cluster: Kubernetes and nodes,
// Istio presence and version, ambient capability, native sidecars, Gateway API CRDs, the stand-in marker, the app's
// namespaces, the images (o.Images), Prometheus and every permission. A check fails only when it blocks what s asks
// for (e.g. no Istio with mode sidecar). The error is for the report's own failure (cluster unreachable), not for
// failed checks.
func Preflight(ctx context.Context, c *kube.Clients, s *scenario.Scenario, o PreflightOptions) (PreflightReport, error) {
	r := PreflightReport{Scenario: s.Metadata.Name, Modes: s.Spec.Modes}
	needIstio, needAmbient, needWaypoint := false, false, false
	for _, m := range s.Spec.Modes {
		needIstio = needIstio || NeedsIstio(m)
		needAmbient = needAmbient || UsesAmbient(m)
		needWaypoint = needWaypoint || m == scenario.ModeWaypoint
	}
	add := func(ch Check) { r.Checks = append(r.Checks, ch) }

	// Kubernetes and nodes.
	sv, err := c.Kube.Discovery().ServerVersion()
	if err != nil {
		add(Check{Name: "kubernetes", Status: StatusFail, Detail: "API server unreachable: " + err.Error(), Fix: "check --kubeconfig/--context and that the cluster is up"})
		return r, nil
	}
	r.KubernetesVersion = sv.GitVersion
	nodes, err := c.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	var platforms []string
	if err != nil {
		add(Check{Name: "kubernetes", Status: StatusFail, Detail: fmt.Sprintf("%s; list nodes: %v", sv.GitVersion, err), Fix: "grant list on nodes"})
	} else {
		add(nodesCheck(sv.GitVersion, nodes.Items))
		for _, n := range nodes.Items {
			if ni := n.Status.NodeInfo; ni.OperatingSystem != "" && ni.Architecture != "" {
				platforms = append(platforms, ni.OperatingSystem+"/"+ni.Architecture)
			}
		}
	}

	// Istio.
	info, err := Detect(ctx, c, s.Spec.Istio.Revision)
	if err != nil {
		add(Check{Name: "istio", Status: StatusFail, Detail: err.Error(), Fix: "grant list on pods cluster-wide"})
	} else {
		r.Istio = &info
		r.Checks = append(r.Checks, istioChecks(info, sv.GitVersion, needIstio, needAmbient, needWaypoint)...)
		if needIstio && info.Installed && info.RevisionError == "" {
			add(mtlsCheck(ctx, c, info, appNamespaces(s)))
		}
	}

	// Namespaces.
	add(namespacesCheck(ctx, c, s, o.AllowExisting))

	// Images (from this workstation: a WARN when the registry is out of reach here).
	if o.Images != nil {
		r.Checks = append(r.Checks, o.Images.CheckImages(ctx, s, platforms)...)
	}

	// Prometheus.
	if !o.SkipPrometheus {
		add(prometheusCheck(ctx, c, s.Spec.Prometheus))
	}

	// Permissions.
	r.Checks = append(r.Checks, PermissionChecks(ctx, c, o.Permissions)...)
	return r, nil
}

func nodesCheck(version string, nodes []corev1.Node) Check {
	ready := 0
	var kubelets []string
	for _, n := range nodes {
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				ready++
			}
		}
		kubelets = append(kubelets, n.Name+" "+n.Status.NodeInfo.KubeletVersion)
	}
	sort.Strings(kubelets)
	ch := Check{Name: "kubernetes", Status: StatusOK,
		Detail: fmt.Sprintf("%s, %d nodes (%d Ready): %s", version, len(nodes), ready, strings.Join(kubelets, ", "))}
	switch {
	case ready == 0:
		ch.Status, ch.Fix = StatusFail, "no Ready node: nothing can be scheduled"
	case ready < 2:
		ch.Status, ch.Fix = StatusWarn, "one Ready node: cross-node traffic and ztunnel per-node effects are not measured"
	}
	return ch
}

// istioChecks judges the detection against what the scenario needs.
func istioChecks(i IstioInfo, k8sVersion string, needIstio, needAmbient, needWaypoint bool) []Check {
	var out []Check
	sev := func(needed bool) CheckStatus {
		if needed {
			return StatusFail
		}
		return StatusWarn
	}
	if !i.Installed {
		ch := Check{Name: "istio", Status: sev(needIstio), Detail: "no Istio control plane (no pod labelled app=istiod in any namespace)",
			Fix: "install Istio (e.g. istioctl install --set profile=ambient), or keep only mode \"none\" in spec.modes"}
		if !needIstio {
			ch.Status, ch.Fix = StatusOK, ""
			ch.Detail += "; only mode none is requested"
		}
		return append(out, ch)
	}
	ready := 0
	for _, d := range i.Istiods {
		if d.Ready {
			ready++
		}
	}
	out = append(out, revisionCheck(i, needIstio))
	if i.RevisionError != "" {
		return out // no control plane chosen: facts of another revision would be wrong
	}
	ch := Check{Name: "istio", Status: StatusOK, Detail: fmt.Sprintf("istiod %s (from %s) in %s, %d of %d pods ready",
		i.Version, i.VersionSource, i.Namespace, ready, len(i.Istiods))}
	if ready == 0 {
		ch.Status, ch.Fix = sev(needIstio), "no istiod pod is Ready: check `kubectl -n "+i.Namespace+" get pods -l app=istiod`"
	}
	out = append(out, ch)
	if minK := MinKubernetes(i.Version); minK > 0 && !versionAtLeast(k8sVersion, 1, minK) {
		out = append(out, Check{Name: "istio-kubernetes", Status: StatusWarn,
			Detail: fmt.Sprintf("Istio %s needs Kubernetes >= 1.%d (istioctl precheck), cluster is %s", i.Version, minK, k8sVersion),
			Fix:    "upgrade the cluster or use an older Istio"})
	}

	amb := Check{Name: "ambient", Status: StatusOK}
	if i.AmbientCapable {
		parts := []string{"PILOT_ENABLE_AMBIENT=true"}
		if i.Ztunnel != nil {
			parts = append(parts, fmt.Sprintf("ztunnel %s/%s %d/%d ready", i.Ztunnel.Namespace, i.Ztunnel.Name, i.Ztunnel.Ready, i.Ztunnel.Desired))
		}
		if i.IstioCNI != nil {
			parts = append(parts, fmt.Sprintf("istio-cni %s/%s %d/%d ready", i.IstioCNI.Namespace, i.IstioCNI.Name, i.IstioCNI.Ready, i.IstioCNI.Desired))
		} else {
			parts = append(parts, "istio-cni: "+i.IstioCNIEvidence)
		}
		parts = append(parts, fmt.Sprintf("HBONE in mesh config %v", i.HBONE))
		amb.Detail = strings.Join(parts, "; ")
	} else {
		amb.Status = sev(needAmbient)
		amb.Detail = "not ambient-capable: missing " + strings.Join(i.AmbientMissing, ", ")
		amb.Fix = "install the ambient profile (istioctl install --set profile=ambient), or remove ambient and waypoint from spec.modes"
		if !needAmbient {
			amb.Status, amb.Fix = StatusOK, ""
			amb.Detail += " (no ambient mode requested)"
		}
	}
	out = append(out, amb)

	if i.NativeSidecars != nil {
		out = append(out, Check{Name: "native-sidecars", Status: StatusOK,
			Detail: fmt.Sprintf("sidecars will be native=%v: %s", *i.NativeSidecars, i.NativeSidecarsReason)})
	}

	out = append(out, gatewayAPICheck(i, needWaypoint))

	if i.StandIn {
		detail := "data plane is a TEST STAND-IN (" + strings.Join(i.StandInEvidence, "; ") + ")"
		if i.StandInDescription != "" {
			detail += ": " + i.StandInDescription
		}
		out = append(out, Check{Name: "data-plane", Status: StatusWarn, Detail: detail,
			Fix: "mode switching is real, but proxy CPU/memory and latency figures are not Istio's; every report says so"})
	} else {
		out = append(out, Check{Name: "data-plane", Status: StatusOK, Detail: "proxy image " + orDash(i.ProxyImage) + ", ztunnel image " + orDash(i.ZtunnelImage)})
	}
	if len(i.Problems) > 0 {
		out = append(out, Check{Name: "istio-detection", Status: StatusWarn, Detail: strings.Join(i.Problems, "; "),
			Fix: "some facts could not be read (permissions?): the run records them as unknown"})
	}
	return out
}

// revisionCheck says which control plane the run uses and how the modes will reach it.
func revisionCheck(i IstioInfo, needIstio bool) Check {
	ch := Check{Name: "istio-revision", Status: StatusOK}
	cp := i.ControlPlanes
	installed := fmt.Sprintf("installed revisions %s%s, default injector %s", strings.Join(cp.Revisions, ", "), tagsSuffix(cp.Tags), orDash(cp.DefaultInjector))
	if i.RevisionError != "" {
		ch.Status, ch.Detail = StatusWarn, i.RevisionError
		if needIstio {
			ch.Status = StatusFail
		}
		ch.Fix = "set spec.istio.revision (" + installed + ")"
		return ch
	}
	choice := RevisionChoice{Revision: i.Revision, Source: i.RevisionSource}
	if choice.Revisioned() {
		ch.Detail = fmt.Sprintf("revision %s (%s): sidecar mode labels istio.io/rev=%s, waypoint Gateways carry istio.io/rev=%s; %s",
			choice.Revision, choice.Source, choice.Revision, choice.Revision, installed)
	} else {
		ch.Detail = fmt.Sprintf("revision %s (%s): sidecar mode labels istio-injection=enabled; %s", choice.Revision, choice.Source, installed)
		if cp.DefaultInjector == "" && len(cp.Tags) == 0 && len(cp.Revisions) > 0 {
			ch.Status = StatusWarn
			ch.Fix = "no webhook serves istio-injection=enabled (no namespace.sidecar-injector.istio.io): sidecar injection may not happen"
		}
	}
	return ch
}

// gatewayAPICheck mirrors what istiod checks: the Gateway CRD must be served for waypoints (any bundle-version: istiod
// accepts it without one); CRDs istiod has a minimum for and ignores below it are a WARN (meshbench uses none of
// them, other workloads might).
func gatewayAPICheck(i IstioInfo, needWaypoint bool) Check {
	g := i.GatewayAPI
	gw := Check{Name: "gateway-api", Status: StatusOK}
	if !g.Installed {
		gw.Status, gw.Detail = StatusOK, "Gateway API CRDs not installed (no waypoint mode requested)"
		if needWaypoint {
			gw.Status, gw.Detail = StatusFail, "Gateway API CRDs not installed: waypoints are gateway.networking.k8s.io/v1 Gateways"
			gw.Fix = "install the standard-channel CRDs (kubectl apply --server-side -f https://github.com/kubernetes-sigs/gateway-api/releases/download/<version>/standard-install.yaml)"
		}
		return gw
	}
	bundle := g.BundleVersion
	if bundle == "" {
		bundle = "no bundle-version annotation (istiod accepts the Gateway CRD without one)"
	} else {
		bundle = "bundle-version " + bundle + " (" + orDash(g.Channel) + " channel)"
	}
	gw.Detail = fmt.Sprintf("Gateway CRD served, %s; GatewayClass %s present: %v", bundle, WaypointClass, g.WaypointClass)
	if mins := IstiodMinimumCRDs(i.Version); len(mins) > 0 {
		var parts []string
		for _, n := range sortedKeys(mins) {
			parts = append(parts, strings.TrimSuffix(n, ".gateway.networking.k8s.io")+" >= "+mins[n])
		}
		gw.Detail += fmt.Sprintf("; Istio %s has minimums only for %s", i.Version, strings.Join(parts, ", "))
	}
	switch {
	case !g.WaypointClass && needWaypoint:
		gw.Status, gw.Fix = StatusWarn, "istiod has not created GatewayClass "+WaypointClass+" (ambient disabled?): waypoints will not be programmed"
	case len(g.Ignored) > 0:
		gw.Status = StatusWarn
		gw.Detail += "; istiod ignores " + strings.Join(g.Ignored, ", ")
		gw.Fix = "meshbench uses none of these CRDs; upgrade them if other workloads need them"
	}
	return gw
}

// mtlsCheck records the PeerAuthentication mode the app's namespaces will have (mesh-wide policy in the root
// namespace, namespace-wide ones in existing app namespaces). It never blocks: STRICT is what many production meshes
// run, and meshbench's load clients and logins run inside the mesh.
func mtlsCheck(ctx context.Context, c *kube.Clients, i IstioInfo, namespaces []string) Check {
	ms, err := DetectMTLS(ctx, c.Istio, i.RootNamespace, namespaces)
	if err != nil {
		return Check{Name: "mtls", Status: StatusWarn, Detail: err.Error(), Fix: "grant list on peerauthentications.security.istio.io; the effective mTLS mode is recorded as unknown"}
	}
	detail := "effective PeerAuthentication mode of the app namespaces: " + SummarizeMTLS(ms)
	if len(ms) == 0 {
		detail = "no app namespaces"
	}
	return Check{Name: "mtls", Status: StatusOK, Detail: detail + " (root namespace " + i.RootNamespace + ")"}
}

// appNamespaces are the namespaces of every topology of the scenario, in plan order ("" entries never).
func appNamespaces(s *scenario.Scenario) []string {
	var all []string
	for _, topo := range s.Spec.Workload.Topologies {
		_, t, err := workloads.Objects(s, topo, "preflight")
		if err != nil {
			continue // namespacesCheck reports it
		}
		all = append(all, t.Namespaces...)
	}
	return all
}

func namespacesCheck(ctx context.Context, c *kube.Clients, s *scenario.Scenario, allowExisting bool) Check {
	var all []string
	for _, topo := range s.Spec.Workload.Topologies {
		_, t, err := workloads.Objects(s, topo, "preflight")
		if err != nil {
			return Check{Name: "namespaces", Status: StatusFail, Detail: err.Error()}
		}
		all = append(all, t.Namespaces...)
	}
	foreign, err := workloads.CheckNamespaces(ctx, c.Kube, all, true)
	if err != nil {
		return Check{Name: "namespaces", Status: StatusFail, Detail: err.Error(), Fix: "run `meshbench cleanup` or wait for the deletion"}
	}
	if len(foreign) == 0 {
		return Check{Name: "namespaces", Status: StatusOK, Detail: fmt.Sprintf("%d app namespaces free or created by meshbench: %s", len(all), strings.Join(all, ", "))}
	}
	var names []string
	for n := range foreign {
		names = append(names, n)
	}
	sort.Strings(names)
	ch := Check{Name: "namespaces", Status: StatusFail,
		Detail: fmt.Sprintf("existing namespaces not created by meshbench: %s", strings.Join(names, ", ")),
		Fix:    "pick another spec.workload.namespacePrefix, or pass --allow-existing-namespaces (their labels are recorded and restored)"}
	if allowExisting {
		ch.Status = StatusWarn
		ch.Fix = "--allow-existing-namespaces: the app goes into them; mode labels meshbench changes are recorded in namespace-labels.json and restored"
	}
	return ch
}

func prometheusCheck(ctx context.Context, c *kube.Clients, p scenario.Prometheus) Check {
	if p.URL == "" && p.Service == nil {
		return Check{Name: "prometheus", Status: StatusWarn, Detail: "no Prometheus configured: resource usage comes from the kubelets' resource metrics (coarser)",
			Fix: "set spec.prometheus.url or spec.prometheus.service for cAdvisor series"}
	}
	pr, err := ProbePrometheus(ctx, p, c.Config)
	if err != nil {
		return Check{Name: "prometheus", Status: StatusFail, Detail: err.Error(), Fix: "check spec.prometheus (URL reachable from here, or the Service through the API server)"}
	}
	switch {
	case pr.Series == 0:
		return Check{Name: "prometheus", Status: StatusFail, Detail: fmt.Sprintf("%s answers but has no cAdvisor series (container_memory_working_set_bytes)", pr.Address),
			Fix: "add the kubelet cAdvisor scrape job (/metrics/cadvisor) to Prometheus"}
	case pr.Labelled == 0:
		return Check{Name: "prometheus", Status: StatusFail, Detail: fmt.Sprintf("%s: %d cAdvisor series but none with pod and container labels", pr.Address, pr.Series),
			Fix: "keep the pod/container labels in the cAdvisor job's relabelling"}
	}
	ch := Check{Name: "prometheus", Status: StatusOK, Detail: fmt.Sprintf("%s: %d cAdvisor container series with pod/container labels", pr.Address, pr.Labelled)}
	if len(pr.Warnings) > 0 {
		ch.Status, ch.Fix = StatusWarn, "Prometheus warnings: "+strings.Join(pr.Warnings, "; ")
	}
	return ch
}

// PermissionChecks asks the API server (SelfSubjectAccessReview, cluster-wide) for every verb of every permission.
// One check per permission; FAIL lists the denied verbs and why the run needs them.
func PermissionChecks(ctx context.Context, c *kube.Clients, perms []Permission) []Check {
	if len(perms) == 0 {
		return []Check{{Name: "permissions", Status: StatusWarn, Detail: "no permission list given: not checked"}}
	}
	var out []Check
	allowed := 0
	for _, p := range perms {
		name := p.Resource
		if p.Subresource != "" {
			name += "/" + p.Subresource
		}
		if p.Group != "" {
			name += "." + p.Group
		}
		var denied []string
		var errs []string
		for _, v := range p.Verbs {
			rev := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
				ResourceAttributes: &authorizationv1.ResourceAttributes{Group: p.Group, Resource: p.Resource, Subresource: p.Subresource, Verb: v},
			}}
			res, err := c.Kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, rev, metav1.CreateOptions{})
			switch {
			case err != nil:
				errs = append(errs, v+": "+err.Error())
			case !res.Status.Allowed:
				denied = append(denied, v)
			}
		}
		switch {
		case len(errs) > 0:
			out = append(out, Check{Name: "permission " + name, Status: StatusFail, Detail: "cannot check: " + strings.Join(errs, "; "),
				Fix: "grant create on selfsubjectaccessreviews.authorization.k8s.io"})
		case len(denied) > 0:
			out = append(out, Check{Name: "permission " + name, Status: StatusFail,
				Detail: fmt.Sprintf("denied: %s (needed to %s)", strings.Join(denied, ", "), p.Why),
				Fix:    fmt.Sprintf("grant %s on %s cluster-wide (meshbench schedule generates the ClusterRole)", strings.Join(p.Verbs, ","), name)})
		default:
			allowed++
		}
	}
	if len(out) == 0 {
		return []Check{{Name: "permissions", Status: StatusOK, Detail: fmt.Sprintf("all %d permissions allowed (SelfSubjectAccessReview)", allowed)}}
	}
	slices.SortStableFunc(out, func(a, b Check) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

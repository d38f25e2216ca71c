package preflight

import (
	"context"
	"errors"
	"fmt"
	"github.com/meshbench/meshbench/internal/verdict"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshbench/meshbench/collectors/prom"
	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/mesh"
	"github.com/meshbench/meshbench/scenario"
	"github.com/meshbench/meshbench/schedule"
	"github.com/meshbench/meshbench/workloads"
)

// Status is a check's verdict (internal/verdict, the same values the image checks give).
type Status = verdict.Status

// Verdicts. FAIL blocks the run (exit 2); WARN is shown with its fix but does not block.
const (
	StatusOK   = verdict.OK
	StatusWarn = verdict.Warn
	StatusFail = verdict.Fail
)

// Check is one line of the preflight report.
type Check struct {
	Name   string `json:"name"`
	Status Status `json:"status"`
	Detail string `json:"detail"`
	// Fix says what to do about a WARN or FAIL.
	Fix string `json:"fix,omitempty"`
}

// Options configures Run.
type Options struct {
	// Permissions are checked with SelfSubjectAccessReview, cluster-wide (the CLI passes schedule.RequiredPermissions).
	Permissions []schedule.Permission
	// AllowExisting mirrors --allow-existing-namespaces: existing foreign namespaces are a WARN, not a FAIL.
	AllowExisting bool
	// SkipPrometheus skips the Prometheus check (tests).
	SkipPrometheus bool
	// Images, when set, resolves every image the scenario's pods pull (nil: not checked).
	Images ImageChecker
}

// ImageChecker resolves the images a scenario will pull, one check per image. The cmd layer adapts package images,
// so preflight does not depend on registries; nodePlatforms ("linux/amd64") are the nodes' (nil when not listed).
type ImageChecker interface {
	CheckImages(ctx context.Context, s *scenario.Scenario, nodePlatforms []string) []Check
}

// Report is the whole preflight: every check in a fixed order, and what was detected.
type Report struct {
	Scenario string          `json:"scenario"`
	Modes    []scenario.Mode `json:"modes"`
	Checks   []Check         `json:"checks"`
	Istio    *mesh.IstioInfo `json:"istio,omitempty"`
	// KubernetesVersion is the API server's version.
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
}

// Failed reports whether any check failed: the requested run cannot work.
func (r Report) Failed() bool {
	for _, c := range r.Checks {
		if c.Status == StatusFail {
			return true
		}
	}
	return false
}

// Table renders the report for humans: one line per check, the fix indented below each WARN or FAIL.
func (r Report) Table() string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STATUS\tCHECK\tDETAIL")
	for _, c := range r.Checks {
		// A detail of several lines (existing app changes) continues under DETAIL.
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Status, c.Name, strings.ReplaceAll(c.Detail, "\n", "\n\t\t"))
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

// Run checks, without changing anything, whether scenario s can run on the cluster. A check fails only when it
// blocks what s asks for (e.g. no Istio with mode sidecar); the error is for the report's own failure (cluster
// unreachable), not for failed checks.
func Run(ctx context.Context, c *kube.Clients, s *scenario.Scenario, o Options) (Report, error) {
	r := Report{Scenario: s.Metadata.Name, Modes: s.Spec.Modes}
	needIstio, needAmbient, needWaypoint := false, false, false
	for _, m := range s.Spec.Modes {
		needIstio = needIstio || mesh.NeedsIstio(m)
		needAmbient = needAmbient || mesh.UsesAmbient(m)
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
	info, err := mesh.Detect(ctx, c, s.Spec.Istio.Revision)
	if err != nil {
		add(Check{Name: "istio", Status: StatusFail, Detail: err.Error(), Fix: "grant list on pods cluster-wide"})
	} else {
		r.Istio = &info
		r.Checks = append(r.Checks, istioChecks(info, sv.GitVersion, needIstio, needAmbient, needWaypoint)...)
		if needIstio && info.Installed && info.RevisionError == "" {
			add(mtlsCheck(ctx, c, info, appNamespaces(s), s.Spec.Modes))
		}
	}

	// Namespaces. App existing lives in the user's namespaces: instead of "free or meshbench's", what the run will
	// change in them (labels, restarts), read-only.
	var own []string // the install's namespaces (a custom root namespace): refused like kube-system
	if r.Istio != nil {
		own = r.Istio.OwnNamespaces()
	}
	if s.Spec.Workload.App == scenario.AppExisting {
		rev := s.Spec.Istio.Revision
		if r.Istio != nil && r.Istio.RevisionError == "" && r.Istio.Revision != "" {
			rev = r.Istio.Revision // what the run's Switcher labels with (orchestrate passes the detected revision)
		}
		add(existingCheck(ctx, c, s, rev, own...))
	} else {
		add(namespacesCheck(ctx, c, s, o.AllowExisting, own...))
	}

	// Images (from this workstation: a WARN when the registry is out of reach here).
	if o.Images != nil {
		r.Checks = append(r.Checks, o.Images.CheckImages(ctx, s, platforms)...)
	}

	// Prometheus.
	if !o.SkipPrometheus {
		add(prometheusCheck(ctx, c, s.Spec.Prometheus))
	}

	// Permissions.
	r.Checks = append(r.Checks, permissionChecks(ctx, c, o.Permissions)...)
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

// appNamespaces are the namespaces of every topology of the scenario, in plan order ("" entries never).
func appNamespaces(s *scenario.Scenario) []string {
	if s.Spec.Workload.App == scenario.AppExisting && s.Spec.Workload.Existing != nil {
		return append([]string(nil), s.Spec.Workload.Existing.Namespaces...)
	}
	var all []string
	r := new(workloads.Renderer) // app manifests: read once for every topology
	for _, topo := range s.Spec.Workload.Topologies {
		_, t, err := r.Objects(s, topo, "preflight")
		if err != nil {
			continue // namespacesCheck reports it
		}
		all = append(all, t.Namespaces...)
	}
	return all
}

func namespacesCheck(ctx context.Context, c *kube.Clients, s *scenario.Scenario, allowExisting bool, protected ...string) Check {
	var all []string
	r := new(workloads.Renderer) // app manifests: read once for every topology
	for _, topo := range s.Spec.Workload.Topologies {
		_, t, err := r.Objects(s, topo, "preflight")
		if err != nil {
			return Check{Name: "namespaces", Status: StatusFail, Detail: err.Error()}
		}
		all = append(all, t.Namespaces...)
	}
	foreign, err := workloads.CheckNamespaces(ctx, c.Kube, all, "", true, protected...)
	if errors.Is(err, scenario.ErrProtectedNamespace) {
		return Check{Name: "namespaces", Status: StatusFail, Detail: err.Error(), Fix: "rename the topology or spec.workload.namespacePrefix"}
	}
	if errors.Is(err, workloads.ErrAnotherRunsNamespace) {
		return Check{Name: "namespaces", Status: StatusFail, Detail: err.Error(), Fix: "`meshbench cleanup --run <id>` once that run is over, or another spec.workload.namespacePrefix"}
	}
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
	pr, err := prom.ProbeCAdvisor(ctx, prom.ConfigFor(p, c.Config), p.Timeout.Duration)
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
	if p.InsecureSkipVerify { // off only on request, and said wherever it is in effect
		ch.Status = StatusWarn
		ch.Detail += "; TLS verification is off (spec.prometheus.insecureSkipVerify)"
		ch.Fix = strings.TrimPrefix(ch.Fix+"; verify the server with spec.prometheus.caFile instead of insecureSkipVerify", "; ")
	}
	return ch
}

// permissionChecks asks the API server (SelfSubjectAccessReview, cluster-wide) for every verb of every permission.
// One check per permission; FAIL lists the denied verbs and why the run needs them.
func permissionChecks(ctx context.Context, c *kube.Clients, perms []schedule.Permission) []Check {
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

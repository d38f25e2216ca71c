//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/scenario"
	"github.com/meshbench/meshbench/schedule"
)

func scheduleObjects(t *testing.T, ns string) []runtime.Object {
	t.Helper()
	s, err := scenario.Load(filepath.Join("..", "..", "schedule", "testdata", "scenario.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := schedule.Objects(schedule.Options{
		Scenario: s, Namespace: ns, Image: "ghcr.io/meshbench/meshbench:v0.1.0",
		PVC: "meshbench-runs", PVCSize: "1Gi", Push: "http://pushgateway.monitoring:9091",
		Baseline: "baseline", FailIf: []string{"cpu.sidecar > +10%", "latency.p99.ambient > +1ms"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// TestScheduleServerDryRun creates every object `meshbench schedule` emits with a server-side dry run: the API
// server validates and admits them (CronJob schedule, RBAC rules, PVC, ConfigMap) without persisting anything. The
// Namespace and the cluster-scoped objects get a run-unique name so an installed schedule cannot collide.
func TestScheduleServerDryRun(t *testing.T) {
	c := RequireCluster(t)
	ns := c.CreateNamespace(t, "schedule")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: kube.FieldManager}
	for _, obj := range scheduleObjects(t, ns) {
		var err error
		var what string
		switch o := obj.(type) {
		case *corev1.Namespace:
			o.Name = "meshbench-" + c.RunID
			what = "Namespace " + o.Name
			_, err = c.Client.CoreV1().Namespaces().Create(ctx, o, dry)
		case *corev1.ServiceAccount:
			what = "ServiceAccount " + o.Name
			_, err = c.Client.CoreV1().ServiceAccounts(ns).Create(ctx, o, dry)
		case *rbacv1.ClusterRole:
			o.Name += "-" + c.RunID
			what = "ClusterRole " + o.Name
			_, err = c.Client.RbacV1().ClusterRoles().Create(ctx, o, dry)
		case *rbacv1.ClusterRoleBinding:
			o.Name += "-" + c.RunID
			what = "ClusterRoleBinding " + o.Name
			_, err = c.Client.RbacV1().ClusterRoleBindings().Create(ctx, o, dry)
		case *corev1.ConfigMap:
			what = "ConfigMap " + o.Name
			_, err = c.Client.CoreV1().ConfigMaps(ns).Create(ctx, o, dry)
		case *corev1.PersistentVolumeClaim:
			what = "PersistentVolumeClaim " + o.Name
			_, err = c.Client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, o, dry)
		case *batchv1.CronJob:
			what = "CronJob " + o.Name
			_, err = c.Client.BatchV1().CronJobs(ns).Create(ctx, o, dry)
		default:
			t.Fatalf("unexpected object %T: extend this test", obj)
		}
		if err != nil {
			t.Errorf("server-side dry-run create of %s: %v", what, err)
		} else {
			t.Logf("dry-run created %s", what)
		}
	}
}

// TestScheduleApplyDryRun runs the --apply --dry-run code path (server-side apply, field manager meshbench).
func TestScheduleApplyDryRun(t *testing.T) {
	c := RequireCluster(t)
	ns := c.CreateNamespace(t, "schedule-apply")
	clients, err := kube.NewClientsForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	ap := kube.Applier{Dynamic: clients.Dynamic, Mapper: clients.Mapper, DryRun: true}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, obj := range scheduleObjects(t, ns) {
		if _, err := ap.Apply(ctx, obj); err != nil {
			t.Errorf("server-side apply (dry run): %v", err)
		}
	}
}

// scheduleServiceAccount creates, in ns, the ServiceAccount `meshbench schedule` generates and binds it for real to
// the generated ClusterRole (cluster-scoped objects renamed per test process and removed when the test ends); it
// returns when the binding is in effect. allowed asks the API server (SubjectAccessReview) whether that
// ServiceAccount may do a thing.
func scheduleServiceAccount(ctx context.Context, t *testing.T, c *Cluster, ns string) (sa *corev1.ServiceAccount, allowed func(group, resource, sub, verb, namespace string) (bool, string)) {
	t.Helper()
	var role *rbacv1.ClusterRole
	var binding *rbacv1.ClusterRoleBinding
	for _, obj := range scheduleObjects(t, ns) {
		switch o := obj.(type) {
		case *rbacv1.ClusterRole:
			role = o
		case *rbacv1.ClusterRoleBinding:
			binding = o
		case *corev1.ServiceAccount:
			sa = o
		}
	}
	role.Name += "-" + c.RunID + "-" + ns
	binding.Name += "-" + c.RunID + "-" + ns
	binding.RoleRef.Name = role.Name
	binding.Labels = c.Labels(binding.Labels) // cluster-scoped: labelled so a crashed test is swept by cleanup
	role.Labels = c.Labels(role.Labels)
	if _, err := c.Client.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Client.RbacV1().ClusterRoles().Delete(context.Background(), role.Name, metav1.DeleteOptions{})
	})
	if _, err := c.Client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Client.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
	})

	user := fmt.Sprintf("system:serviceaccount:%s:%s", ns, sa.Name)
	groups := []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}
	allowed = func(group, resource, sub, verb, namespace string) (bool, string) {
		r, err := c.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: groups, ResourceAttributes: &authorizationv1.ResourceAttributes{
				Group: group, Resource: resource, Subresource: sub, Verb: verb, Namespace: namespace}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("SubjectAccessReview: %v", err)
		}
		return r.Status.Allowed, r.Status.Reason
	}
	// RBAC is cached by the authorizer: wait until the binding is effective.
	deadline := time.Now().Add(30 * time.Second)
	for ok, _ := allowed("", "nodes", "", "list", ""); !ok; ok, _ = allowed("", "nodes", "", "list", "") {
		if time.Now().After(deadline) {
			t.Fatal("the ClusterRoleBinding never took effect")
		}
		time.Sleep(500 * time.Millisecond)
	}
	return sa, allowed
}

// TestScheduleRBACGrantsTheTable binds the generated ClusterRole to the generated ServiceAccount for real and asks the
// API server (SubjectAccessReview) whether that ServiceAccount may do each thing in schedule.RequiredPermissions, and
// may not do a few things a run never needs.
func TestScheduleRBACGrantsTheTable(t *testing.T) {
	c := RequireCluster(t)
	ns := c.CreateNamespace(t, "schedule-rbac")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, allowed := scheduleServiceAccount(ctx, t, c, ns)
	for _, p := range schedule.RequiredPermissions {
		for _, verb := range p.Verbs {
			// Namespaced resources are checked in an app namespace the run would create.
			if ok, reason := allowed(p.Group, p.Resource, p.Subresource, verb, "mb-app-ns"); !ok {
				t.Errorf("%s %s/%s denied: %s", verb, p.Group, p.ResourceName(), reason)
			}
		}
	}
	// Things a run never does. Each is first checked against the table, so a later change to the table that needs
	// one of them fails here by naming the entry to drop (as pods create and secrets list once did: the CNI test pods
	// and the teardown sweep need them now), not with a vague "grants more than the table".
	for _, deny := range []struct{ group, resource, sub, verb string }{
		{"", "nodes", "", "delete"}, {"", "nodes", "", "patch"}, {"rbac.authorization.k8s.io", "clusterroles", "", "create"},
		{"rbac.authorization.k8s.io", "clusterrolebindings", "", "create"}, {"apps", "daemonsets", "", "delete"},
		{"", "secrets", "", "watch"}, {"", "pods", "", "update"}, {"", "pods", "eviction", "create"},
		{"", "serviceaccounts", "token", "create"}, {"admissionregistration.k8s.io", "mutatingwebhookconfigurations", "", "patch"},
	} {
		if tableGrants(deny.group, deny.resource, deny.sub, deny.verb) {
			t.Errorf("the deny list has %s %s/%s/%s but schedule.RequiredPermissions needs it: drop it from this list", deny.verb, deny.group, deny.resource, deny.sub)
			continue
		}
		if ok, _ := allowed(deny.group, deny.resource, deny.sub, deny.verb, "mb-app-ns"); ok {
			t.Errorf("%s %s/%s/%s is allowed; the role grants more than the table", deny.verb, deny.group, deny.resource, deny.sub)
		}
	}
}

// tableGrants says whether schedule.RequiredPermissions has verb on group/resource/sub.
func tableGrants(group, resource, sub, verb string) bool {
	for _, p := range schedule.RequiredPermissions {
		if p.Group == group && p.Resource == resource && p.Subresource == sub && slices.Contains(p.Verbs, verb) {
			return true
		}
	}
	return false
}

package workloads

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/scenario"
)

func TestCheckNamespaces(t *testing.T) {
	t.Parallel()
	now := metav1.Now()
	kc := fake.NewClientset(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ours", Labels: kube.RunLabels("this-run")}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "other-run", Labels: kube.RunLabels("old-run")}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "theirs", Labels: map[string]string{"team": "a"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "dying", Labels: kube.RunLabels("x"), DeletionTimestamp: &now, Finalizers: []string{"kubernetes"}}},
	)
	ctx := context.Background()
	if f, err := CheckNamespaces(ctx, kc, []string{"ours", "new"}, "this-run", false); err != nil || len(f) != 0 {
		t.Errorf("own (a resumed run) and missing namespaces: foreign=%v err=%v", f, err)
	}
	_, err := CheckNamespaces(ctx, kc, []string{"ours", "theirs"}, "this-run", false)
	if err == nil || !strings.Contains(err.Error(), "--allow-existing-namespaces") || !strings.Contains(err.Error(), "theirs") {
		t.Errorf("foreign namespace must be refused with the fix, got %v", err)
	}
	f, err := CheckNamespaces(ctx, kc, []string{"theirs"}, "this-run", true)
	if err != nil || !f["theirs"] {
		t.Errorf("allowed foreign namespace: foreign=%v err=%v", f, err)
	}
	if _, err := CheckNamespaces(ctx, kc, []string{"dying"}, "this-run", true); err == nil || !strings.Contains(err.Error(), "being deleted") {
		t.Errorf("terminating namespace: %v", err)
	}
	// Another run's namespace: refused even with --allow-existing-namespaces (and by preflight, runID ""), naming
	// the run and the cleanup that removes what it left.
	for _, runID := range []string{"this-run", ""} {
		for _, allow := range []bool{false, true} {
			_, err := CheckNamespaces(ctx, kc, []string{"ours", "other-run"}, runID, allow)
			if !errors.Is(err, ErrAnotherRunsNamespace) || !strings.Contains(err.Error(), "other-run (run old-run)") ||
				!strings.Contains(err.Error(), "meshbench cleanup --run old-run") {
				t.Errorf("run %q allow %v: another run's namespace: %v", runID, allow, err)
			}
		}
	}
}

func TestCheckReadinessAndWaitTimeout(t *testing.T) {
	t.Parallel()
	s := mustScenario(t, chainScenario)
	_, tg, err := Objects(s, s.Spec.Workload.Topologies[0], "r1")
	if err != nil {
		t.Fatal(err)
	}
	one := int32(1)
	var objs []corev1.Pod
	kc := fake.NewClientset()
	ctx := context.Background()
	for i, w := range tg.Workloads {
		dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: w.Name, Namespace: w.Namespace, Labels: appLabels(scenario.AppFortioChain, "r1")},
			Spec:   appsv1.DeploymentSpec{Replicas: &one},
			Status: appsv1.DeploymentStatus{Replicas: 1, UpdatedReplicas: 1, AvailableReplicas: 1, ReadyReplicas: 1}}
		if _, err := kc.AppsV1().Deployments(w.Namespace).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: w.Name + "-abc", Namespace: w.Namespace, Labels: appLabels(scenario.AppFortioChain, "r1")},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
		if i == 2 {
			p.Spec.NodeName = "node2"
			p.Status.Conditions[0].Status = corev1.ConditionFalse
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Image: "meshbench.local/agent:dev",
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "not found"}}}}
		}
		objs = append(objs, p)
		if _, err := kc.CoreV1().Pods(w.Namespace).Create(ctx, &p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	d := &Deployer{Clients: &kube.Clients{Kube: kc}, RunID: "r1"}
	err = d.WaitReady(ctx, tg, 300*time.Millisecond)
	var nre *target.NotReadyError
	if !errors.As(err, &nre) {
		t.Fatalf("want NotReadyError, got %v", err)
	}
	msg := err.Error()
	for _, want := range []string{"6 of 7 pods ready", "mb-single/chain-2-abc (node node2): container app: ErrImagePull for image meshbench.local/agent:dev"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	// Fix the pod: WaitReady returns as soon as the watch reports it.
	p := objs[2]
	p.Status.Conditions[0].Status = corev1.ConditionTrue
	p.Status.ContainerStatuses = nil
	done := make(chan error, 1)
	go func() { done <- d.WaitReady(ctx, tg, 10*time.Second) }()
	time.Sleep(100 * time.Millisecond)
	if _, err := kc.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, &p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("WaitReady after fix: %v", err)
		}
	case <-time.After(4 * time.Second):
		t.Fatal("WaitReady did not react to the pod update within 4s (before the 5s resync)")
	}
}

func TestJWTKeyRoundTrip(t *testing.T) {
	t.Parallel()
	k, err := GenerateJWTKey(nil, 1024) // 4096 in production; small here for speed
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(k.PrivatePEM, "-----BEGIN RSA PRIVATE KEY-----") || !strings.HasPrefix(k.PublicPEM, "-----BEGIN PUBLIC KEY-----") {
		t.Fatalf("unexpected PEM: %q / %q", k.PrivatePEM[:40], k.PublicPEM[:30])
	}
	if _, err := parseJWTKey([]byte(k.PrivatePEM), []byte(k.PublicPEM)); err != nil {
		t.Fatal(err)
	}
	other, _ := GenerateJWTKey(nil, 1024)
	if _, err := parseJWTKey([]byte(k.PrivatePEM), []byte(other.PublicPEM)); err == nil {
		t.Error("mismatched key pair accepted")
	}
}

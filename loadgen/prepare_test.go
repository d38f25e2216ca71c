package loadgen

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/scenario"
)

// Prepare waits for exactly the desired client pods of its own preparation; without them it ends at its timeout
// with a typed timeout and the last reason, and at once when ctx ends.
func TestPrepareWaits(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // guard only
	t.Cleanup(cancel)                                                     // after the parallel subtests

	t.Run("pods of this preparation become ready", func(t *testing.T) {
		t.Parallel()
		kc := fake.NewClientset()
		c := &Cluster{Kube: kc, RunID: "r1", Clients: 2, ReadyTimeout: 30 * time.Second}
		go func() { // the Deployment controller and kubelet: ready pods from the current template
			for ctx.Err() == nil {
				d, err := kc.AppsV1().Deployments("mb-single").Get(ctx, DeploymentName, metav1.GetOptions{})
				if err == nil {
					for _, n := range []string{"lg-a", "lg-b"} {
						p := clientPod(n, scenario.ModeNone, d.Spec.Template.Annotations, []string{ContainerName}, nil, true)
						p.Labels = c.Labels()
						_, _ = kc.CoreV1().Pods("mb-single").Create(ctx, &p, metav1.CreateOptions{})
					}
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
		}()
		if err := c.Prepare(ctx, "mb-single", scenario.ModeNone); err != nil {
			t.Fatalf("Prepare: %v", err)
		}
	})
	t.Run("timeout names the reason", func(t *testing.T) {
		t.Parallel()
		kc := fake.NewClientset()
		at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
		c := &Cluster{Kube: kc, RunID: "r1", Clients: 2, ReadyTimeout: 200 * time.Millisecond, Clock: clocktesting.NewFakeClock(at)}
		err := c.Prepare(ctx, "mb-single", scenario.ModeNone)
		if !errors.Is(err, kube.ErrWaitTimeout) || !strings.Contains(err.Error(), "0 of 2 client pods ready") {
			t.Fatalf("Prepare = %v, want a timeout naming 0 of 2 client pods ready", err)
		}
		d, err := kc.AppsV1().Deployments("mb-single").Get(ctx, DeploymentName, metav1.GetOptions{})
		if err != nil || d.Spec.Template.Annotations[PreparedAnnotation] != at.Format(time.RFC3339Nano) {
			t.Errorf("prepared-at stamp %v (%v), want the Cluster's clock %s", d.Spec.Template.Annotations, err, at)
		}
	})
	t.Run("ctx ends the wait", func(t *testing.T) {
		t.Parallel()
		cctx, ccancel := context.WithCancel(ctx)
		c := &Cluster{Kube: fake.NewClientset(), RunID: "r1", Clients: 1, ReadyTimeout: time.Hour}
		go func() { time.Sleep(50 * time.Millisecond); ccancel() }()
		if err := c.Prepare(cctx, "mb-single", scenario.ModeNone); !errors.Is(err, context.Canceled) {
			t.Fatalf("Prepare = %v, want context.Canceled", err)
		}
	})
}

// TestPrepareReplacesAnotherRunsClients: a namespace a killed run left still holds that run's client Deployment,
// whose selector (with the old run's label) is immutable; Prepare replaces it instead of failing the update with
// "selector does not match template labels" (seen on the local cluster after an API server outage).
func TestPrepareReplacesAnotherRunsClients(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	kc := fake.NewClientset()
	old := (&Cluster{RunID: "old-run", Clients: 1}).Deployment("mb-single", scenario.ModeNone)
	if _, err := kc.AppsV1().Deployments("mb-single").Create(ctx, old, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	c := &Cluster{Kube: kc, RunID: "new-run", Clients: 1, ReadyTimeout: 100 * time.Millisecond, Clock: clocktesting.NewFakeClock(at)}
	err := c.Prepare(ctx, "mb-single", scenario.ModeNone)
	if !errors.Is(err, kube.ErrWaitTimeout) { // no pods in a fake cluster: what matters is the Deployment
		t.Fatalf("Prepare = %v, want only the wait to time out", err)
	}
	d, err := kc.AppsV1().Deployments("mb-single").Get(ctx, DeploymentName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := d.Spec.Selector.MatchLabels[kube.RunLabel], "new-run"; got != want {
		t.Errorf("selector run label %q, want %q (the old run's Deployment replaced)", got, want)
	}
}

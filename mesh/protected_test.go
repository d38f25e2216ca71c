package mesh

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/meshbench/meshbench/scenario"
)

// TestApplyNeverTouchesSystemNamespaces: whatever the target says, Apply labels or restarts nothing in the
// cluster's or Istio's namespaces, nor the install's own (Switcher.Protected: a custom root namespace), and refuses
// before its first request (issue 15 section 3).
func TestApplyNeverTouchesSystemNamespaces(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		ns        []string
		protected []string
		refused   bool
	}{
		{"kube-system", []string{"ns-a", "kube-system"}, nil, true},
		{"istio-system", []string{"istio-system"}, nil, true},
		{"default", []string{"default"}, nil, true},
		{"custom root namespace", []string{"ns-a", "mesh-root"}, []string{"mesh-root"}, true},
		{"custom root namespace of another install", []string{"mesh-root"}, []string{"istio-system"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clients, _ := newCluster(t, scenario.ModeNone, false)
			kc := clients.Kube.(*fake.Clientset)
			kc.ClearActions()
			sw := &Switcher{Clients: clients, RunID: testRun, Timeout: time.Second, Protected: tc.protected}
			tg := testTarget
			tg.Namespaces = tc.ns
			_, err := sw.Apply(context.Background(), tg, scenario.ModeSidecar, testWaypoint)
			if !tc.refused {
				if err != nil && strings.Contains(err.Error(), "of the cluster or of Istio") {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "of the cluster or of Istio") {
				t.Fatalf("err = %v, want the system namespace refused", err)
			}
			if n := len(kc.Actions()); n != 0 {
				t.Errorf("%d API requests before the refusal: %v", n, kc.Actions())
			}
		})
	}
}

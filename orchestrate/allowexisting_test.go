package orchestrate

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/scenario"
)

func TestRunRefusesExistingWithoutFlag(t *testing.T) {
	s := &scenario.Scenario{}
	s.Spec.Workload.App = scenario.AppExisting
	s.Spec.Workload.Existing = &scenario.Existing{Namespaces: []string{"shop"}}
	for _, tc := range []struct {
		name  string
		app   scenario.App
		allow bool
		want  bool
	}{
		{"existing without flag", scenario.AppExisting, false, true},
		{"existing with flag", scenario.AppExisting, true, false},
		{"catalog app", scenario.AppFortioChain, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := *s
			sc.Spec.Workload.App = tc.app
			err := checkAllowExisting(RunConfig{Scenario: &sc, AllowExisting: tc.allow})
			if (err != nil) != tc.want {
				t.Fatalf("err = %v, want error %v", err, tc.want)
			}
			if err == nil {
				return
			}
			var ie *InputError
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), "--allow-existing-namespaces") {
				t.Fatalf("err = %v, want an InputError naming the flag", err)
			}
		})
	}
	// Run itself refuses before touching the cluster: Deps has no clients, so anything further would panic.
	if _, err := Run(context.Background(), RunConfig{Scenario: s}, Deps{}); err == nil || !strings.Contains(err.Error(), "--allow-existing-namespaces") {
		t.Fatalf("Run err = %v, want the flag named", err)
	}
}

// TestRunRefusesCNIResume: Run refuses to continue a cni run's directory before touching the cluster (Deps has no
// clients: anything further would panic), naming cni --resume, as CNI refuses a mesh run's directory.
func TestRunRefusesCNIResume(t *testing.T) {
	t.Parallel()
	s, err := scenario.Parse([]byte("apiVersion: meshbench.dev/v1alpha1\nkind: Scenario\nmetadata: {name: r}\nspec:\n  workload: {app: fortio-chain}\n"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("..", "testdata", "runs", "cni-local")
	_, err = Run(context.Background(), RunConfig{Scenario: s, ResumeDir: dir}, Deps{})
	var ie *InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "not a mesh run: continue it with meshbench cni --resume") {
		t.Fatalf("Run err = %v, want an InputError naming cni --resume", err)
	}
}

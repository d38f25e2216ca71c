package runner

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

// variantMesh is fakeMesh that applies and removes variants; failing fails ApplyVariant for that variant.
type variantMesh struct {
	fakeMesh
	failing string
}

func (f variantMesh) ApplyVariant(ctx context.Context, _ target.Target, m scenario.Mode, v string) (map[results.FactKey]string, error) {
	f.add("apply-variant %s+%s", m, v)
	if v == f.failing {
		return nil, errors.New("the variant's configuration did not reach mb-single/svc-0")
	}
	return map[results.FactKey]string{results.FactVariant: v}, nil
}

func (f variantMesh) RemoveVariant(ctx context.Context, _ target.Target) error {
	f.add("remove-variant (ctx ok: %v)", ctx.Err() == nil)
	return nil
}

func variantHarness(t *testing.T, failing string) *harness {
	t.Helper()
	s, err := scenario.Parse([]byte(`apiVersion: meshbench.dev/v1alpha1
kind: Scenario
metadata: {name: runner-test}
spec:
  profile: localcluster
  workload: {app: fortio-chain}
  modes: [sidecar]
  variants: [{name: strict, modes: [sidecar], mtls: STRICT}]
  load: {qps: [50], warmUp: 10s, trimEnd: 2s}
  windows: {idle: 20s, load: 30s, repetitions: 2, settle: 5s}
  prometheus: {url: "http://127.0.0.1:19090"}
`))
	if err != nil {
		t.Fatal(err)
	}
	return harnessFor(t, s, func(c *calls) meshSwitcher { return variantMesh{fakeMesh{c, ""}, failing} })
}

// A variant is put on after the mode is verified and the load clients placed, before the settle; it is removed before
// the next switch to the plain mode, and its cases and samples carry its name. A switch between the mode and its
// variant changes only the variant.
func TestRunVariant(t *testing.T) {
	t.Parallel()
	h := variantHarness(t, "")
	out, err := h.r.Run(context.Background())
	if err != nil || out.OK != 4 {
		t.Fatalf("outcome %+v, err %v", out, err)
	}
	want := []string{
		"ensure single", "apply sidecar", "wait-ready", "verify sidecar", "prepare sidecar",
		"load single.sidecar.q50.r1 lead 20s window 30s cool 5s", "collect idle 20s", "collect load 30s",
		// from the mode to its variant: the mode is verified again, the app and the load clients stay
		"verify sidecar", "apply-variant sidecar+strict",
		"load single.sidecar+strict.q50.r1 lead 20s window 30s cool 5s", "collect idle 20s", "collect load 30s",
		// repetition 2 (serpentine) starts with the variant: no switch
		"load single.sidecar+strict.q50.r2 lead 20s window 30s cool 5s", "collect idle 20s", "collect load 30s",
		"remove-variant (ctx ok: true)", "verify sidecar",
		"load single.sidecar.q50.r2 lead 20s window 30s cool 5s", "collect idle 20s", "collect load 30s",
		"load-teardown single (ctx ok: true)", "teardown single (ctx ok: true)", "restore (ctx ok: true)",
	}
	if got := strings.Join(h.calls.log, "\n"); got != strings.Join(want, "\n") {
		t.Errorf("calls:\n%s\n\nwant:\n%s", got, strings.Join(want, "\n"))
	}
	for _, c := range h.store.cases {
		// the fact is the switching case's (r1); r2 continues without a switch
		if strings.Contains(c.CaseID, "+strict") != (c.Variant == "strict") || strings.HasSuffix(c.CaseID, "+strict.q50.r1") != (c.Facts[results.FactVariant] == "strict") {
			t.Errorf("%s: variant %q, facts %v", c.CaseID, c.Variant, c.Facts)
		}
	}
	for _, s := range h.store.samples {
		if strings.Contains(s.CaseID, "+strict") != (s.Variant == "strict") {
			t.Errorf("sample of %s: variant %q", s.CaseID, s.Variant)
		}
	}
}

// A variant that does not take effect fails its cases, not measured; the plain mode's cases still run, and the
// half-applied variant is removed.
func TestRunVariantNotInEffect(t *testing.T) {
	t.Parallel()
	h := variantHarness(t, "strict")
	out, err := h.r.Run(context.Background())
	if err != nil || out.OK != 2 || len(out.Failed) != 2 {
		t.Fatalf("outcome %+v, err %v", out, err)
	}
	for _, c := range h.store.cases {
		if c.Variant == "strict" && (c.Status != results.StatusFailed || !strings.Contains(c.Reason, "variant strict did not take effect in mode sidecar: the variant's configuration did not reach")) {
			t.Errorf("%s: %s %q", c.CaseID, c.Status, c.Reason)
		}
	}
	if log := strings.Join(h.calls.log, "|"); !strings.Contains(log, "apply-variant sidecar+strict|remove-variant (ctx ok: true)|apply sidecar") {
		t.Errorf("the failed variant was not removed before the plain mode: %q", h.calls.log)
	}
}

// Interrupted while a variant is on: the finalizer removes it on a fresh context before the teardown.
func TestRunVariantInterruptedRemovesIt(t *testing.T) {
	t.Parallel()
	h := variantHarness(t, "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	applied := false
	h.clock.onSleep = func(time.Duration) {
		if applied {
			cancel()
		}
	}
	h.r.Mesh = hookMesh{variantMesh{fakeMesh{h.calls, ""}, ""}, func() { applied = true }}
	out, err := h.r.Run(ctx)
	if err != nil || !out.Interrupted {
		t.Fatalf("outcome %+v, err %v", out, err)
	}
	if log := strings.Join(h.calls.log, "|"); !strings.Contains(log, "remove-variant (ctx ok: true)|load-teardown single") {
		t.Errorf("the variant was not removed on a live context before the teardown: %q", h.calls.log)
	}
}

// hookMesh calls applied after each ApplyVariant.
type hookMesh struct {
	variantMesh
	applied func()
}

func (f hookMesh) ApplyVariant(ctx context.Context, t target.Target, m scenario.Mode, v string) (map[results.FactKey]string, error) {
	defer f.applied()
	return f.variantMesh.ApplyVariant(ctx, t, m, v)
}

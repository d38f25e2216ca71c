package workloads

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/scenario"
)

// Deployer deploys catalog apps into a cluster. One Deployer serves one run: it caches the jwt-key so every
// namespace and every case of the run share one key.
type Deployer struct {
	Clients *kube.Clients
	RunID   string
	// AllowExisting lets the app go into namespaces meshbench did not create (--allow-existing-namespaces). Such
	// namespaces are never labelled or deleted; only the objects meshbench created inside them are.
	AllowExisting bool
	Log           *slog.Logger
	// Progress receives the human progress bar of WaitReady (stderr); nil disables it.
	Progress io.Writer
	// DryRun applies with dryRun=All: the API server validates and admits every object but persists nothing.
	DryRun bool
	// Protected are namespaces of this cluster that are never deployed into or switched, beyond
	// scenario.ProtectedNamespace: the Istio root namespace of the mesh config (a custom one is only known from the
	// install, mesh.IstioInfo.RootNamespace). AllowExisting does not lift it.
	Protected []string

	mu  sync.Mutex
	key *JWTKey
	// renderer reads app manifests once for the run: every Ensure of every case builds from the same reading.
	renderer Renderer
}

func (d *Deployer) log() *slog.Logger {
	if d.Log != nil {
		return d.Log
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// Ensure creates the app's namespaces (labelled with the run) and server-side-applies every object. It is
// idempotent: calling it again for the same topology changes nothing (mode labels and restart annotations belong to
// other field managers and are kept).
func (d *Deployer) Ensure(ctx context.Context, s *scenario.Scenario, topo scenario.Topology) (target.Target, error) {
	if d.Clients == nil {
		return target.Target{}, errors.New("deploy workload: no Kubernetes clients")
	}
	if s != nil && s.Spec.Workload.App == scenario.AppExisting {
		return d.ensureExisting(ctx, s)
	}
	_, t, err := d.renderer.Objects(s, topo, d.RunID) // cheap: learn the namespaces before generating a key
	if err != nil {
		return target.Target{}, err
	}
	foreign, err := CheckNamespaces(ctx, d.Clients.Kube, t.Namespaces, d.RunID, d.AllowExisting, d.Protected...)
	if err != nil {
		return target.Target{}, err
	}
	key := placeholderKey
	if s.Spec.Workload.App == scenario.AppBankOfAnthos && !d.DryRun {
		if key, err = d.jwtKey(ctx, t.Namespaces); err != nil {
			return target.Target{}, err
		}
	}
	objs, t, err := d.renderer.build(s, topo, d.RunID, key)
	if err != nil {
		return target.Target{}, err
	}
	ap := kube.Applier{Dynamic: d.Clients.Dynamic, Mapper: d.Clients.Mapper, DryRun: d.DryRun}
	start := time.Now()
	n := 0
	for _, o := range objs {
		if ns, ok := o.(*corev1.Namespace); ok && foreign[ns.Name] {
			continue // never label a namespace meshbench did not create
		}
		if _, err := ap.Apply(ctx, o); err != nil {
			return t, fmt.Errorf("deploy %s topology %q: %w", s.Spec.Workload.App, topo.Name, err)
		}
		n++
	}
	d.log().Info("workload applied", "app", s.Spec.Workload.App, "topology", topo.Name, "namespaces", t.Namespaces,
		"objects", n, "dryRun", d.DryRun, "elapsed", time.Since(start).Round(time.Millisecond))
	return t, nil
}

// ErrAnotherRunsNamespace is CheckNamespaces refusing a namespace that another meshbench run created.
var ErrAnotherRunsNamespace = errors.New("namespace of another meshbench run")

// CheckNamespaces checks the namespaces run runID's app would use ("" before a run: preflight) and returns the
// existing ones allowExisting admits. Protected namespaces are refused even with allowExisting, another run's always
// (ErrAnotherRunsNamespace), a terminating one with an error that says to wait (docs/apps.md).
func CheckNamespaces(ctx context.Context, kc kubernetes.Interface, namespaces []string, runID string, allowExisting bool, protected ...string) (map[string]bool, error) {
	if err := scenario.RefuseProtected(namespaces, protected...); err != nil {
		return nil, err
	}
	foreign := map[string]bool{}
	var refused, taken []string
	takenBy := map[string]bool{}
	for _, name := range namespaces {
		ns, err := kc.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("check namespace %q: %w", name, err)
		}
		if ns.DeletionTimestamp != nil || ns.Status.Phase == corev1.NamespaceTerminating {
			return nil, fmt.Errorf("namespace %q is being deleted (a previous cleanup?): wait until it is gone, or run `meshbench cleanup` and retry", name)
		}
		if ns.Labels[kube.ManagedByLabel] == kube.ManagedByValue {
			if other := ns.Labels[kube.RunLabel]; other != "" && other != runID {
				taken = append(taken, fmt.Sprintf("%s (run %s)", name, other))
				takenBy[other] = true
			}
			continue
		}
		foreign[name] = true
		if !allowExisting {
			refused = append(refused, name)
		}
	}
	if len(taken) > 0 {
		var cleanup []string
		for _, id := range slices.Sorted(maps.Keys(takenBy)) {
			cleanup = append(cleanup, "`meshbench cleanup --run "+id+"`")
		}
		return nil, fmt.Errorf("%w: %s: that run may still be measuring there; once it is over (or was killed), remove what it left with %s, "+
			"or pick another spec.workload.namespacePrefix", ErrAnotherRunsNamespace, strings.Join(taken, ", "), strings.Join(cleanup, " and "))
	}
	if len(refused) > 0 {
		return nil, fmt.Errorf("namespace(s) %v exist and were not created by meshbench: pick another spec.workload.namespacePrefix, "+
			"or pass --allow-existing-namespaces to deploy into them (meshbench then records and restores the labels it changes)", refused)
	}
	return foreign, nil
}

// jwtKey returns the run's key: cached, else the one already in a jwt-key Secret of this run (a resumed run), else
// a new one.
func (d *Deployer) jwtKey(ctx context.Context, namespaces []string) (JWTKey, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.key != nil {
		return *d.key, nil
	}
	for _, ns := range namespaces {
		sec, err := d.Clients.Kube.CoreV1().Secrets(ns).Get(ctx, boaJWTSecret, metav1.GetOptions{})
		if err != nil || sec.Labels[kube.RunLabel] != d.RunID {
			continue
		}
		if k, err := parseJWTKey(sec.Data["jwtRS256.key"], sec.Data["jwtRS256.key.pub"]); err == nil {
			d.key = &k
			d.log().Debug("reusing jwt-key of this run", "namespace", ns)
			return k, nil
		}
	}
	start := time.Now()
	k, err := GenerateJWTKey(nil, jwtKeyBits)
	if err != nil {
		return JWTKey{}, err
	}
	d.log().Debug("generated jwt-key", "bits", jwtKeyBits, "elapsed", time.Since(start).Round(time.Millisecond))
	d.key = &k
	return k, nil
}

// Teardown deletes the app: namespaces meshbench created for this run are deleted (and waited for); in namespaces
// it did not create, only the objects labelled with this run are deleted.
func (d *Deployer) Teardown(ctx context.Context, t target.Target) error {
	if t.App == scenario.AppExisting {
		// meshbench created nothing of an existing app; its mode labels and restart annotations are restored by
		// mesh.Restore from the record, not here.
		d.log().Info("existing app: nothing to tear down", "namespaces", t.Namespaces)
		return nil
	}
	c := Cleaner{Clients: d.Clients, Log: d.Log}
	_, err := c.Clean(ctx, CleanOptions{RunID: d.RunID, Namespaces: t.Namespaces, Wait: 5 * time.Minute})
	if err != nil {
		return fmt.Errorf("tear down %s: %w", t.App, err)
	}
	return nil
}

// ErrExistingNeedsFlag refuses app existing without --allow-existing-namespaces: meshbench changes the labels of
// namespaces and restarts workloads it did not create, which the user must opt into.
var ErrExistingNeedsFlag = errors.New("workload.app existing changes namespaces and workloads meshbench did not create: pass --allow-existing-namespaces")

// ensureExisting discovers app existing and applies nothing: its objects belong to the user.
func (d *Deployer) ensureExisting(ctx context.Context, s *scenario.Scenario) (target.Target, error) {
	if !d.AllowExisting {
		return target.Target{}, ErrExistingNeedsFlag
	}
	if e := s.Spec.Workload.Existing; e != nil {
		if err := scenario.RefuseProtected(e.Namespaces, d.Protected...); err != nil {
			return target.Target{}, err
		}
	}
	t, err := Discover(ctx, d.Clients.Kube, s)
	if err != nil {
		return target.Target{}, err
	}
	if err := scenario.RefuseProtected(t.Namespaces, d.Protected...); err != nil { // what the mode switch would label
		return target.Target{}, err
	}
	d.log().Info("existing app discovered (nothing applied)", "namespaces", t.Namespaces, "workloads", len(t.Workloads),
		"services", len(t.Services))
	return t, nil
}

package mesh

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	gwfake "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/fake"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/scenario"
)

// userRestartedAt is the restart annotation the user's own `kubectl rollout restart` left on web's pod template
// before meshbench ran; db's template has none.
const userRestartedAt = "2026-11-30T08:00:00Z"

// existingTarget is an app meshbench did not create (app existing): foreign namespace, workloads without
// meshbench's labels, pods selected by their own spec.selector.
var existingTarget = target.Target{
	App:         scenario.AppExisting,
	Namespaces:  []string{"shop"},
	AppSelector: "app.kubernetes.io/managed-by!=meshbench",
	Workloads: []target.WorkloadRef{
		{Kind: target.KindDeployment, Namespace: "shop", Name: "web", Replicas: 1, Selector: "app=web"},
		{Kind: target.KindStatefulSet, Namespace: "shop", Name: "db", Replicas: 1, Selector: "app=db"},
	},
}

// existingCluster holds existingTarget in mode from, with a recorder of every mutating call.
func existingCluster(t *testing.T, from scenario.Mode) (*fake.Clientset, *recorder) {
	t.Helper()
	nsLabels := map[string]string{"team": "shop"}
	for k, v := range NamespaceLabels(from, "shop", testWaypoint, "shop", "") {
		if v != nil {
			nsLabels[k] = *v
		}
	}
	one := int32(1)
	web := readyDeployment("shop", "web", map[string]string{"app": "web"})
	web.Spec.Template.Annotations = map[string]string{restartAnnotation: userRestartedAt, "team": "shop"}
	db := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop", Labels: map[string]string{"app": "db"}},
		Spec:       appsv1.StatefulSetSpec{Replicas: &one},
	}
	var objs []runtime.Object
	objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: nsLabels}}, web, db)
	for _, c := range []string{"web", "db"} {
		p := podIn(from, "shop", c, false)
		p.Labels = map[string]string{"app": c}
		objs = append(objs, p)
	}
	kc := fake.NewClientset(objs...)
	rec := &recorder{}
	kc.PrependReactor("*", "*", rec.reactor)
	return kc, rec
}

func existingSwitcher(kc *fake.Clientset, rec *LabelRecord) *Switcher {
	return &Switcher{Clients: &kube.Clients{Kube: kc, Gateway: gwfake.NewSimpleClientset()}, RunID: testRun, Record: rec, Timeout: 5 * time.Second}
}

func templateAnnotations(t *testing.T, kc *fake.Clientset, kind, name string) map[string]string {
	t.Helper()
	ctx := context.Background()
	switch kind {
	case target.KindDeployment:
		d, err := kc.AppsV1().Deployments("shop").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return d.Spec.Template.Annotations
	default:
		st, err := kc.AppsV1().StatefulSets("shop").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return st.Spec.Template.Annotations
	}
}

// recordedRestart is the recorded original restart annotation of a workload, and whether it is recorded at all.
func recordedRestart(r *LabelRecord, kind, name string) (*string, bool) {
	for _, w := range r.workloadEntries() {
		if w.Kind == kind && w.Namespace == "shop" && w.Name == name {
			v, ok := w.Annotations[restartAnnotation]
			return v, ok
		}
	}
	return nil, false
}

// The original annotation is on disk before the restart patch is sent: the patch fails here (as a crash or an
// admission webhook would stop it), and the file already holds the state before meshbench's change.
func TestRestartRecordsBeforePatching(t *testing.T) {
	t.Parallel()
	kc, _ := existingCluster(t, scenario.ModeNone)
	kc.PrependReactor("patch", "deployments", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("admission webhook denied the patch")
	})
	path := filepath.Join(t.TempDir(), "run", LabelRecordFile)
	rec, err := OpenLabelRecord(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = existingSwitcher(kc, rec).Apply(context.Background(), existingTarget, scenario.ModeSidecar, testWaypoint)
	if err == nil || !strings.Contains(err.Error(), "restart Deployment shop/web") {
		t.Fatalf("want the failed restart, got %v", err)
	}
	reread, err := OpenLabelRecord(path)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := recordedRestart(reread, target.KindDeployment, "web"); !ok || v == nil || *v != userRestartedAt {
		t.Errorf("recorded %v (present %v) before the failed patch, want %q", v, ok, userRestartedAt)
	}
	if got := templateAnnotations(t, kc, target.KindDeployment, "web")[restartAnnotation]; got != userRestartedAt {
		t.Errorf("the patch failed, yet the annotation is %q", got)
	}
}

// Two restarts (none -> sidecar -> ambient): the record keeps the value before the first, not meshbench's stamp.
func TestRestartRecordFirstValueWins(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	kc, _ := existingCluster(t, scenario.ModeNone)
	rec, err := OpenLabelRecord(filepath.Join(t.TempDir(), LabelRecordFile))
	if err != nil {
		t.Fatal(err)
	}
	sw := existingSwitcher(kc, rec)
	for _, m := range []scenario.Mode{scenario.ModeSidecar, scenario.ModeAmbient} {
		tr, err := sw.Apply(ctx, existingTarget, m, testWaypoint)
		if err != nil {
			t.Fatal(err)
		}
		if len(tr.Restarted) != 2 {
			t.Fatalf("to %s: restarted %v, want both workloads", m, tr.Restarted)
		}
		// The fake cluster does not roll pods: make them show the mode, so the next switch restarts again.
		for _, c := range []string{"web", "db"} {
			p := podIn(m, "shop", c, false)
			p.Labels = map[string]string{"app": c}
			if _, err := kc.CoreV1().Pods("shop").Update(ctx, p, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := templateAnnotations(t, kc, target.KindDeployment, "web")[restartAnnotation]; got == userRestartedAt {
		t.Fatalf("web was not restarted: annotation still %q", got)
	}
	if v, ok := recordedRestart(rec, target.KindDeployment, "web"); !ok || v == nil || *v != userRestartedAt {
		t.Errorf("web recorded as %v (present %v), want the user's %q", v, ok, userRestartedAt)
	}
	if v, ok := recordedRestart(rec, target.KindStatefulSet, "db"); !ok || v != nil {
		t.Errorf("db must be recorded as absent (null), got %v (present %v)", v, ok)
	}
	if n := len(rec.workloadEntries()); n != 2 {
		t.Errorf("%d workload entries, want 2: %+v", n, rec.workloadEntries())
	}
}

func TestRememberWorkloadFirstValueWins(t *testing.T) {
	t.Parallel()
	rec, err := OpenLabelRecord("")
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		kind, ns, name string
		current        map[string]string
	}{
		{target.KindStatefulSet, "b", "db", nil},
		{target.KindDeployment, "b", "web", map[string]string{restartAnnotation: "first"}},
		{target.KindDeployment, "a", "web", map[string]string{restartAnnotation: "a-first"}},
		{target.KindDeployment, "b", "web", map[string]string{restartAnnotation: "second"}},
		{target.KindStatefulSet, "b", "db", map[string]string{restartAnnotation: "meshbench's"}},
	}
	for _, s := range steps {
		if err := rec.rememberWorkload(s.kind, s.ns, s.name, s.current, []string{restartAnnotation}); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, w := range rec.workloadEntries() {
		v := "<absent>"
		if p := w.Annotations[restartAnnotation]; p != nil {
			v = *p
		}
		got = append(got, w.String()+"="+v)
	}
	want := []string{"Deployment a/web=a-first", "Deployment b/web=first", "StatefulSet b/db=<absent>"}
	if !slices.Equal(got, want) {
		t.Errorf("entries %v, want %v (ordered by namespace, kind, name; first value wins)", got, want)
	}
}

// A whole round: record through Apply, reopen the file (as `meshbench cleanup` does), restore. The namespace labels
// go back first, then each workload's annotation: the user's value on web, none on db. Other template annotations
// are untouched.
func TestRestoreWorkloadAnnotations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	kc, log := existingCluster(t, scenario.ModeNone)
	path := filepath.Join(t.TempDir(), LabelRecordFile)
	rec, err := OpenLabelRecord(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := existingSwitcher(kc, rec).Apply(ctx, existingTarget, scenario.ModeSidecar, testWaypoint); err != nil {
		t.Fatal(err)
	}
	if got := templateAnnotations(t, kc, target.KindStatefulSet, "db")[restartAnnotation]; got == "" {
		t.Fatal("db was not restarted")
	}
	reread, err := OpenLabelRecord(path)
	if err != nil {
		t.Fatal(err)
	}
	before := len(log.entries())
	res, err := reread.RestoreAll(ctx, kc)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Namespaces, []string{"shop"}) || !slices.Equal(res.Workloads, []string{"Deployment shop/web", "StatefulSet shop/db"}) || len(res.Notes) != 0 {
		t.Errorf("RestoreAll = %+v", res)
	}
	web := templateAnnotations(t, kc, target.KindDeployment, "web")
	if web[restartAnnotation] != userRestartedAt || web["team"] != "shop" {
		t.Errorf("web's template annotations %v, want the user's restartedAt %q and team=shop", web, userRestartedAt)
	}
	if db := templateAnnotations(t, kc, target.KindStatefulSet, "db"); hasKey(db, restartAnnotation) {
		t.Errorf("db had no restart annotation before the run: %v", db)
	}
	ns, _ := kc.CoreV1().Namespaces().Get(ctx, "shop", metav1.GetOptions{})
	if modeOfLabels(ns.Labels) != scenario.ModeNone || ns.Labels["team"] != "shop" {
		t.Errorf("namespace labels %v, want the original (mode none)", ns.Labels)
	}
	after := log.entries()[before:]
	nsAt := index(after, isNamespacePatch)
	wlAt := index(after, func(e string) bool {
		return strings.HasPrefix(e, "patch deployments ") || strings.HasPrefix(e, "patch statefulsets ")
	})
	if nsAt < 0 || wlAt < 0 || nsAt > wlAt {
		t.Errorf("namespace labels (at %d) must be restored before the annotations (at %d): %v", nsAt, wlAt, after)
	}
	if again, _ := OpenLabelRecord(path); len(again.entries())+len(again.workloadEntries()) != 0 {
		t.Errorf("record not emptied: %+v %+v", again.entries(), again.workloadEntries())
	}
}

// A workload the user deleted during the run is skipped with a note; the rest is restored and the record emptied.
func TestRestoreToleratesDeletedWorkload(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	kc, _ := existingCluster(t, scenario.ModeNone)
	rec, _ := OpenLabelRecord(filepath.Join(t.TempDir(), LabelRecordFile))
	if _, err := existingSwitcher(kc, rec).Apply(ctx, existingTarget, scenario.ModeSidecar, testWaypoint); err != nil {
		t.Fatal(err)
	}
	if err := kc.AppsV1().Deployments("shop").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err := rec.RestoreAll(ctx, kc)
	if err != nil {
		t.Fatalf("a deleted workload must not fail the restore: %v", err)
	}
	if !slices.Equal(res.Workloads, []string{"StatefulSet shop/db"}) || len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "Deployment shop/web: deleted meanwhile") {
		t.Errorf("RestoreAll = %+v", res)
	}
	if n := len(rec.workloadEntries()); n != 0 {
		t.Errorf("%d workload entries left", n)
	}
}

// A workload whose namespace's labels could not be restored stays recorded and untouched: rolling it now would
// recreate its pods in meshbench's mode. Other errors keep the entry for a later cleanup too.
func TestRestoreKeepsWorkloadsOfFailedNamespace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	kc, log := existingCluster(t, scenario.ModeNone)
	rec, _ := OpenLabelRecord(filepath.Join(t.TempDir(), LabelRecordFile))
	if _, err := existingSwitcher(kc, rec).Apply(ctx, existingTarget, scenario.ModeSidecar, testWaypoint); err != nil {
		t.Fatal(err)
	}
	kc.PrependReactor("patch", "namespaces", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("namespaces"), "shop", errors.New("no"))
	})
	before := len(log.entries())
	res, err := rec.RestoreAll(ctx, kc)
	if err == nil || len(res.Workloads) != 0 || len(res.Notes) != 2 {
		t.Fatalf("RestoreAll = %+v, %v", res, err)
	}
	for _, e := range log.entries()[before:] {
		if !isNamespacePatch(e) {
			t.Errorf("a workload was patched although its namespace was not restored: %s", e)
		}
	}
	if len(rec.entries()) != 1 || len(rec.workloadEntries()) != 2 {
		t.Errorf("entries left %+v %+v, want all kept", rec.entries(), rec.workloadEntries())
	}
}

// Without a record, a workload meshbench did not create is not restarted (its template could not be restored).
func TestRestartForeignWorkloadNeedsRecord(t *testing.T) {
	t.Parallel()
	kc, log := existingCluster(t, scenario.ModeNone)
	// The namespace alone would already be refused without a record: make it meshbench's, to reach the workloads.
	ns, _ := kc.CoreV1().Namespaces().Get(context.Background(), "shop", metav1.GetOptions{})
	ns.Labels = kube.MergeLabels(ns.Labels, kube.RunLabels(testRun))
	if _, err := kc.CoreV1().Namespaces().Update(context.Background(), ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := existingSwitcher(kc, nil).Apply(context.Background(), existingTarget, scenario.ModeSidecar, testWaypoint)
	if err == nil || !strings.Contains(err.Error(), "not created by meshbench") {
		t.Fatalf("want a refusal, got %v", err)
	}
	if i := index(log.entries(), isRestart); i >= 0 {
		t.Errorf("a foreign workload was restarted without a record: %v", log.entries())
	}
}

// The catalog apps' workloads carry meshbench's labels: restarting them records nothing.
func TestRestartManagedWorkloadRecordsNothing(t *testing.T) {
	t.Parallel()
	clients, _ := newCluster(t, scenario.ModeNone, false)
	rec, _ := OpenLabelRecord("")
	sw := &Switcher{Clients: clients, RunID: testRun, Record: rec, Timeout: 5 * time.Second}
	tr, err := sw.Apply(context.Background(), testTarget, scenario.ModeSidecar, testWaypoint)
	if err != nil || len(tr.Restarted) != 2 {
		t.Fatalf("Apply = %v restarted, %v", tr.Restarted, err)
	}
	if ws := rec.workloadEntries(); len(ws) != 0 {
		t.Errorf("managed workloads recorded: %+v", ws)
	}
}

// A file written by meshbench before workloads were recorded (schema v1, namespaces only) loads, restores its
// namespaces, and is written back without a workloads key.
func TestOpenLabelRecordV1WithoutWorkloads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, LabelRecordFile)
	old, err := os.ReadFile(filepath.Join("testdata", "namespace-labels-v1-namespaces-only.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, old, 0o644); err != nil {
		t.Fatal(err)
	}
	rec, err := OpenLabelRecord(path)
	if err != nil {
		t.Fatalf("a v1 file without workloads must load: %v", err)
	}
	es := rec.entries()
	if len(es) != 1 || es[0].Namespace != "shop" || len(rec.workloadEntries()) != 0 {
		t.Fatalf("entries %+v, workloads %+v", es, rec.workloadEntries())
	}
	if v, ok := es[0].Labels[labelInjection]; !ok || v != nil {
		t.Errorf("istio-injection recorded as %v (present %v), want absent (null)", v, ok)
	}
	kc := fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop",
		Labels: map[string]string{"team": "shop", labelInjection: "enabled"}}})
	res, err := rec.RestoreAll(ctx, kc)
	if err != nil || !slices.Equal(res.Namespaces, []string{"shop"}) || len(res.Workloads) != 0 {
		t.Fatalf("RestoreAll = %+v, %v", res, err)
	}
	ns, _ := kc.CoreV1().Namespaces().Get(ctx, "shop", metav1.GetOptions{})
	if hasKey(ns.Labels, labelInjection) || ns.Labels["team"] != "shop" {
		t.Errorf("labels %v after restore", ns.Labels)
	}
	written, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(written), `"workloads"`) || !strings.Contains(string(written), labelRecordSchema) {
		t.Errorf("rewritten file:\n%s", written)
	}
}

// The workloads list survives a write and a reopen, nulls included.
func TestLabelRecordWorkloadsRoundTrip(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), LabelRecordFile)
	rec, _ := OpenLabelRecord(path)
	if err := rec.rememberWorkload(target.KindDeployment, "shop", "web", map[string]string{restartAnnotation: "x"}, []string{restartAnnotation, "other"}); err != nil {
		t.Fatal(err)
	}
	reread, err := OpenLabelRecord(path)
	if err != nil {
		t.Fatal(err)
	}
	ws := reread.workloadEntries()
	if len(ws) != 1 || ws[0].String() != "Deployment shop/web" || ws[0].RecordedAt.IsZero() {
		t.Fatalf("workloads %+v", ws)
	}
	if v := ws[0].Annotations[restartAnnotation]; v == nil || *v != "x" {
		t.Errorf("restartedAt %v", v)
	}
	if v, ok := ws[0].Annotations["other"]; !ok || v != nil {
		t.Errorf("other must be recorded as absent, got %v (present %v)", v, ok)
	}
}

// Switcher.Restore, what the runner's finalizer calls at the end of a run, after a failure and after Ctrl-C (through
// orchestrate's mesh adapter), restores the workloads too, not only the namespaces.
func TestSwitcherRestoreRestoresWorkloads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	kc, _ := existingCluster(t, scenario.ModeNone)
	rec, _ := OpenLabelRecord(filepath.Join(t.TempDir(), LabelRecordFile))
	sw := existingSwitcher(kc, rec)
	if _, err := sw.Apply(ctx, existingTarget, scenario.ModeSidecar, testWaypoint); err != nil {
		t.Fatal(err)
	}
	nss, err := sw.Restore(ctx)
	if err != nil || !slices.Equal(nss, []string{"shop"}) {
		t.Fatalf("Restore = %v, %v", nss, err)
	}
	if got := templateAnnotations(t, kc, target.KindDeployment, "web")[restartAnnotation]; got != userRestartedAt {
		t.Errorf("web's restart annotation %q after Restore, want %q", got, userRestartedAt)
	}
	if db := templateAnnotations(t, kc, target.KindStatefulSet, "db"); hasKey(db, restartAnnotation) {
		t.Errorf("db's restart annotation not removed: %v", db)
	}
}

// RestartApp restarts every workload but those the switch restarted, records an existing app's annotation first
// (restored at the end) and refuses a protected namespace before any patch.
func TestRestartApp(t *testing.T) {
	t.Parallel()
	kc, _ := existingCluster(t, scenario.ModeAmbient)
	rec, err := OpenLabelRecord(filepath.Join(t.TempDir(), "run", LabelRecordFile))
	if err != nil {
		t.Fatal(err)
	}
	sw := existingSwitcher(kc, rec)
	skip := []string{existingTarget.Workloads[0].String()}
	restarted, err := sw.RestartApp(context.Background(), existingTarget, skip)
	if err != nil || len(restarted) != 1 || restarted[0] != existingTarget.Workloads[1] {
		t.Fatalf("restarted %v (%v), want only %s", restarted, err, existingTarget.Workloads[1])
	}
	if got := templateAnnotations(t, kc, target.KindDeployment, "web")[restartAnnotation]; got != userRestartedAt {
		t.Errorf("the skipped Deployment was restarted: %q", got)
	}
	if got := templateAnnotations(t, kc, target.KindStatefulSet, "db")[restartAnnotation]; got == "" {
		t.Error("the StatefulSet was not restarted")
	}
	if _, ok := recordedRestart(rec, target.KindStatefulSet, "db"); !ok {
		t.Error("the StatefulSet's pod template was not recorded before its restart")
	}
	sw.Protected = []string{"shop"}
	if _, err := sw.RestartApp(context.Background(), existingTarget, nil); err == nil {
		t.Error("a protected namespace's workloads were restarted")
	}
}

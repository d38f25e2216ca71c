package cni_test

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/meshbench/meshbench/cni"
	"github.com/meshbench/meshbench/orchestrate"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

// session is one invocation of meshbench cni on fakes with the real run directory store, wired as orchestrate.CNI
// wires it: orchestrate.NewCNIBench (recorded != nil: --resume) and the cases through orchestrate.RunCNICases.
// prepared, when set, sees the state between the bench's preparation and the first case.
func session(ctx context.Context, cfg cni.Config, kc *fake.Clientset, ex *fakeExec, st *results.Store, recorded *results.Run, prepared func()) error {
	b, done, err := orchestrate.NewCNIBench(ctx, cfg, cni.Deps{Kube: kc, Exec: ex, Resources: fakeResources{}}, recorded)
	if err != nil {
		return err
	}
	if prepared != nil {
		prepared()
	}
	_, err = orchestrate.RunCNICases(ctx, orchestrate.CNICases{Bench: b, RunID: cfg.RunID, Store: st, Done: done, Measured: true,
		Keep: cfg.Keep, DeleteTimeout: cfg.DeleteTimeout})
	return err
}

// readDir maps the files of a directory (and its raw/ folder) to their bytes.
func readDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, sub := range []string{"", "raw"} {
		es, err := os.ReadDir(filepath.Join(dir, sub))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			if e.IsDir() {
				continue
			}
			b, err := os.ReadFile(filepath.Join(dir, sub, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			out[filepath.Join(sub, e.Name())] = b
		}
	}
	return out
}

// TestResumeAfterKill is `meshbench cni --resume` after kill -9: the first session stops in the middle of the
// last case with its namespace still in the cluster (no finalizer ran), a case line half written, samples of the
// unfinished case without their case line and a stale raw file. The resumed session deletes the leftover
// namespace before deploying, runs only the unfinished case, keeps every recorded byte, and the run ends with each
// case once and each sample of each case once.
func TestResumeAfterKill(t *testing.T) {
	t.Parallel()
	kc := fakeCluster(t, cni.Node("node1"), cni.Node("node2"))
	cascadeNamespaceDelete(kc)
	cfg := testConfig(t)
	cfg.CNI.Paths = []scenario.CNIPath{scenario.CNIPathSameNode, scenario.CNIPathCrossNode}
	cfg.CNI.Tests = []scenario.CNITest{scenario.CNITestTCP, scenario.CNITestUDP}
	dir := cfg.RunDir
	st, err := results.Create(dir, results.RunMeta{RunID: cfg.RunID, Command: "cni"})
	if err != nil {
		t.Fatal(err)
	}

	// Session 1: the process dies during sample 2 of cross-node/udp (the last case). Keep stands for the
	// finalizer that kill -9 never lets run: the namespace and its pods stay.
	var mu sync.Mutex
	crossUDP := 0
	started := make(chan struct{})
	ex1 := &fakeExec{started: started, block: func(_ string, cmd []string) bool {
		if cmd[0] != "iperf3" || !slices.Contains(cmd, "-u") || !slices.Contains(cmd, "10.244.1.20") {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		crossUDP++
		return crossUDP == 2
	}}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	killed := cfg
	killed.Keep = true
	if err := session(ctx, killed, kc, ex1, st, nil, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("session 1: %v, want context.Canceled", err)
	}
	_ = st.Close()
	if _, err := kc.CoreV1().Namespaces().Get(context.Background(), testNS, metav1.GetOptions{}); err != nil {
		t.Fatalf("the killed session's namespace should still be there: %v", err)
	}
	// What kill -9 leaves besides: the unfinished case's samples made it to disk but its case line did not finish.
	appendFile(t, filepath.Join(dir, results.SamplesFile), `{"runId":"cni-unit","caseId":"cross-node/udp","attempt":1,"repetition":1,"component":"cni-test","metric":"throughput","stat":"value","value":1,"unit":"Mbit/s"}`+"\n")
	appendFile(t, filepath.Join(dir, results.CasesFile), `{"runId":"cni-unit","caseId":"cross-node/ud`)
	// and output of an attempt of the unfinished case that nothing records.
	if err := os.WriteFile(filepath.Join(dir, "raw", "cross-node-udp-2.err.txt"), []byte("exec failed: signal: killed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := readDir(t, dir)
	rec1, err := results.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	kept := rec1.DoneCases()
	if want := []string{"cross-node/tcp", "idle", "same-node/tcp", "same-node/udp"}; !slices.Equal(sortedKeys((kept)), want) {
		t.Fatalf("session 1 recorded %v, want %v", sortedKeys((kept)), want)
	}
	// The nodes the resumed cases must run on come from what the runner recorded with the kept cases.
	if pin, ok, err := cni.RecordedPlacement(kept); !ok || err != nil || pin != (scenario.CNIPlacement{ClientNode: "node1", ServerNode: "node2"}) {
		t.Fatalf("recorded placement %+v %v %v, want node1/node2", pin, ok, err)
	}
	if _, ok := before[filepath.Join("raw", "cross-node-udp-1.json")]; !ok {
		t.Fatalf("session 1 kept no raw output of cross-node/udp sample 1: %v", sortedKeys((before)))
	}

	// Session 2: --resume.
	st2, run, err := results.Resume(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st2.Close() }()
	kc.ClearActions()
	ex2 := &fakeExec{}
	// Before the first case: the leftover namespace is gone and so is every raw file of the case that runs again
	// (a re-run that fails before its samples must not sit next to them); the kept cases' files are there.
	prepared := func() {
		namespaceGone(t, kc)
		for _, name := range cni.RawFiles(t, dir) {
			if p, te, _, _, ok := cni.ParseRawName(name); ok && scenario.CNICaseID(p, te) == "cross-node/udp" {
				t.Errorf("raw/%s of the case that runs again is still there", name)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "raw", "same-node-tcp-2.json")); err != nil {
			t.Errorf("raw output of a kept case: %v", err)
		}
	}
	if err := session(context.Background(), cfg, kc, ex2, st2, run, prepared); err != nil {
		r, _ := results.Read(dir)
		t.Fatalf("resumed session: %v\n%+v\n%s", err, r.Cases[len(r.Cases)-1], strings.Join(ex2.calls, "\n"))
	}
	namespaceGone(t, kc)
	// The leftover namespace is deleted before the run's namespace is created again.
	var nsActions []string
	for _, a := range kc.Actions() {
		if a.GetResource().Resource == "namespaces" && (a.GetVerb() == "delete" || a.GetVerb() == "create") {
			nsActions = append(nsActions, a.GetVerb())
		}
	}
	if want := []string{"delete", "create", "delete"}; !slices.Equal(nsActions, want) {
		t.Errorf("namespace actions %v, want %v (leftover deleted, deployed, torn down)", nsActions, want)
	}
	// Only the unfinished case ran: two iperf3 samples.
	var iperf3 []string
	for _, c := range ex2.calls {
		if isTestExec(c) {
			iperf3 = append(iperf3, c)
		}
	}
	if len(iperf3) != 2 || !strings.Contains(iperf3[0], "-u") || !strings.Contains(iperf3[0], "10.244.1.20") {
		t.Errorf("resumed iperf3 execs %q, want the 2 samples of cross-node/udp", iperf3)
	}

	after := readDir(t, dir)
	// Recorded bytes kept: cases.jsonl and samples.jsonl up to what the kill left complete, every raw file of a
	// kept case.
	for _, f := range []string{results.CasesFile, results.SamplesFile} {
		old := before[f]
		if f == results.CasesFile {
			old = old[:bytes.LastIndexByte(old, '\n')+1] // the half-written line is cut
		}
		if !bytes.HasPrefix(after[f], old) {
			t.Errorf("%s: the recorded lines were not kept byte for byte", f)
		}
	}
	for name, b := range before {
		p, te, _, _, ok := cni.ParseRawName(name)
		if !ok || strings.HasPrefix(name, "raw"+string(filepath.Separator)) && scenario.CNICaseID(p, te) == "cross-node/udp" {
			continue
		}
		if !bytes.Equal(after[name], b) {
			t.Errorf("%s of a kept case changed", name)
		}
	}
	var raws []string
	for name := range after {
		if p, te, _, _, ok := cni.ParseRawName(name); ok && scenario.CNICaseID(p, te) == "cross-node/udp" {
			raws = append(raws, name)
		}
	}
	slices.Sort(raws)
	if want := []string{filepath.Join("raw", "cross-node-udp-1.json"), filepath.Join("raw", "cross-node-udp-2.json")}; !slices.Equal(raws, want) {
		t.Errorf("raw output of the resumed case %q, want %q (the stale .err.txt removed)", raws, want)
	}

	// Each case once, each sample once.
	final, err := results.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]int{}
	for _, c := range final.Cases {
		lines[c.CaseID]++
		if c.CaseID == "cross-node/udp" && c.Attempt != 2 {
			t.Errorf("cross-node/udp attempt %d, want 2 (attempt 1's orphan samples must never count)", c.Attempt)
		}
	}
	if want := map[string]int{"idle": 1, "same-node/tcp": 1, "same-node/udp": 1, "cross-node/tcp": 1, "cross-node/udp": 1}; !reflect.DeepEqual(lines, want) {
		t.Errorf("case lines %v, want %v", lines, want)
	}
	if done := final.DoneCases(); len(done) != 5 {
		t.Errorf("%d cases done, want 5", len(done))
	}
	reps := map[string][]int{}
	for _, s := range final.Samples {
		if s.Component == "cni-test" && s.Metric == results.MetricThroughput && s.Labels[results.CNILabelSource] == "" {
			reps[s.CaseID] = append(reps[s.CaseID], s.Repetition)
		}
	}
	for _, id := range []string{"same-node/tcp", "same-node/udp", "cross-node/tcp", "cross-node/udp"} {
		if !slices.Equal(reps[id], []int{1, 2}) {
			t.Errorf("%s throughput samples of repetitions %v, want [1 2]", id, reps[id])
		}
	}
	keptSamples := rec1.Samples // Read leaves out the orphan samples of the unfinished case
	var nowKept []results.Sample
	for _, s := range final.Samples {
		if _, ok := kept[s.CaseID]; ok {
			nowKept = append(nowKept, s)
		}
	}
	if !reflect.DeepEqual(keptSamples, nowKept) {
		t.Errorf("samples of the kept cases changed: %d before, %d after", len(keptSamples), len(nowKept))
	}
}

// cascadeNamespaceDelete makes the fake delete a namespace's pods, Services and EndpointSlices with it, as the
// namespace controller does before the namespace is gone (the client-go fake keeps them). The default
// ServiceAccount stays: the controller creates it again in the new namespace of that name.
func cascadeNamespaceDelete(kc *fake.Clientset) {
	// Through the tracker: a reactor runs under the fake's lock, so calling the clientset here would deadlock.
	kc.PrependReactor("delete", "namespaces", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ns := a.(k8stesting.DeleteAction).GetName()
		for _, k := range []struct {
			gvr  schema.GroupVersionResource
			kind string
		}{
			{corev1.SchemeGroupVersion.WithResource("pods"), "Pod"},
			{corev1.SchemeGroupVersion.WithResource("services"), "Service"},
			{discoveryv1.SchemeGroupVersion.WithResource("endpointslices"), "EndpointSlice"},
		} {
			list, err := kc.Tracker().List(k.gvr, k.gvr.GroupVersion().WithKind(k.kind), ns)
			if err != nil {
				return true, nil, err
			}
			items, err := meta.ExtractList(list)
			if err != nil {
				return true, nil, err
			}
			for _, it := range items {
				o, err := meta.Accessor(it)
				if err != nil {
					return true, nil, err
				}
				if err := kc.Tracker().Delete(k.gvr, ns, o.GetName()); err != nil {
					return true, nil, err
				}
			}
		}
		return false, nil, nil
	})
}

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// A resume whose kept cases ran on a node that is gone is refused (the resumed cases would measure another path),
// and so is one whose plan changed on the cluster; neither touches the cluster.
func TestResumeRefused(t *testing.T) {
	t.Parallel()
	ab := map[string]string{"node-a": "node1", "node-b": "node2"}
	tests := []struct {
		name     string
		nodes    []corev1.Node
		recorded []results.CaseResult
		input    bool // an orchestrate.InputError (exit 2)
		want     string
	}{
		{name: "kept node gone", nodes: []corev1.Node{cni.Node("node1"), cni.Node("node3")},
			recorded: []results.CaseResult{cni.CaseRec("same-node/tcp", string(results.StatusOK), ab)},
			want:     `the kept cases ran on node-a "node1" node-b "node2": placement: spec.cni.placement.serverNode: node "node2" does not exist`},
		{name: "second node now", nodes: []corev1.Node{cni.Node("node1"), cni.Node("node2")}, input: true,
			recorded: []results.CaseResult{cni.CaseRec("same-node/tcp", string(results.StatusOK), map[string]string{"node-a": "node1"}), cni.CaseRec("host/tcp", string(results.StatusSkipped), nil)},
			want:     "case host/tcp was recorded skipped (only one node) but the cluster can run it now; start a new run (meshbench cni -f SCENARIO, without --resume)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			kc := fakeCluster(t, tt.nodes...)
			cfg := testConfig(t)
			cfg.CNI.Tests = []scenario.CNITest{scenario.CNITestTCP}
			_, _, err := orchestrate.NewCNIBench(context.Background(), cfg, cni.Deps{Kube: kc, Exec: &fakeExec{}, Resources: fakeResources{}},
				&results.Run{Dir: cfg.RunDir, Cases: tt.recorded})
			var ie *orchestrate.InputError
			if err == nil || !strings.Contains(err.Error(), tt.want) || errors.As(err, &ie) != tt.input {
				t.Fatalf("err = %v, want %q (input error %v)", err, tt.want, tt.input)
			}
			for _, a := range kc.Actions() {
				if a.GetVerb() != "list" && a.GetVerb() != "get" {
					t.Errorf("a refused resume changed the cluster: %s %s", a.GetVerb(), a.GetResource().Resource)
				}
			}
		})
	}
}

// A namespace of the run's name that is not the run's (other labels) is never deleted by a resume.
func TestCleanupLeftoversLeavesForeignNamespace(t *testing.T) {
	t.Parallel()
	kc := fakeCluster(t, cni.Node("node1"), cni.Node("node2"))
	if err := kc.Tracker().Add(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNS, Labels: map[string]string{"team": "net"}}}); err != nil {
		t.Fatal(err)
	}
	var deleted bool
	kc.PrependReactor("delete", "namespaces", func(k8stesting.Action) (bool, runtime.Object, error) {
		deleted = true
		return false, nil, nil
	})
	b, err := cni.New(context.Background(), testConfig(t), cni.Deps{Kube: kc, Exec: &fakeExec{}})
	if err != nil {
		t.Fatal(err)
	}
	err = cni.CleanupLeftovers(b, context.Background())
	if err == nil || !strings.Contains(err.Error(), "namespace mb-cni-unit exists but is not run cni-unit's") || deleted {
		t.Errorf("err = %v, deleted %v", err, deleted)
	}
	// The run's own leftover is deleted.
	ns, _ := kc.CoreV1().Namespaces().Get(context.Background(), testNS, metav1.GetOptions{})
	ns.Labels = map[string]string{"app.kubernetes.io/managed-by": "meshbench", "meshbench.dev/run": "cni-unit", cni.ComponentLabel: cni.ComponentValue}
	if _, err := kc.CoreV1().Namespaces().Update(context.Background(), ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cni.CleanupLeftovers(b, context.Background()); err != nil || !deleted {
		t.Errorf("own leftover: err %v, deleted %v", err, deleted)
	}
	namespaceGone(t, kc)
	if err := cni.CleanupLeftovers(b, context.Background()); err != nil {
		t.Errorf("nothing left: %v", err)
	}
}

package app

import (
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/meshbench/meshbench/images"
	"github.com/meshbench/meshbench/internal/version"
	"github.com/meshbench/meshbench/orchestrate"
	"github.com/meshbench/meshbench/preflight"
	"github.com/meshbench/meshbench/scenario"
)

// fakeSource is a source tree with the real module path and tiny mains: the commands' wiring is tested here, the
// real binaries in package images.
func fakeSource(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for p, s := range map[string]string{
		"go.mod":                      "module github.com/meshbench/meshbench\n\ngo 1.26\n",
		"internal/version/version.go": "package version\n\nvar Version, Commit, BuildDate = \"dev\", \"\", \"\"\n",
		"cmd/meshbench-agent/main.go": "package main\n\nfunc main() { println(\"agent\") }\n",
		"cmd/meshbench/main.go":       "package main\n\nfunc main() { println(\"cli\") }\n",
	} {
		writeFile(t, filepath.Join(dir, p), s)
	}
	return dir
}

func writeFile(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func memRegistry(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// TestImagesBuildPushSave drives the three verbs against a fake tree and an in-memory registry, as the harness does:
// meshbench images push --registry REG --insecure.
func TestImagesBuildPushSave(t *testing.T) {
	t.Setenv("DOCKER_CONFIG", t.TempDir()) // no credentials of the machine's user
	t.Setenv("SOURCE_DATE_EPOCH", "1764547200")
	src := fakeSource(t)
	code, out, errOut := run(t, "images", "build", "--source", src, "--registry", "registry.example/mb", "--tag", "t1", "-o", "json")
	if code != exitOK {
		t.Fatalf("build: exit %d\n%s", code, errOut)
	}
	var built []images.Built
	if err := json.Unmarshal([]byte(out), &built); err != nil || len(built) != 2 {
		t.Fatalf("build -o json: %v\n%s", err, out)
	}
	if built[0].Ref != "registry.example/mb/meshbench-agent:t1" || built[1].Ref != "registry.example/mb/meshbench:t1" || len(built[0].Platforms) != 2 ||
		built[0].Platforms[1].Platform != "linux/arm64" || !strings.Contains(errOut, "created 2025-12-01T00:00:00Z") {
		t.Errorf("built %+v\nstderr %s", built, errOut)
	}
	code, table, _ := run(t, "images", "build", "--source", src, "--registry", "registry.example/mb", "--tag", "t1", "--platform", "linux/arm64")
	if code != exitOK || !strings.Contains(table, "registry.example/mb/meshbench:t1") || !strings.Contains(table, "  linux/arm64") || strings.Contains(table, "linux/amd64") {
		t.Errorf("build table (exit %d):\n%s", code, table)
	}

	reg := memRegistry(t) + "/meshbench"
	code, out, errOut = run(t, "images", "push", "--source", src, "--registry", reg, "--tag", "t1", "--insecure")
	if code != exitOK {
		t.Fatalf("push: exit %d\n%s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || lines[0] != reg+"/meshbench-agent:t1@"+built[0].Digest || !strings.Contains(errOut, "--insecure: plain HTTP") {
		t.Errorf("push printed %q (digests must equal the build's: reproducible)\nstderr %s", out, errOut)
	}
	// Progress on stderr per binary and per image (the harness shows it while make demo waits, issue 29 section 3).
	for _, want := range []string{"compiling ./cmd/meshbench-agent for linux/amd64 (binary 1 of 4)", "compiled ./cmd/meshbench for linux/arm64 (",
		"pushing " + reg + "/meshbench-agent:t1 (2 platforms, ", "pushed " + lines[1] + " in "} {
		if !strings.Contains(errOut, want) {
			t.Errorf("push stderr lacks %q:\n%s", want, errOut)
		}
	}
	ref, _ := name.ParseReference(lines[1])
	if _, err := remote.Head(ref); err != nil {
		t.Errorf("pushed CLI image not in the registry: %v", err)
	}

	file := filepath.Join(t.TempDir(), "images.tar")
	code, out, errOut = run(t, "images", "save", "--source", src, "--registry", reg, "--tag", "t1", "-o", file, "--platform", "linux/amd64")
	if st, err := os.Stat(file); code != exitOK || err != nil || st.Size() == 0 || !strings.Contains(out, "wrote "+file) || !strings.Contains(errOut, "kind load image-archive "+file) {
		t.Errorf("save: exit %d, %v\n%s\n%s", code, err, out, errOut)
	}
}

func TestImagesBadInput(t *testing.T) {
	src := fakeSource(t)
	other := t.TempDir()
	writeFile(t, filepath.Join(other, "go.mod"), "module example.com/other\n")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"images", "build", "--source", other}, "declares module"},
		{[]string{"images", "build", "--source", src, "--platform", "windows/amd64"}, "--platform"},
		{[]string{"images", "build", "--source", src, "--registry", "http://reg.example"}, "--registry"},
		{[]string{"images", "build", "--source", src, "--ca-certs", filepath.Join(src, "missing.pem")}, "--ca-certs"},
		{[]string{"images", "save", "--source", src}, "required flag"},
		{[]string{"images", "build", "--source", src, "-o", "csv"}, "--output"},
		{[]string{"images", "publish"}, "unknown command"},
	} {
		code, _, errOut := run(t, c.args...)
		if code != exitBadInput || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want 2 and %q", c.args, code, errOut, c.want)
		}
	}
}

const imageScenario = `apiVersion: meshbench.dev/v1alpha1
kind: Scenario
metadata: {name: img}
spec:
  workload: {app: fortio-chain}
  modes: [none]
  windows: {idle: 1s, load: 1s, repetitions: 1}
  cni: {tests: [tcp], paths: [same-node]}
`

// TestRunStopsOnMissingImage: run and cni resolve the images first; a registry without them is bad input and no run
// directory is created.
func TestRunStopsOnMissingImage(t *testing.T) {
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	dir := t.TempDir()
	scn := filepath.Join(dir, "s.yaml")
	writeFile(t, scn, imageScenario)
	// A kubeconfig whose API server refuses connections: nothing is reached, the node list is just missing.
	kc := filepath.Join(dir, "kubeconfig")
	writeFile(t, kc, "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"https://127.0.0.1:1\"}}]\n"+
		"users: [{name: u, user: {token: x}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n")
	reg := memRegistry(t) + "/empty"
	runs := filepath.Join(dir, "runs")
	for _, args := range [][]string{
		{"run", "-f", scn, "--image-registry", reg, "--output-dir", runs, "--kubeconfig", kc},
		{"cni", "-f", scn, "--image-registry", reg, "--output-dir", runs, "--kubeconfig", kc},
	} {
		code, _, errOut := run(t, args...)
		if code != exitBadInput || !strings.Contains(errOut, reg+"/meshbench-agent:") || !strings.Contains(errOut, "not found") ||
			!strings.Contains(errOut, "meshbench images push --registry "+reg) || !strings.Contains(errOut, "nothing was created") {
			t.Errorf("%s: exit %d\n%s", args[0], code, errOut)
		}
		if _, err := os.Stat(runs); !os.IsNotExist(err) {
			t.Errorf("%s created %s before the image check failed", args[0], runs)
		}
	}
	if code, _, errOut := run(t, "run", "--resume", runs, "--image-registry", reg); code != exitBadInput || !strings.Contains(errOut, "keeps the images it recorded") {
		t.Errorf("--resume with --image-registry: exit %d %s", code, errOut)
	}
}

func TestImageWants(t *testing.T) {
	t.Parallel()
	boa, err := scenario.ParseWith([]byte("apiVersion: meshbench.dev/v1alpha1\nkind: Scenario\nmetadata: {name: b}\nspec:\n  workload: {app: bank-of-anthos}\n  cni: {tests: [tcp]}\n"),
		scenario.LoadOptions{ImageTag: "v0.1.0", ImageRegistry: "reg.example/mb"})
	if err != nil {
		t.Fatal(err)
	}
	wants, err := orchestrate.ImageWants(boa, true, true)
	if err != nil {
		t.Fatal(err)
	}
	if wants[0] != (images.Want{Ref: "reg.example/mb/meshbench-agent:v0.1.0", Field: "spec.images.agent", Ours: true}) ||
		wants[1] != (images.Want{Ref: scenario.DefaultNetworkImage, Field: "spec.images.network"}) {
		t.Errorf("first wants %+v", wants[:2])
	}
	boaImages := map[string]bool{}
	for _, w := range wants[2:] {
		if w.Field == "spec.images.bankOfAnthos" {
			boaImages[w.Ref] = true
		}
	}
	// Every service and database of the app (workloads.boaComponents) is pulled from spec.images.bankOfAnthos.
	for _, c := range []string{"frontend", "userservice", "contacts", "balancereader", "ledgerwriter", "transactionhistory"} {
		if !boaImages[scenario.DefaultBankOfAnthosRepo+"/"+c+":"+scenario.DefaultBankOfAnthosTag] {
			t.Errorf("bank-of-anthos image %s not checked: %v", c, boaImages)
		}
	}
	agentOnly, _ := orchestrate.ImageWants(boa, false, false)
	if len(agentOnly) != 0 {
		t.Errorf("no command, wants %v", agentOnly)
	}
}

func TestImageCheckerForPreflight(t *testing.T) {
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	reg := memRegistry(t) + "/mb"
	s, err := scenario.ParseWith([]byte(imageScenario), scenario.LoadOptions{ImageRegistry: reg, ImageTag: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	checks := imageChecker{}.CheckImages(context.Background(), s, []string{"linux/amd64"})
	if len(checks) != 2 || checks[0].Name != "image meshbench-agent" || checks[0].Status != preflight.StatusFail ||
		!strings.Contains(checks[0].Detail, reg+"/meshbench-agent:v1 not found") || checks[1].Name != "image k8s-netperf" {
		t.Errorf("checks %+v", checks)
	}
}

// TestScheduleImageFollowsRegistry: the CronJob runs spec.images.meshbench, the CLI image of the scenario's registry
// and this version's tag, unless --image says otherwise.
func TestScheduleImageFollowsRegistry(t *testing.T) {
	t.Parallel()
	scn := filepath.Join("..", "..", "..", "schedule", "testdata", "scenario.yaml")
	tag := images.Tag(version.Get().Version)
	code, out, errOut := run(t, "schedule", "-f", scn, "--pvc", "runs", "--image-registry", "reg.example/team")
	if code != exitOK || !strings.Contains(out, "image: reg.example/team/meshbench:"+tag+"\n") ||
		!strings.Contains(out, "agent: reg.example/team/meshbench-agent:"+tag+"\n") {
		t.Errorf("exit %d\n%s\n%s", code, out, errOut)
	}
	if code, out, _ := run(t, "schedule", "-f", scn, "--pvc", "runs", "--image", "pinned.example/mb:1"); code != exitOK || !strings.Contains(out, "image: pinned.example/mb:1\n") {
		t.Errorf("--image: exit %d\n%s", code, out)
	}
}

// TestImageWantsBookinfo: the six Bookinfo images are checked and attributed to spec.images.bookinfo.
func TestImageWantsBookinfo(t *testing.T) {
	t.Parallel()
	s, err := scenario.Parse([]byte("apiVersion: meshbench.dev/v1alpha1\nkind: Scenario\nmetadata: {name: b}\nspec:\n  workload: {app: bookinfo}\n"))
	if err != nil {
		t.Fatal(err)
	}
	wants, err := orchestrate.ImageWants(s, true, false)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, w := range wants {
		if w.Field == "spec.images.bookinfo" {
			got[w.Ref] = true
		}
	}
	for _, d := range []string{"details-v1", "ratings-v1", "reviews-v1", "reviews-v2", "reviews-v3", "productpage-v1"} {
		if ref := scenario.DefaultBookinfoRepo + "/examples-bookinfo-" + d + ":" + scenario.DefaultBookinfoTag; !got[ref] {
			t.Errorf("bookinfo image %s not checked: %v", ref, got)
		}
	}
}

// TestImageWantsExisting: app existing runs on the user's nodes with the user's images; only the agent (the load
// client) is meshbench's to pull.
func TestImageWantsExisting(t *testing.T) {
	t.Parallel()
	s, err := scenario.ParseWith([]byte("apiVersion: meshbench.dev/v1alpha1\nkind: Scenario\nmetadata: {name: e}\nspec:\n  workload:\n    app: existing\n    existing: {namespaces: [shop]}\n  load:\n    targets: [{service: web, port: 8080}]\n"),
		scenario.LoadOptions{ImageTag: "v0.1.0", ImageRegistry: "reg.example/mb"})
	if err != nil {
		t.Fatal(err)
	}
	wants, err := orchestrate.ImageWants(s, true, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(wants) != 1 || wants[0].Ref != "reg.example/mb/meshbench-agent:v0.1.0" {
		t.Errorf("wants %+v", wants)
	}
}

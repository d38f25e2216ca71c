package importrules

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// -root checks another checkout of the module (e.g. a `git worktree` of an older commit) instead of this one:
// go test ./internal/importrules -run TestImportRules -args -root /path/to/checkout
var root = flag.String("root", "", "module root to check (default: this module)")

// goList returns the module path and the direct non-test imports of every package of the module at dir.
func goList(t *testing.T, dir string) (string, map[string][]string) {
	t.Helper()
	run := func(args ...string) []byte {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, stderr.String())
		}
		return out
	}
	module := strings.TrimSpace(string(run("list", "-m")))
	dec := json.NewDecoder(bytes.NewReader(run("list", "-e", "-json=ImportPath,Imports", "./...")))
	graph := map[string][]string{}
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		graph[p.ImportPath] = p.Imports
	}
	return module, graph
}

func TestImportRules(t *testing.T) {
	dir := *root
	if dir == "" {
		dir = filepath.Join("..", "..")
	}
	module, graph := goList(t, dir)
	if len(graph) < 10 {
		t.Fatalf("go list found only %d packages in %s", len(graph), dir)
	}
	for _, v := range Check(module, graph) {
		t.Error(v)
	}
}

// The rules catch what they are for: the edges below are the breaks the project had or must never have.
func TestCheckFindsForbiddenEdges(t *testing.T) {
	t.Parallel()
	const m = "example.com/mb"
	for _, tc := range []struct {
		name  string
		graph map[string][]string
		want  string // substring of the only violation; "" = none
	}{
		{"adapter to adapter", map[string][]string{m + "/mesh": {m + "/workloads", m + "/scenario"}, m + "/workloads": nil, m + "/scenario": nil},
			"mesh (adapter) imports workloads (adapter): adapters never import each other"},
		{"core imports a project package", map[string][]string{m + "/results": {m + "/scenario"}, m + "/scenario": nil},
			"results (core) imports scenario (core)"},
		{"leaf imports an adapter", map[string][]string{m + "/internal/podset": {m + "/workloads"}, m + "/workloads": nil},
			"internal/podset (leaf) imports workloads (adapter)"},
		{"shared client imports an adapter", map[string][]string{m + "/internal/target": {m + "/workloads"}, m + "/workloads": nil},
			"internal/target (shared client) imports workloads (adapter)"},
		{"leaf imports a shared client", map[string][]string{m + "/internal/nettool": {m + "/internal/kube"}, m + "/internal/kube": nil},
			"internal/nettool (leaf) imports internal/kube (shared client): leaf packages import only"},
		{"report talks to the cluster", map[string][]string{m + "/report": {m + "/internal/target"}, m + "/internal/target": nil},
			"report (offline) imports internal/target (shared client): only the adapters"},
		{"runner imports an adapter", map[string][]string{m + "/runner": {m + "/mesh"}, m + "/mesh": nil},
			"runner (runner) imports mesh (adapter)"},
		{"composition imports a command", map[string][]string{m + "/orchestrate": {m + "/cmd/meshbench/app"}, m + "/cmd/meshbench/app": nil},
			"nothing imports the commands"},
		{"foundation imports core", map[string][]string{m + "/internal/inputfile": {m + "/results"}, m + "/results": nil},
			"internal/inputfile (foundation) imports results (core): foundation packages import no project package"},
		{"unclassified package", map[string][]string{m + "/newthing": {"fmt"}}, "newthing: not in the import rule table"},
		{"cni reads prom directly", map[string][]string{m + "/cni": {m + "/collectors/prom"}, m + "/collectors/prom": nil},
			"cni (adapter) imports collectors/prom (adapter)"},
		{"allowed", map[string][]string{
			m + "/cmd/meshbench/app": {m + "/orchestrate", m + "/mesh", m + "/runner"}, m + "/orchestrate": {m + "/mesh", m + "/workloads", m + "/runner"},
			m + "/mesh": {m + "/internal/target", m + "/scenario", "k8s.io/api/core/v1"}, m + "/workloads": {m + "/internal/target"},
			m + "/runner": {m + "/internal/target", m + "/results"}, m + "/internal/target": {m + "/internal/kube", m + "/scenario"},
			m + "/internal/kube": nil, m + "/scenario": {m + "/internal/inputfile"}, m + "/results": {m + "/internal/inputfile"}, m + "/internal/inputfile": nil,
			m + "/cni": {m + "/internal/nettool", m + "/internal/podset"}, m + "/internal/nettool": nil, m + "/internal/podset": {m + "/results"},
			m + "/collectors/prom": {m + "/internal/podset", m + "/results"},
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := Check(m, tc.graph)
			switch {
			case tc.want == "" && len(got) != 0:
				t.Errorf("violations %q, want none", got)
			case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want)):
				t.Errorf("violations %q, want one containing %q", got, tc.want)
			}
		})
	}
}

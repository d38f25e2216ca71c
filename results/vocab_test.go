package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// vocabularyHomes are the typed vocabulary by the package (module-relative) that spells it: a string literal of one
// of these types belongs in its home. results is the recorded vocabulary; scenario, which may import no project
// package, spells the configured modes and pod network tests and paths (TestVocabularyOrders pins them to results').
var vocabularyHomes = map[string][]string{
	"results":  {"Mode", "Component", "Metric", "Stat", "Unit", "FactKey", "Status", "CNITest", "CNIPath"},
	"scenario": {"Mode", "CNITest", "CNIPath"},
}

// outsideProduct are module-relative path prefixes that are not product code.
var outsideProduct = []string{"hack/", "test/", "docs"}

type listedPackage struct {
	ImportPath, Dir, Export string
	GoFiles                 []string
	Standard                bool
}

// goListExport lists the module's packages and every dependency with its compiled export data.
func goListExport(t *testing.T, root string) (module string, pkgs []listedPackage, exports map[string]string) {
	t.Helper()
	run := func(args ...string) []byte {
		cmd := exec.Command("go", args...)
		cmd.Dir = root
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		return out
	}
	module = strings.TrimSpace(string(run("list", "-m")))
	exports = map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(run("list", "-export", "-deps", "-json=ImportPath,Dir,Export,GoFiles,Standard", "./...")))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		exports[p.ImportPath] = p.Export
		if !p.Standard && (p.ImportPath == module || strings.HasPrefix(p.ImportPath, module+"/")) {
			pkgs = append(pkgs, p)
		}
	}
	return module, pkgs, exports
}

// vocabularyOf is the name of the vocabulary type t is ("" for none).
func vocabularyOf(t types.Type, module string) (home, name string) {
	n, ok := t.(*types.Named)
	if !ok || n.Obj().Pkg() == nil {
		return "", ""
	}
	home = strings.TrimPrefix(n.Obj().Pkg().Path(), module+"/")
	if !slices.Contains(vocabularyHomes[home], n.Obj().Name()) {
		return "", ""
	}
	return home, n.Obj().Name()
}

// vocabularyLiterals type-checks one package and returns every non-empty string literal it spells as a vocabulary
// value: typed as one by the context (Stat: "avg", s.Metric == "cpu", []results.Mode{"none"}) or converted to one
// (results.Unit("ms")).
func vocabularyLiterals(fset *token.FileSet, imp types.Importer, p listedPackage, module string) ([]string, error) {
	self := strings.TrimPrefix(p.ImportPath, module+"/") // a home spells its own vocabulary
	var files []*ast.File
	for _, name := range p.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, 0)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}}
	if _, err := (&types.Config{Importer: imp}).Check(p.ImportPath, fset, files, info); err != nil {
		return nil, err
	}
	var out []string
	report := func(lit *ast.BasicLit, typ string) {
		out = append(out, fmt.Sprintf("%s: %s literal %s: use the %s constant", fset.Position(lit.Pos()), typ, lit.Value, typ))
	}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			// A converted literal (results.Unit("ms")) is recorded with the type it converts to, as one the
			// context types (Stat: "avg"); "" is no value (s.Mode == "": a cni sample), not a spelling of one.
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING && lit.Value != `""` {
				if home, name := vocabularyOf(info.Types[lit].Type, module); name != "" && home != self {
					report(lit, home+"."+name)
				}
			}
			return true
		})
	}
	return out, nil
}

// TestVocabularyLivesInItsHome rejects vocabulary literals in product code outside their home (vocabularyHomes): a
// mode, component, metric, stat, unit, fact key, case status, pod network test or path is spelled once, as a constant.
func TestVocabularyLivesInItsHome(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks the module")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	module, pkgs, exports := goListExport(t, root)
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		if e := exports[path]; e != "" {
			return os.Open(e)
		}
		return nil, fmt.Errorf("no export data for %s", path)
	})
	checked := 0
	var found []string
	for _, p := range pkgs {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		if slices.ContainsFunc(outsideProduct, func(pre string) bool {
			return rel == strings.TrimSuffix(pre, "/") || strings.HasPrefix(rel, pre)
		}) {
			continue
		}
		lits, err := vocabularyLiterals(fset, imp, p, module)
		if err != nil {
			t.Fatalf("%s: %v", p.ImportPath, err)
		}
		checked++
		found = append(found, lits...)
	}
	if checked < 10 {
		t.Fatalf("checked only %d packages", checked)
	}
	sort.Strings(found)
	for _, f := range found {
		t.Error(f)
	}
}

// The check finds what it is for: a literal typed by its context and one converted explicitly.
func TestVocabularyLiteralsFound(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks the module")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	module, _, exports := goListExport(t, root)
	dir := t.TempDir()
	src := `package x

import (
	"` + module + `/results"
	"` + module + `/scenario"
)

var s = results.Sample{Stat: "avg", Metric: results.MetricCPU}
var u = results.Unit("ms")
var ok = s.Component == results.ComponentApp
var label = map[string]string{"app": "x"}
var m = []scenario.Mode{scenario.ModeNone, "ambient"}
`
	if err := os.WriteFile(filepath.Join(dir, "x.go"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		if e := exports[path]; e != "" {
			return os.Open(e)
		}
		return nil, fmt.Errorf("no export data for %s", path)
	})
	got, err := vocabularyLiterals(fset, imp, listedPackage{ImportPath: "example.com/x", Dir: dir, GoFiles: []string{"x.go"}}, module)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || !strings.Contains(got[0], `results.Stat literal "avg"`) || !strings.Contains(got[1], `results.Unit literal "ms"`) ||
		!strings.Contains(got[2], `scenario.Mode literal "ambient"`) {
		t.Errorf("found %q, want the Stat literal \"avg\", the Unit literal \"ms\" and the Mode literal \"ambient\" only", got)
	}
}

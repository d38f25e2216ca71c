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

// vocabularyTypes are the typed vocabulary: a string literal of one of them belongs here, in results.
var vocabularyTypes = []string{"Mode", "Component", "Metric", "Stat", "Unit", "FactKey", "Status", "CNITest", "CNIPath"}

// notYetConverted is a TEMPORARY allowlist: packages (module-relative) that still spell vocabulary values as
// literals. Issue 33 converts them one by one; a package leaves the list in the commit that converts it.
var notYetConverted = []string{"scenario"}

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
func vocabularyOf(t types.Type, resultsPath string) string {
	n, ok := t.(*types.Named)
	if !ok || n.Obj().Pkg() == nil || n.Obj().Pkg().Path() != resultsPath || !slices.Contains(vocabularyTypes, n.Obj().Name()) {
		return ""
	}
	return n.Obj().Name()
}

// vocabularyLiterals type-checks one package and returns every non-empty string literal it spells as a vocabulary
// value: typed as one by the context (Stat: "avg", s.Metric == "cpu", []results.Mode{"none"}) or converted to one
// (results.Unit("ms")).
func vocabularyLiterals(fset *token.FileSet, imp types.Importer, p listedPackage, resultsPath string) ([]string, error) {
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
		out = append(out, fmt.Sprintf("%s: %s literal %s: use the results.%s constant", fset.Position(lit.Pos()), typ, lit.Value, typ))
	}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			// A converted literal (results.Unit("ms")) is recorded with the type it converts to, as one the
			// context types (Stat: "avg"); "" is no value (s.Mode == "": a cni sample), not a spelling of one.
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING && lit.Value != `""` {
				if typ := vocabularyOf(info.Types[lit].Type, resultsPath); typ != "" {
					report(lit, typ)
				}
			}
			return true
		})
	}
	return out, nil
}

// TestVocabularyLivesInResults rejects vocabulary literals in product code outside results: a mode, component,
// metric, stat, unit, fact key, case status, pod network test or path is spelled once, as a results constant.
func TestVocabularyLivesInResults(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks the module")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	module, pkgs, exports := goListExport(t, root)
	resultsPath := module + "/results"
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
		if rel == "results" || slices.Contains(notYetConverted, rel) || slices.ContainsFunc(outsideProduct, func(pre string) bool {
			return rel == strings.TrimSuffix(pre, "/") || strings.HasPrefix(rel, pre)
		}) {
			continue
		}
		lits, err := vocabularyLiterals(fset, imp, p, resultsPath)
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

import "` + module + `/results"

var s = results.Sample{Stat: "avg", Metric: results.MetricCPU}
var u = results.Unit("ms")
var ok = s.Component == results.ComponentApp
var label = map[string]string{"app": "x"}
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
	got, err := vocabularyLiterals(fset, imp, listedPackage{ImportPath: "example.com/x", Dir: dir, GoFiles: []string{"x.go"}}, module+"/results")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !strings.Contains(got[0], `Stat literal "avg"`) || !strings.Contains(got[1], `Unit literal "ms"`) {
		t.Errorf("found %q, want the Stat literal \"avg\" and the Unit literal \"ms\" only", got)
	}
}

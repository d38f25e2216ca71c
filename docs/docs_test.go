package docs_test

import (
	"bytes"
	"os"
	"os/exec"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/capacity"
	"github.com/meshbench/meshbench/internal/inputfile"
	"github.com/meshbench/meshbench/results"
)

const module = "github.com/meshbench/meshbench/"

// packageRow matches a row of architecture.md's package table: | `path` | role |.
var packageRow = regexp.MustCompile("(?m)^\\| `([a-z0-9_./-]+)` \\|")

// TestArchitectureListsEveryPackage: every package `go list ./...` reports has a row in architecture.md's table, and
// every row names a package that exists. The failure names each package and what to do.
func TestArchitectureListsEveryPackage(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skipf("go is not on PATH: %v", err)
	}
	cmd := exec.Command("go", "list", "./...")
	cmd.Dir = ".."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v\n%s", err, stderr.String())
	}
	var pkgs []string
	for _, line := range strings.Fields(string(out)) {
		pkgs = append(pkgs, strings.TrimPrefix(line, module))
	}
	doc, err := os.ReadFile("architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, m := range packageRow.FindAllStringSubmatch(string(doc), -1) {
		listed = append(listed, m[1])
	}
	if len(listed) == 0 {
		t.Fatal("architecture.md has no package table rows (| `path` | role |)")
	}
	for _, p := range pkgs {
		if !slices.Contains(listed, p) {
			t.Errorf("package %s is not in docs/architecture.md: add a row \"| `%s` | <its role> |\" to the package table (and say where it sits in the data flow)", p, p)
		}
	}
	for _, p := range listed {
		if !slices.Contains(pkgs, p) {
			t.Errorf("docs/architecture.md lists package %s, which `go list ./...` does not report: remove or rename its row", p)
		}
	}
}

// TestResultsDocumentsEveryField: every JSON field of the results files' types (run.json, samples.jsonl,
// cases.jsonl, summary.json, `meshbench project -o json`, and the types inside them) appears in results.md as `name`.
func TestResultsDocumentsEveryField(t *testing.T) {
	doc, err := os.ReadFile("results.md")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[reflect.Type]bool{}
	documented := map[string]bool{reflect.TypeFor[results.RunMeta]().PkgPath(): true, reflect.TypeFor[capacity.Projection]().PkgPath(): true}
	var fields []string // "Type.field"
	var walk func(reflect.Type)
	walk = func(typ reflect.Type) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Map {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct || !documented[typ.PkgPath()] || seen[typ] {
			return
		}
		seen[typ] = true
		for i := range typ.NumField() {
			f := typ.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if f.Anonymous && name == "" { // embedded (Key in Series and Delta): its fields are inlined
				walk(f.Type)
				continue
			}
			if name == "" {
				name = f.Name
			}
			fields = append(fields, typ.Name()+"."+name)
			if f.Type != reflect.TypeFor[time.Time]() {
				walk(f.Type)
			}
		}
	}
	for _, top := range []reflect.Type{reflect.TypeFor[results.RunMeta](), reflect.TypeFor[results.Sample](),
		reflect.TypeFor[results.CaseResult](), reflect.TypeFor[results.Summary](), reflect.TypeFor[capacity.Projection]()} {
		walk(top)
	}
	if len(fields) < 40 {
		t.Fatalf("found only %d fields in the results types: the walk is broken", len(fields))
	}
	for _, f := range fields {
		_, name, _ := strings.Cut(f, ".")
		if !bytes.Contains(doc, []byte("`"+name+"`")) {
			t.Errorf("JSON field %s (results.%s) is not described in docs/results.md: add `%s` with its meaning and unit", name, f, name)
		}
	}
}

// TestReliabilityListsEveryInputFileCap: docs/reliability.md's table of the files meshbench reads has one row per
// inputfile.Kind, with the cap (and line cap) the code enforces.
func TestReliabilityListsEveryInputFileCap(t *testing.T) {
	doc, err := os.ReadFile("reliability.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(doc), "| kind | read by | cap | line cap |\n|---|---|---|---|\n")
	if !ok {
		t.Fatal(`reliability.md has no table "| kind | read by | cap | line cap |"`)
	}
	table, _, _ = strings.Cut(table, "\n\n")
	rows := map[string][]string{}
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if len(cells) != 4 {
			t.Fatalf("row %q: want 4 cells", line)
		}
		rows[cells[0]] = cells
	}
	short := func(n int64) string {
		if n == 0 {
			return ""
		}
		b := inputfile.Bytes(n)
		if _, unit, ok := strings.Cut(b, "("); ok {
			return strings.TrimSuffix(unit, ")")
		}
		return b
	}
	for _, k := range inputfile.Kinds() {
		r, ok := rows[k.String()]
		switch {
		case !ok:
			t.Errorf("reliability.md lists no %q: add a row with its cap %s", k, short(k.Max()))
		case r[2] != short(k.Max()) || r[3] != short(k.MaxLine()):
			t.Errorf("reliability.md: %s: cap %q, line cap %q; the code has %q, %q", k, r[2], r[3], short(k.Max()), short(k.MaxLine()))
		}
		delete(rows, k.String())
	}
	for name := range rows {
		t.Errorf("reliability.md lists %q, which is no inputfile.Kind", name)
	}
}

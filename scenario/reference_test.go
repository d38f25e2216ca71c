package scenario

import (
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestConfigReference keeps docs/config-reference.md in sync with the Go types: every field, its type, its default
// and the doc comment from types.go, types_load.go, transitions.go, enforcement.go and variants.go. Run `go test ./scenario -run TestConfigReference -update` after changing types.
func TestConfigReference(t *testing.T) {
	docs := fieldDocs(t, "types.go", "types_load.go", "transitions.go", "enforcement.go", "variants.go")
	def := &Scenario{Spec: Spec{Workload: Workload{App: AppFortioChain}, CNI: CNI{Samples: 3}, Transitions: Transitions{Moves: []Move{{}}}, Enforcement: Enforcement{Modes: []Mode{ModeSidecar}}}}
	SetDefaults(def)
	var b strings.Builder
	b.WriteString("# Scenario configuration reference\n\n")
	b.WriteString("Generated from `scenario/types.go`, `scenario/types_load.go`, `scenario/transitions.go`, `scenario/enforcement.go` and `scenario/variants.go` by `go test ./scenario -run TestConfigReference -update`; a test fails when it is out of date.\n")
	b.WriteString("Defaults shown are for `profile: default` and `app: fortio-chain` (the cni, transitions and enforcement sections' defaults apply only when the section is present).\n")
	b.WriteString("Durations are Go durations (`30s`, `10m`); unknown fields are errors.\n\n")
	b.WriteString("| field | type | default | description |\n|---|---|---|---|\n")
	walk(&b, docs, reflect.TypeOf(Scenario{}), reflect.ValueOf(*def), "")
	golden(t, "../../docs/config-reference.md", []byte(b.String()))
}

func walk(b *strings.Builder, docs map[string]map[string]string, typ reflect.Type, val reflect.Value, prefix string) {
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		path := name
		if prefix != "" {
			path = prefix + "." + name
		}
		ft, fv := f.Type, val.Field(i)
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
			if fv.IsNil() {
				fv = reflect.Zero(ft)
			} else {
				fv = fv.Elem()
			}
		}
		doc := strings.ReplaceAll(docs[typ.Name()][f.Name], "|", "\\|")
		if isLeaf(ft) {
			def := defaultOf(fv)
			if path == requiredApp { // set by the reference's own defaults (to show the chain's), not by SetDefaults
				def = "required"
			}
			fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", path, typeName(ft), def, doc)
			continue
		}
		if ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct && !isLeaf(ft.Elem()) {
			fmt.Fprintf(b, "| `%s` | list | | %s |\n", path, doc)
			walk(b, docs, ft.Elem(), reflect.Zero(ft.Elem()), path+"[]")
			continue
		}
		fmt.Fprintf(b, "| `%s` | object | | %s |\n", path, doc)
		walk(b, docs, ft, fv, path)
	}
}

// requiredApp is the field the reference sets itself to show the defaults that depend on it: it has none.
const requiredApp = "spec.workload.app"

// TestWorkloadAppRequired: the reference documents no default for spec.workload.app (it showed "fortio-chain", the
// app the reference itself assumes, while leaving the field out was refused), and leaving it out is refused with a
// problem that says it is required and how a cni-only scenario is written.
func TestWorkloadAppRequired(t *testing.T) {
	t.Parallel()
	ref, err := os.ReadFile("../docs/config-reference.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(ref), "| `spec.workload.app` | string | required | ") {
		t.Errorf("docs/config-reference.md documents a default for spec.workload.app:\n%s", grepLine(string(ref), "`spec.workload.app`"))
	}
	_, err = Parse([]byte("apiVersion: meshbench.dev/v1alpha1\nkind: Scenario\nmetadata: {name: a}\nspec:\n  workload: {replicas: 2}\n"))
	var ps Problems
	if !errors.As(err, &ps) || len(ps) != 1 || ps[0].Path != requiredApp || !strings.Contains(ps[0].Message, "is required") ||
		!strings.Contains(ps[0].Message, "meshbench cni alone leaves workload out") {
		t.Errorf("workload without app: %v", err)
	}
}

func grepLine(text, sub string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}

func isLeaf(t reflect.Type) bool {
	switch t {
	case reflect.TypeOf(Duration{}), reflect.TypeOf(QPS{}):
		return true
	}
	return t.Kind() != reflect.Struct && !(t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct && t.Elem() != reflect.TypeOf(QPS{}))
}

func typeName(t reflect.Type) string {
	switch {
	case t == reflect.TypeOf(Duration{}):
		return "duration"
	case t == reflect.TypeOf(QPS{}):
		return `number or "max"`
	case t.Kind() == reflect.Slice:
		return "list of " + typeName(t.Elem())
	case t.Kind() == reflect.Map:
		return "map of " + typeName(t.Elem())
	case t.Kind() == reflect.String:
		return "string"
	case t.Kind() == reflect.Bool:
		return "bool"
	case t.Kind() == reflect.Float64:
		return "number"
	default:
		return t.Kind().String()
	}
}

func defaultOf(v reflect.Value) string {
	if !v.IsValid() || v.IsZero() {
		return ""
	}
	b, err := json.Marshal(v.Interface())
	if err != nil {
		return ""
	}
	return "`" + strings.ReplaceAll(string(b), "|", "\\|") + "`"
}

// fieldDocs maps struct name -> field name -> doc comment text (one line) from a Go source file.
func fieldDocs(t *testing.T, files ...string) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	for _, file := range files {
		structFieldDocs(t, file, out)
	}
	return out
}

// structFieldDocs adds, per struct type of file, each field's doc comment to out.
func structFieldDocs(t *testing.T, file string, out map[string]map[string]string) {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	f, err := parser.ParseFile(token.NewFileSet(), file, src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok {
			return true
		}
		st, ok := ts.Type.(*ast.StructType)
		if !ok {
			return true
		}
		m := map[string]string{}
		for _, fld := range st.Fields.List {
			text := ""
			if fld.Doc != nil {
				text = strings.Join(strings.Fields(fld.Doc.Text()), " ")
			} else if fld.Comment != nil {
				text = strings.Join(strings.Fields(fld.Comment.Text()), " ")
			}
			for _, nm := range fld.Names {
				// "Name is ..." -> "Name is ..."; keep the sentence as written.
				m[nm.Name] = text
			}
		}
		out[ts.Name.Name] = m
		return true
	})
}

package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/meshbench/meshbench/internal/inputfile"
)

// Limits of the decoder. A scenario is a small hand-written file: anything near these limits is a mistake or an
// attack, and refusing it early keeps a hostile file from taking the machine's memory.
const (
	// maxFileBytes is the largest scenario accepted (inputfile.MaxScenario, 1 MiB; the shipped examples are about
	// 1 KiB).
	maxFileBytes = inputfile.MaxScenario
	// maxStringBytes bounds every string field except those with their own limit (metadata.description).
	maxStringBytes = 1024
	// maxDescriptionBytes bounds metadata.description.
	maxDescriptionBytes = 4096
	// minQPSLevel and maxQPSLevel bound a numeric load level (spec.load.qps): 0.1 rps gives a 10-minute window 60
	// requests, and 10 million rps is beyond what 100 fortio clients drive. The bounds keep case IDs short and every
	// per-request figure finite.
	minQPSLevel = 0.1
	maxQPSLevel = 1e7
	// maxListItems bounds every list (load levels, topologies, modes, tests, paths).
	maxListItems = 256
	// maxNodes bounds the YAML nodes visited, aliases expanded each time they are used (a "billion laughs"
	// document of nested aliases stays small on disk).
	maxNodes = 100000
)

// tagName is the struct tag of Scenario's fields: "defaulted" (SetDefaults replaces the zero value, so the decoder
// refuses an explicit zero, "", empty list or null, which would silently mean the default) and "max=N" (the field's
// string length limit in bytes instead of maxStringBytes).
const tagName = "mb"

var (
	durationType = reflect.TypeOf(Duration{})
	qpsType      = reflect.TypeOf(QPS{})
)

// fieldInfo is what the decoder knows about one struct field.
type fieldInfo struct {
	index     int
	name      string
	defaulted bool
	maxLen    int
}

var fieldCache sync.Map // reflect.Type -> map[string]fieldInfo: types are immutable, so caching is not state

func fieldsOf(t reflect.Type) map[string]fieldInfo {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string]fieldInfo)
	}
	m := map[string]fieldInfo{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		fi := fieldInfo{index: i, name: name, maxLen: maxStringBytes}
		for _, opt := range strings.Split(f.Tag.Get(tagName), ",") {
			switch {
			case opt == "defaulted":
				fi.defaulted = true
			case strings.HasPrefix(opt, "max="):
				if n, err := strconv.Atoi(strings.TrimPrefix(opt, "max=")); err == nil {
					fi.maxLen = n
				}
			}
		}
		m[name] = fi
	}
	fieldCache.Store(t, m)
	return m
}

// decoder turns a YAML node tree into a Scenario field by field, recording every problem with its path and line
// and leaving a field it cannot decode at its zero value, so decoding and validation go on for the rest.
type decoder struct {
	ps       Problems
	nodes    int
	overflow bool
}

func (d *decoder) add(p *field.Path, n *yaml.Node, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if n != nil && n.Line > 0 {
		msg += fmt.Sprintf(" (line %d)", n.Line)
	}
	d.ps = append(d.ps, Problem{Path: pathString(p), Message: msg})
}

func pathString(p *field.Path) string {
	if p == nil {
		return "(document)"
	}
	return p.String()
}

func child(p *field.Path, name string) *field.Path {
	if p == nil {
		return field.NewPath(name)
	}
	return p.Child(name)
}

// decodeYAML decodes one YAML (or JSON) document into s. Syntax errors, a second document and every field-level
// problem (unknown or repeated field, wrong type, explicit zero of a defaulted field, NaN, over-long value) are
// returned together; ok is false when nothing could be decoded at all.
func decodeYAML(data []byte, s *Scenario) (ps Problems, ok bool) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return Problems{{Path: "(document)", Message: emptyDocument}}, false
		}
		return Problems{{Path: "(document)", Message: syntaxMessage(err)}}, false
	}
	d := &decoder{}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		d.add(nil, nil, "a second YAML document starts at line %d; a scenario file holds exactly one: remove the '---' and what follows it, or move it to a file of its own", docLine(&next))
	case !errors.Is(err, io.EOF):
		d.add(nil, nil, "after the first document: %s", syntaxMessage(err))
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if isNull(root) {
		return append(Problems{{Path: "(document)", Message: emptyDocument}}, d.ps...), false
	}
	if root.Kind != yaml.MappingNode {
		d.add(nil, root, "found %s, expected a mapping with apiVersion, kind, metadata and spec", describe(root))
		return d.ps, false
	}
	d.value(root, reflect.ValueOf(s).Elem(), nil, fieldInfo{maxLen: maxStringBytes})
	return d.ps, true
}

const emptyDocument = "is empty; a scenario starts with apiVersion: " + APIVersion + " and kind: " + Kind + " (see examples/quickstart.yaml)"

func syntaxMessage(err error) string {
	return strings.TrimPrefix(err.Error(), "yaml: ") + "; fix the YAML syntax there"
}

// docLine is the line a document's content starts on (its '---' is usually the line before).
func docLine(doc *yaml.Node) int {
	if len(doc.Content) > 0 && doc.Content[0].Line > 0 {
		return doc.Content[0].Line
	}
	return doc.Line
}

func isNull(n *yaml.Node) bool {
	return n.Kind == 0 || (n.Kind == yaml.ScalarNode && n.Tag == "!!null")
}

// describe says what a node is, for "found X, expected Y".
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		v := n.Value
		if len(v) > 40 {
			v = v[:40] + "..."
		}
		switch n.Tag {
		case "!!null":
			return "null"
		case "!!bool":
			return "the boolean " + v
		case "!!int", "!!float":
			return "the number " + v
		case "!!str":
			return fmt.Sprintf("the string %q", v)
		}
		return fmt.Sprintf("%s %q", strings.TrimPrefix(n.Tag, "!!"), v)
	}
	return "an unsupported YAML node"
}

// value decodes n into v (settable), at path p.
func (d *decoder) value(n *yaml.Node, v reflect.Value, p *field.Path, fi fieldInfo) {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
		d.nodes++
	}
	if d.nodes++; d.nodes > maxNodes {
		if !d.overflow {
			d.overflow = true
			d.add(nil, n, "has more than %d values (counting every use of an alias); a scenario is a short file: write it out without nested aliases", maxNodes)
		}
		return
	}
	if n.Kind == yaml.AliasNode {
		d.add(p, n, "is an alias to nothing; define the anchor first")
		return
	}
	switch v.Type() {
	case durationType:
		d.duration(n, v, p, fi)
		return
	case qpsType:
		d.qps(n, v, p)
		return
	}
	if isNull(n) && v.Kind() != reflect.Struct && v.Kind() != reflect.Pointer {
		if fi.defaulted {
			d.add(p, n, "is null; leave the field out to get its default, or give a value")
		}
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if isNull(n) {
			return
		}
		e := reflect.New(v.Type().Elem())
		d.value(n, e.Elem(), p, fi)
		v.Set(e)
	case reflect.Struct:
		d.structValue(n, v, p)
	case reflect.Slice:
		d.slice(n, v, p, fi)
	case reflect.Map:
		d.mapValue(n, v, p, fi)
	case reflect.String:
		d.str(n, v, p, fi)
	case reflect.Bool:
		d.boolean(n, v, p)
	case reflect.Int, reflect.Int64:
		d.integer(n, v, p, fi)
	case reflect.Float64:
		d.float(n, v, p)
	default:
		d.add(p, n, "cannot be decoded (a %s field); this is a bug in meshbench", v.Kind())
	}
}

func (d *decoder) structValue(n *yaml.Node, v reflect.Value, p *field.Path) {
	if isNull(n) {
		return // "spec.windows:" with nothing below: every field unset
	}
	if n.Kind != yaml.MappingNode {
		d.add(p, n, "found %s, expected a mapping of fields (indent them below %s)", describe(n), lastName(p))
		return
	}
	fields := fieldsOf(v.Type())
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			d.add(p, k, "has a key that is %s; keys are plain field names", describe(k))
			continue
		}
		fp := child(p, k.Value)
		if line, dup := seen[k.Value]; dup {
			d.add(fp, k, "is set twice (first on line %d); keep one", line)
			continue
		}
		seen[k.Value] = k.Line
		f, ok := fields[k.Value]
		if !ok {
			d.add(fp, k, "unknown field; check its spelling and indentation against the config reference (docs/config-reference.md)")
			continue
		}
		d.value(val, v.Field(f.index), fp, f)
	}
}

func lastName(p *field.Path) string {
	if p == nil {
		return "the document"
	}
	s := p.String()
	if i := strings.LastIndexByte(s, '.'); i >= 0 {
		s = s[i+1:]
	}
	return s
}

func (d *decoder) slice(n *yaml.Node, v reflect.Value, p *field.Path, fi fieldInfo) {
	if n.Kind != yaml.SequenceNode {
		d.add(p, n, "found %s, expected a list such as [a, b] or lines starting with '- '", describe(n))
		return
	}
	if len(n.Content) == 0 {
		if fi.defaulted {
			d.add(p, n, "is an empty list; list at least one item, or leave the field out to get its default")
		}
		return
	}
	if len(n.Content) > maxListItems {
		d.add(p, n, "lists %d items; at most %d", len(n.Content), maxListItems)
		return
	}
	out := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, e := range n.Content {
		d.value(e, out.Index(i), p.Index(i), fieldInfo{maxLen: fi.maxLen})
	}
	v.Set(out)
}

func (d *decoder) mapValue(n *yaml.Node, v reflect.Value, p *field.Path, fi fieldInfo) {
	if n.Kind != yaml.MappingNode {
		d.add(p, n, "found %s, expected a mapping of keys to values", describe(n))
		return
	}
	if len(n.Content)/2 > maxListItems {
		d.add(p, n, "has %d keys; at most %d", len(n.Content)/2, maxListItems)
		return
	}
	out := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || len(k.Value) > maxStringBytes {
			d.add(p, k, "has a key that is %s; keys are strings of at most %d bytes", describe(k), maxStringBytes)
			continue
		}
		kp := p.Key(k.Value)
		if line, dup := seen[k.Value]; dup {
			d.add(kp, k, "is set twice (first on line %d); keep one", line)
			continue
		}
		seen[k.Value] = k.Line
		e := reflect.New(v.Type().Elem()).Elem()
		d.value(val, e, kp, fieldInfo{maxLen: fi.maxLen})
		out.SetMapIndex(reflect.ValueOf(k.Value).Convert(v.Type().Key()), e)
	}
	v.Set(out)
}

func (d *decoder) str(n *yaml.Node, v reflect.Value, p *field.Path, fi fieldInfo) {
	// A number written for a string field (tag: 1.10, port: 9090) is taken as written: the text is what was meant.
	if n.Kind != yaml.ScalarNode || (n.Tag != "!!str" && n.Tag != "!!int" && n.Tag != "!!float" && n.Tag != "!!timestamp") {
		d.add(p, n, "found %s, expected a string%s", describe(n), quoteHint(n))
		return
	}
	if len(n.Value) > fi.maxLen {
		d.add(p, n, "is %d bytes long; at most %d bytes", len(n.Value), fi.maxLen)
		return
	}
	if n.Value == "" && fi.defaulted {
		d.add(p, n, "is an empty string; leave the field out to get its default, or give a value")
		return
	}
	v.SetString(n.Value)
}

func quoteHint(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode {
		return fmt.Sprintf(`; quote it ("%s") if you mean the text`, n.Value)
	}
	return ""
}

// yaml11Bools are YAML 1.1's other spellings of true and false, which the earlier (yaml.v2) loader accepted for
// boolean fields: kept so existing files keep their meaning.
var yaml11Bools = map[string]bool{"yes": true, "on": true, "y": true, "no": false, "off": false, "n": false}

func (d *decoder) boolean(n *yaml.Node, v reflect.Value, p *field.Path) {
	if n.Kind == yaml.ScalarNode {
		if n.Tag == "!!bool" {
			var b bool
			if err := n.Decode(&b); err == nil {
				v.SetBool(b)
				return
			}
		}
		if b, ok := yaml11Bools[strings.ToLower(n.Value)]; ok && n.Tag == "!!str" && n.Style == 0 {
			v.SetBool(b)
			return
		}
	}
	d.add(p, n, "found %s, expected true or false", describe(n))
}

func (d *decoder) integer(n *yaml.Node, v reflect.Value, p *field.Path, fi fieldInfo) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!float" && strings.Trim(n.Value, "+-0123456789_") == "" {
		d.add(p, n, "%s is out of range for a whole number", n.Value) // digits too many for an int64
		return
	}
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		d.add(p, n, "found %s, expected a whole number such as 3", describe(n))
		return
	}
	var i int64
	if err := n.Decode(&i); err != nil || v.OverflowInt(i) {
		d.add(p, n, "%s is out of range for a whole number", n.Value)
		return
	}
	if i == 0 && fi.defaulted {
		d.add(p, n, "is 0, which would silently mean the default; leave the field out to get the default, or give a value > 0")
		return
	}
	v.SetInt(i)
}

// float decodes a number such as 1 or 0.5 (a finite one).
func (d *decoder) float(n *yaml.Node, v reflect.Value, p *field.Path) {
	f, ok, why := number(n)
	switch {
	case why != "":
		d.add(p, n, "%s", why)
	case !ok:
		d.add(p, n, "found %s, expected a number such as 1 or 0.5", describe(n))
	default:
		v.SetFloat(f)
	}
}

// number decodes an int or float scalar, refusing NaN and infinities.
func number(n *yaml.Node) (float64, bool, string) {
	if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float") {
		return 0, false, ""
	}
	var f float64
	if err := n.Decode(&f); err != nil {
		return 0, false, ""
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false, "is " + n.Value + ", not a finite number"
	}
	return f, true, ""
}

func (d *decoder) duration(n *yaml.Node, v reflect.Value, p *field.Path, fi fieldInfo) {
	const want = `expected a Go duration such as "30s", "10m" or "1h30m" (or a number of seconds)`
	var dur time.Duration
	switch {
	case n.Kind == yaml.ScalarNode && n.Tag == "!!str":
		x, err := time.ParseDuration(strings.TrimSpace(n.Value))
		if err != nil {
			d.add(p, n, "found %s, %s", describe(n), want)
			return
		}
		dur = x
	default:
		secs, ok, why := number(n)
		if why != "" {
			d.add(p, n, "%s; %s", why, want)
			return
		}
		if !ok {
			switch {
			case isNull(n) && fi.defaulted:
				d.add(p, n, "is null; leave the field out to get its default, or give a value")
			case !isNull(n):
				d.add(p, n, "found %s, %s", describe(n), want)
			}
			return
		}
		if math.Abs(secs) > maxDuration.Seconds()*1000 {
			d.add(p, n, "is %s seconds, out of range; at most %s", n.Value, maxDuration)
			return
		}
		dur = time.Duration(secs * float64(time.Second))
	}
	if dur == 0 && fi.defaulted {
		d.add(p, n, "is 0, which would silently mean the default; leave the field out to get the default, or give a positive duration")
		return
	}
	v.Set(reflect.ValueOf(D(dur)))
}

func (d *decoder) qps(n *yaml.Node, v reflect.Value, p *field.Path) {
	const want = `expected a number > 0 or "max"`
	if n.Kind == yaml.ScalarNode && n.Tag == "!!str" {
		t := strings.TrimSpace(n.Value)
		if strings.EqualFold(t, "max") {
			v.Set(reflect.ValueOf(MaxQPS))
			return
		}
		f, err := strconv.ParseFloat(t, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			d.add(p, n, "found %s, %s", describe(n), want)
			return
		}
		v.Set(reflect.ValueOf(QPS{Value: f}))
		return
	}
	f, ok, why := number(n)
	switch {
	case why != "":
		d.add(p, n, "%s; %s", why, want)
	case !ok:
		d.add(p, n, "found %s, %s", describe(n), want)
	default:
		v.Set(reflect.ValueOf(QPS{Value: f}))
	}
}

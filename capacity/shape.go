package capacity

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/meshbench/meshbench/internal/inputfile"
)

// Shape is the production shape to project to.
type Shape struct {
	Pods       int     `json:"pods"`       // app pods in the mesh
	Nodes      int     `json:"nodes"`      // nodes (one ztunnel each)
	Namespaces int     `json:"namespaces"` // namespaces (one waypoint each in mode waypoint)
	RPS        float64 `json:"rps"`        // requests per second into the app
	// RPSPerPod is each pod's rate (--rps-per-pod): its sum is RPS, its length Pods; it only sharpens the range check.
	RPSPerPod   []float64 `json:"rpsPerPod,omitempty"`
	PriceCPU    *float64  `json:"priceCPU,omitempty"`    // per vCPU-month
	PriceMemory *float64  `json:"priceMemory,omitempty"` // per GiB-month
}

// ShapeFile is the YAML (or JSON) form of a Shape (`meshbench project -f`); rpsPerPod and istiodCurve name files as
// their flags do, relative to the shape file.
type ShapeFile struct {
	Pods        *int     `json:"pods,omitempty"`
	Nodes       *int     `json:"nodes,omitempty"`
	Namespaces  *int     `json:"namespaces,omitempty"`
	RPS         *float64 `json:"rps,omitempty"`
	RPSPerPod   string   `json:"rpsPerPod,omitempty"`
	PriceCPU    *float64 `json:"priceCPU,omitempty"`
	PriceMemory *float64 `json:"priceMemory,omitempty"`
	// IstiodCurve is an istiod-curve.json (hack/istiodscale) whose fit replaces the run's istiod figures.
	IstiodCurve string `json:"istiodCurve,omitempty"`
}

// shapeFields are the shape file's fields, as messages list them.
const shapeFields = "pods, nodes, namespaces, rps, rpsPerPod, priceCPU, priceMemory, istiodCurve"

// field is where the value of the shape file's key name goes, what it must be, and the YAML tags that are one (nil
// for an unknown key).
func (f *ShapeFile) field(name string) (to any, want string, tags []string) {
	const whole, number, file = "a whole number", "a number", "a file name"
	switch name {
	case "pods":
		return &f.Pods, whole, []string{"!!int"}
	case "nodes":
		return &f.Nodes, whole, []string{"!!int"}
	case "namespaces":
		return &f.Namespaces, whole, []string{"!!int"}
	case "rps":
		return &f.RPS, number, []string{"!!int", "!!float"}
	case "rpsPerPod":
		return &f.RPSPerPod, file, []string{"!!str"}
	case "priceCPU":
		return &f.PriceCPU, number, []string{"!!int", "!!float"}
	case "priceMemory":
		return &f.PriceMemory, number, []string{"!!int", "!!float"}
	case "istiodCurve":
		return &f.IstiodCurve, file, []string{"!!str"}
	}
	return nil, "", nil
}

// ParseShapeFile decodes a shape file strictly and lists every problem at once, each with its line and field: an
// unknown or repeated field, a value of the wrong type, a second document. The values' ranges are Shape.Validate's.
func ParseShapeFile(data []byte) (ShapeFile, error) {
	var f ShapeFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	switch err := dec.Decode(&doc); {
	case errors.Is(err, io.EOF):
		return f, nil // empty: every value from the flags
	case err != nil:
		return ShapeFile{}, fmt.Errorf("shape file: %w (fields: %s)", err, shapeFields)
	}
	var errs []error
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		errs = append(errs, errors.New("a second YAML document (---): a shape file is one mapping"))
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	switch {
	case root.Kind == yaml.ScalarNode && root.ShortTag() == "!!null":
		// a document of comments only: every value from the flags
	case root.Kind != yaml.MappingNode:
		errs = append(errs, fmt.Errorf("line %d: want a mapping of %s, e.g. \"pods: 200\"", root.Line, shapeFields))
	}
	seen := map[string]int{}
	for i := 0; root.Kind == yaml.MappingNode && i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if first, dup := seen[k.Value]; dup {
			errs = append(errs, fmt.Errorf("line %d: %s: repeated (first on line %d): give it once", k.Line, k.Value, first))
			continue
		}
		seen[k.Value] = k.Line
		to, want, tags := f.field(k.Value)
		switch {
		case to == nil:
			errs = append(errs, fmt.Errorf("line %d: %s: unknown field (fields: %s)", k.Line, k.Value, shapeFields))
		case v.Kind != yaml.ScalarNode:
			errs = append(errs, fmt.Errorf("line %d: %s: want %s, not a list or mapping", v.Line, k.Value, want))
		case v.ShortTag() == "!!null":
			// unset, as if absent
		case !slices.Contains(tags, v.ShortTag()):
			// yaml.v3 would truncate 3.5 into an int: the tag decides, not the decoder.
			errs = append(errs, fmt.Errorf("line %d: %s: %q is not %s", v.Line, k.Value, v.Value, want))
		default:
			if err := v.Decode(to); err != nil {
				errs = append(errs, fmt.Errorf("line %d: %s: %q is not %s: %w", v.Line, k.Value, v.Value, want, err))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return ShapeFile{}, fmt.Errorf("shape file:\n%w", err)
	}
	return f, nil
}

// Shape returns the file's values as a Shape (rpsPerPod is read by the caller).
func (f ShapeFile) Shape() Shape {
	var s Shape
	if f.Pods != nil {
		s.Pods = *f.Pods
	}
	if f.Nodes != nil {
		s.Nodes = *f.Nodes
	}
	if f.Namespaces != nil {
		s.Namespaces = *f.Namespaces
	}
	if f.RPS != nil {
		s.RPS = *f.RPS
	}
	s.PriceCPU, s.PriceMemory = f.PriceCPU, f.PriceMemory
	return s
}

// maxRPSPerPodProblems is how many bad lines ParseRPSPerPod names one by one; the rest are counted.
const maxRPSPerPodProblems = 20

// ParseRPSPerPod reads one pod per line: "RPS" or "NAME RPS" (whitespace or a comma between); blank lines and
// lines starting with # are skipped. Every bad line is a problem naming its number (the first
// maxRPSPerPodProblems, then how many more), and so is a line above inputfile.MaxRPSPerPodLine.
func ParseRPSPerPod(data []byte) ([]float64, error) {
	const fix = `the last field must be the pod's requests per second (a number >= 0), e.g. "frontend-0 120"`
	var out []float64
	var errs []error
	bad := 0
	problem := func(err error) {
		if bad++; bad <= maxRPSPerPodProblems {
			errs = append(errs, err)
		}
	}
	for i, raw := range bytes.Split(data, []byte("\n")) {
		line := i + 1
		if int64(len(raw)) > inputfile.MaxRPSPerPodLine {
			problem(fmt.Errorf("line %d: longer than %s: one pod per line", line, inputfile.Bytes(inputfile.MaxRPSPerPodLine)))
			continue
		}
		t := strings.TrimSpace(string(raw))
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		fields := strings.FieldsFunc(t, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' })
		if len(fields) == 0 {
			problem(fmt.Errorf("line %d %q: no rate: %s", line, t, fix))
			continue
		}
		last := fields[len(fields)-1]
		v, err := strconv.ParseFloat(last, 64)
		if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
			problem(fmt.Errorf("line %d %q: %q is not a rate: %s", line, t, last, fix))
			continue
		}
		out = append(out, v)
	}
	if bad > maxRPSPerPodProblems {
		errs = append(errs, fmt.Errorf("%d more bad lines (%d in all; the first %d are named above)", bad-maxRPSPerPodProblems, bad, maxRPSPerPodProblems))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("rps per pod:\n%w", err)
	}
	if len(out) == 0 {
		return nil, errors.New(`rps per pod: no pod lines (one per pod: "NAME RPS" or "RPS")`)
	}
	return out, nil
}

// Complete fills Pods and RPS from RPSPerPod when they are unset.
func (s *Shape) Complete() {
	if len(s.RPSPerPod) == 0 {
		return
	}
	if s.Pods == 0 {
		s.Pods = len(s.RPSPerPod)
	}
	if s.RPS == 0 {
		for _, v := range s.RPSPerPod {
			s.RPS += v
		}
	}
}

// Validate returns every problem at once, each naming the field (and its flag) and the fix.
func (s Shape) Validate() error {
	var errs []error
	count := func(name string, v int, what, example string) {
		if v < 1 {
			errs = append(errs, fmt.Errorf("%s (--%s): %d: must be a whole number >= 1, %s, e.g. --%s %s", name, name, v, what, name, example))
		}
	}
	count("pods", s.Pods, "the app pods in the mesh", "200")
	count("nodes", s.Nodes, "the nodes they run on", "20")
	count("namespaces", s.Namespaces, "the app's namespaces", "5")
	if !(s.RPS > 0) || math.IsInf(s.RPS, 0) {
		errs = append(errs, fmt.Errorf("rps (--rps): %v: must be a number > 0, the requests per second into the app, e.g. --rps 5000", s.RPS))
	}
	if n := len(s.RPSPerPod); n > 0 {
		if n != s.Pods {
			errs = append(errs, fmt.Errorf("rpsPerPod (--rps-per-pod): %d pods listed but pods is %d: list every pod, or leave --pods out", n, s.Pods))
		}
		sum := 0.0
		for _, v := range s.RPSPerPod {
			sum += v
		}
		if math.Abs(sum-s.RPS) > 0.005*math.Max(sum, s.RPS) {
			errs = append(errs, fmt.Errorf("rpsPerPod (--rps-per-pod): the pods' rates add up to %g rps but rps is %g: leave --rps out, or make them agree", sum, s.RPS))
		}
	}
	price := func(name, flag string, v *float64, other *float64, unit string) {
		switch {
		case v != nil && (*v < 0 || math.IsInf(*v, 0) || math.IsNaN(*v)):
			errs = append(errs, fmt.Errorf("%s (--%s): %v: must be a price >= 0 per %s, e.g. --%s 25", name, flag, *v, unit, flag))
		case v == nil && other != nil:
			errs = append(errs, fmt.Errorf("%s (--%s): missing: prices go together, give both (0 for a resource you do not pay for)", name, flag))
		}
	}
	price("priceCPU", "price-cpu", s.PriceCPU, s.PriceMemory, "vCPU-month")
	price("priceMemory", "price-memory", s.PriceMemory, s.PriceCPU, "GiB-month")
	return errors.Join(errs...)
}

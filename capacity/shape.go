package capacity

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
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

// ParseShapeFile decodes a shape file strictly: an unknown field is an error naming it.
func ParseShapeFile(data []byte) (ShapeFile, error) {
	var f ShapeFile
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return ShapeFile{}, fmt.Errorf("shape file: %w (fields: pods, nodes, namespaces, rps, rpsPerPod, priceCPU, priceMemory, istiodCurve)", err)
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

// ParseRPSPerPod reads one pod per line: "RPS" or "NAME RPS" (whitespace or a comma between); blank lines and
// lines starting with # are skipped.
func ParseRPSPerPod(data []byte) ([]float64, error) {
	var out []float64
	sc := bufio.NewScanner(bytes.NewReader(data))
	line := 0
	for sc.Scan() {
		line++
		t := strings.TrimSpace(sc.Text())
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		fields := strings.FieldsFunc(t, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' })
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
			return nil, fmt.Errorf("rps per pod, line %d %q: the last field must be the pod's requests per second (a number >= 0), e.g. \"frontend-0 120\"", line, t)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("rps per pod: %w", err)
	}
	if len(out) == 0 {
		return nil, errors.New("rps per pod: no pod lines (one per pod: \"NAME RPS\" or \"RPS\")")
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

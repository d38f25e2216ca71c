package scenario

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/meshbench/meshbench/internal/inputfile"
)

// Load reads a scenario file strictly, applies defaults and validates it. Bad input returns Problems listing every
// problem at once with its path (and line); a path that is no regular file or is over maxFileBytes is an
// *inputfile.Error, checked before the file is opened.
func Load(path string) (*Scenario, error) { return LoadWith(path, LoadOptions{}) }

// LoadWith is Load with the options applied between decoding and defaults.
func LoadWith(path string, o LoadOptions) (*Scenario, error) {
	data, err := inputfile.ReadFile(path, inputfile.Scenario)
	if err != nil {
		return nil, fmt.Errorf("read scenario: %w", err)
	}
	if o.BaseDir == "" {
		o.BaseDir = filepath.Dir(path)
	}
	return loadData(data, o)
}

// loadFrom is LoadWith for a scenario read from r (standard input, a ConfigMap): the same size limit, decoding,
// defaults, validation and file checks.
func loadFrom(r io.Reader, o LoadOptions) (*Scenario, error) {
	data, err := inputfile.ReadAll(r, "(input)", inputfile.Scenario)
	if err != nil {
		return nil, fmt.Errorf("read scenario: %w", err)
	}
	return loadData(data, o)
}

func loadData(data []byte, o LoadOptions) (*Scenario, error) {
	s, err := ParseWith(data, o)
	if err != nil {
		return s, err
	}
	if ps := checkFiles(s); len(ps) > 0 {
		return s, ps
	}
	return s, nil
}

// Parse decodes YAML or JSON strictly (unknown, repeated and mistyped fields are problems), applies defaults and
// validates. It is pure.
func Parse(data []byte) (*Scenario, error) { return ParseWith(data, LoadOptions{}) }

// ParseWith is Parse with the options applied between decoding and defaults. It returns Problems for every bad
// input, with the scenario as far as it could be decoded (nil when nothing could).
func ParseWith(data []byte, o LoadOptions) (*Scenario, error) {
	if len(data) > maxFileBytes {
		return nil, Problems{{Path: "(file)", Message: fmt.Sprintf("is %d bytes; a %s is at most %s: %s",
			len(data), inputfile.Scenario, inputfile.Bytes(maxFileBytes), inputfile.Scenario.Hint())}}
	}
	var s Scenario
	ps, ok := decodeYAML(data, &s)
	if !ok {
		return nil, ps
	}
	o.apply(&s)
	SetDefaults(&s)
	ps = append(ps, withoutReported(Validate(&s), ps)...)
	if len(ps) > 0 {
		return &s, ps
	}
	return &s, nil
}

// withoutReported drops validation problems at (or below) a path the decoder already reported: a field that could
// not be decoded stays unset, and "is required" after "found a list, expected a string" would only repeat it.
func withoutReported(vs, decoded Problems) Problems {
	var out Problems
	for _, v := range vs {
		dup := false
		for _, d := range decoded {
			if v.Path == d.Path || strings.HasPrefix(v.Path, d.Path+".") || strings.HasPrefix(v.Path, d.Path+"[") {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, v)
		}
	}
	return out
}

// checkFiles reports files named by the scenario that cannot be read or hold the wrong thing (a token file that is
// a directory or empty, a CA file without a PEM certificate; a manifest file must pass inputfile's rule, a regular
// file under inputfile.MaxManifest), so a run fails before it touches a cluster.
func checkFiles(s *Scenario) Problems {
	var ps Problems
	for _, f := range []struct {
		path, val string
		check     func(string) string
	}{
		{"spec.prometheus.bearerTokenFile", s.Spec.Prometheus.BearerTokenFile, checkTokenFile},
		{"spec.prometheus.caFile", s.Spec.Prometheus.CAFile, checkCAFile},
	} {
		if f.val == "" {
			continue
		}
		if msg := f.check(f.val); msg != "" {
			ps = append(ps, Problem{Path: f.path, Message: msg})
		}
	}
	if m := s.Spec.Workload.Manifests; m != nil && s.Spec.Workload.App == AppManifests {
		for i, f := range m.Paths {
			if strings.TrimSpace(f) == "" {
				continue
			}
			at := fmt.Sprintf("spec.workload.manifests.paths[%d]", i)
			fi, err := os.Stat(m.Resolve(f))
			switch {
			case err != nil:
				ps = append(ps, Problem{Path: at,
					Message: fmt.Sprintf("cannot read %q: %v; fix the path (relative paths are read from the scenario file's directory)", f, errors.Unwrap(err))})
			case !fi.IsDir():
				// A file: the one rule for input files (a FIFO or /dev/zero would hang or exhaust the reader).
				if _, err := inputfile.Check(m.Resolve(f), inputfile.Manifest); err != nil {
					ps = append(ps, Problem{Path: at, Message: err.Error()})
				}
			}
		}
		if k := m.Kustomization; k != "" {
			if fi, err := os.Stat(m.Resolve(k)); err != nil || !fi.IsDir() {
				ps = append(ps, Problem{Path: "spec.workload.manifests.kustomization",
					Message: fmt.Sprintf("%q is not a directory: name the directory holding kustomization.yaml (relative paths are read from the scenario file's directory)", k)})
			}
		}
	}
	return ps
}

package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/meshbench/meshbench/internal/inputfile"
)

// wantPaths reads the "# want: PATH ..." header of a bad fixture: every field path its problems must name.
func wantPaths(t *testing.T, data []byte) []string {
	t.Helper()
	first, _, _ := bytes.Cut(data, []byte("\n"))
	rest, ok := strings.CutPrefix(string(first), "# want: ")
	if !ok {
		t.Fatal(`fixture does not start with "# want: PATH ..."`)
	}
	return strings.Fields(rest)
}

// TestBadInput is the corpus of hostile scenario inputs (testdata/bad/*.yaml, also the fuzz seeds): each must be
// refused with Problems (exit 2 in the CLI), name every expected path, give every problem a path and a message,
// and match its golden list (-update rewrites it).
func TestBadInput(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/bad/*.yaml")
	if err != nil || len(files) < 15 {
		t.Fatalf("bad fixtures: %v %v", files, err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Load(f)
			var ps Problems
			if !errors.As(err, &ps) {
				t.Fatalf("want Problems, got %v", err)
			}
			assertProblems(t, ps, wantPaths(t, data))
			golden(t, "bad/"+name+".golden", []byte(ps.Error()+"\n"))
		})
	}
}

func assertProblems(t *testing.T, ps Problems, want []string) {
	t.Helper()
	paths := map[string]bool{}
	for _, p := range ps {
		paths[p.Path] = true
		if p.Path == "" || len(p.Message) < 10 {
			t.Errorf("problem without path or hint: %+v", p)
		}
		if strings.Contains(p.Message, "json: ") || strings.Contains(p.Message, "cannot unmarshal") {
			t.Errorf("raw decoder message: %+v", p)
		}
	}
	for _, w := range want {
		if !paths[w] {
			t.Errorf("no problem at %s; got:\n%v", w, ps)
		}
	}
}

// TestOversizeInput: a file or stream above maxFileBytes is refused after reading at most one byte more, naming the
// size and the limit; /dev/zero (which never ends), a FIFO (whose open would wait for a writer forever) and a
// directory are refused before they are opened. Files and streams are inputfile's rule (*inputfile.Error, exit 2),
// bytes already in memory a (file) problem.
func TestOversizeInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	huge := "apiVersion: meshbench.dev/v1alpha1\nkind: Scenario\nmetadata: {name: big, description: \"" + strings.Repeat("x", 50<<20) + "\"}\n"
	if err := os.WriteFile(big, []byte(huge), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	inputs := map[string]struct {
		load   func() (*Scenario, error)
		reason inputfile.Reason
		name   string
	}{
		"50 MB description": {func() (*Scenario, error) { return Load(big) }, inputfile.TooLarge, big},
		"stream":            {func() (*Scenario, error) { return loadFrom(strings.NewReader(huge), LoadOptions{}) }, inputfile.TooLarge, "(input)"},
		"fifo":              {func() (*Scenario, error) { return Load(fifo) }, inputfile.NotRegular, fifo},
		"directory":         {func() (*Scenario, error) { return Load(dir) }, inputfile.NotRegular, dir},
	}
	if _, err := os.Stat("/dev/zero"); err == nil {
		inputs["/dev/zero"] = struct {
			load   func() (*Scenario, error)
			reason inputfile.Reason
			name   string
		}{func() (*Scenario, error) { return Load("/dev/zero") }, inputfile.NotRegular, "/dev/zero"}
	}
	for name, in := range inputs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := in.load()
			var fe *inputfile.Error
			if !errors.As(err, &fe) || fe.Reason != in.reason || fe.Kind != inputfile.Scenario ||
				!strings.Contains(err.Error(), "1048576 bytes (1 MiB)") || !strings.Contains(err.Error(), in.name) {
				t.Fatalf("want an *inputfile.Error %s naming %s and the 1 MiB limit, got %v", in.reason, in.name, err)
			}
		})
	}
	_, err := Parse([]byte(huge))
	var ps Problems
	if !errors.As(err, &ps) || len(ps) != 1 || ps[0].Path != "(file)" || !strings.Contains(ps[0].Message, "1048576 bytes (1 MiB)") {
		t.Fatalf("bytes: want one (file) problem naming the 1 MiB limit, got %v", err)
	}
}

// TestManifestFilesFollowTheInputRule: a file of spec.workload.manifests.paths that is a FIFO, a device or above
// inputfile.MaxManifest is a problem at its path naming the file and the cap, found before any manifest is read (a
// FIFO would hang the reader, /dev/zero exhaust it); a directory is read later, file by file.
func TestManifestFilesFollowTheInputRule(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, inputfile.MaxManifest+1); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "app"), 0o755); err != nil {
		t.Fatal(err)
	}
	paths := []string{"fifo.yaml", "big.yaml", "/dev/zero", "app"}
	sc := filepath.Join(dir, "scenario.yaml")
	if err := os.WriteFile(sc, []byte(`apiVersion: meshbench.dev/v1alpha1
kind: Scenario
metadata: {name: hostile-manifests}
spec:
  workload:
    app: manifests
    manifests: {paths: [`+strings.Join(paths, ", ")+`]}
  load:
    targets: [{service: web}]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(sc)
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("want Problems, got %v", err)
	}
	byPath := map[string]string{}
	for _, p := range ps {
		byPath[p.Path] = p.Message
	}
	for i, want := range []string{"a named pipe (FIFO), not a regular file", "16777217 bytes", "a character device", ""} {
		msg, ok := byPath[fmt.Sprintf("spec.workload.manifests.paths[%d]", i)]
		switch {
		case want == "" && ok:
			t.Errorf("paths[%d] (%s): %s", i, paths[i], msg)
		case want != "" && (!strings.Contains(msg, want) || !strings.Contains(msg, "16777216 bytes (16 MiB)") || !strings.Contains(msg, paths[i])):
			t.Errorf("paths[%d] (%s): %q, want %q, the file and the cap", i, paths[i], msg, want)
		}
	}
}

// TestExplicitVersusOmitted: omitting a defaulted field keeps the default; writing its zero is refused (it used to
// become the default silently). trimStart, whose default is 0, may be written as 0.
func TestExplicitVersusOmitted(t *testing.T) {
	t.Parallel()
	base := "apiVersion: meshbench.dev/v1alpha1\nkind: Scenario\nmetadata: {name: z}\nspec:\n  workload: {app: fortio-chain}\n"
	s := mustParse(t, base+"  load: {trimStart: 0s}\n")
	if s.Spec.Windows.Idle.Duration != 5*time.Minute || len(s.Spec.Modes) != 4 {
		t.Errorf("omitted fields: idle %s, modes %v; want the defaults 5m and all four", s.Spec.Windows.Idle, s.Spec.Modes)
	}
	for _, extra := range []string{"  windows: {idle: 0s}\n", "  windows: {load: 0}\n", "  modes: []\n"} {
		if _, err := Parse([]byte(base + extra)); err == nil {
			t.Errorf("%q accepted", strings.TrimSpace(extra))
		}
	}
}

// TestDecoderMatchesJSON pins that the node decoder reads every shipped valid scenario to exactly what the earlier
// decoder (sigs.k8s.io/yaml to JSON, then strict encoding/json) read, so existing files keep their meaning.
func TestDecoderMatchesJSON(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob("../examples/*.yaml")
	more, _ := filepath.Glob("../testdata/valid-*.yaml")
	files = append(files, more...)
	if len(files) < 6 {
		t.Fatalf("valid scenarios: %v", files)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		js, err := yaml.YAMLToJSONStrict(data)
		if err != nil {
			t.Fatal(err)
		}
		var old Scenario
		if strict, err := kjson.UnmarshalStrict(js, &old, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields); err != nil || len(strict) > 0 {
			t.Fatalf("%s: old decoder: %v %v", f, err, strict)
		}
		var got Scenario
		if ps, ok := decodeYAML(data, &got); !ok || len(ps) > 0 {
			t.Fatalf("%s: %v", f, ps)
		}
		if !reflect.DeepEqual(old, got) {
			a, _ := json.Marshal(old)
			b, _ := json.Marshal(got)
			t.Errorf("%s decodes differently:\nold %s\nnew %s", f, a, b)
		}
	}
}

// TestJSONInput: a scenario written as JSON (the run.json config echo, tab-indented or not) still loads.
func TestJSONInput(t *testing.T) {
	t.Parallel()
	s, err := Load("../examples/study-a-multi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, indent := range []string{"", "  ", "\t"} {
		js, err := json.MarshalIndent(s, "", indent)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Parse(js)
		if err != nil {
			t.Fatalf("indent %q: %v", indent, err)
		}
		if !reflect.DeepEqual(s, back) {
			t.Errorf("indent %q: JSON round trip changed the scenario", indent)
		}
	}
}

// TestBitrate pins the one bitrate parser against iperf3's reading of -b (esnet/iperf src/units.c unit_atof_rate,
// read at master 095abe2: decimal K/M/G/T multiples, either case).
func TestBitrate(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]uint64{"0": 0, "1": 1, "100k": 1e5, "500M": 5e8, "1G": 1e9, "1.5g": 15e8, "1T": 1e12, "1.1G": 11e8,
		" 2G ": 2e9, "1048576": 1 << 20, "1000000000000": 1e12, "0.5K": 500} {
		if got, err := ParseBitrate(in); err != nil || got != want {
			t.Errorf("ParseBitrate(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for in, why := range map[string]string{"": "required", "G": "not an iperf3 bitrate", "-1G": "not an iperf3 bitrate", "1e9": "not an iperf3 bitrate",
		"NaN": "not an iperf3 bitrate", "Inf": "not an iperf3 bitrate", "0x10": "not an iperf3 bitrate", "1GG": "not an iperf3 bitrate",
		"1,5G": "not an iperf3 bitrate", "1G/100": "not an iperf3 bitrate", "2T": "above the limit", "1000000000001": "above the limit",
		"12345678901234567890": "not an iperf3 bitrate", "1.0005K": "not a whole number", "0.5": "not a whole number"} {
		if _, err := ParseBitrate(in); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("ParseBitrate(%q) = %v; want an error saying %q", in, err, why)
		}
	}
}

// TestEstimateSaturates: the estimate of an unvalidated scenario with absurd windows saturates instead of wrapping
// to a negative figure, and a larger topology costs more than a single namespace.
func TestEstimateSaturates(t *testing.T) {
	t.Parallel()
	s := mustParse(t, "apiVersion: meshbench.dev/v1alpha1\nkind: Scenario\nmetadata: {name: e}\nspec:\n  workload: {app: fortio-chain}\n")
	s.Spec.Windows.Load = D(1000000 * time.Hour)
	s.Spec.Windows.Idle = D(1000000 * time.Hour)
	s.Spec.Load.Duration = D(1000000 * time.Hour)
	if p := NewPlan(s); p.Estimate <= 0 {
		t.Errorf("estimate %s: overflowed", p.Estimate)
	}
	single, err := Load("../examples/study-a-single.yaml")
	if err != nil {
		t.Fatal(err)
	}
	multi, err := Load("../examples/study-a-multi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if a, b := NewPlan(single).Estimate, NewPlan(multi).Estimate; b <= a {
		t.Errorf("multi-namespace estimate %s not above single %s", b, a)
	}
}

// TestCheckHTTPURL: the one check of an HTTP endpoint URL (Prometheus, Pushgateway): scheme, host and port range, and
// a password is never echoed.
func TestCheckHTTPURL(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"http://127.0.0.1:9090", "https://prom.example", "http://pg:9091/prefix", "http://[::1]:9090", "http://u:p@pg:9091"} {
		if err := CheckHTTPURL(ok, "http://x:1"); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for in, why := range map[string]string{
		"not a url":                  "must be an http:// or https:// URL",
		"ftp://x":                    `(got "ftp://x")`,
		"http://":                    "must be an http:// or https:// URL",
		"127.0.0.1:9090":             "must be an http:// or https:// URL",
		"http://127.0.0.1:99999":     "has port 99999; a port is 1 to 65535",
		"http://h:0":                 "has port 0",
		"http://u:secret@h:70000":    `(got "http://u:xxxxx@h:70000")`,
		"http://u:secret@h:%zz":      "must be an http:// or https:// URL",
		"https://:9090":              "must be an http:// or https:// URL",
		"http://host:9090\x7f/x":     "must be an http:// or https:// URL",
		"http://user:secret@ftp.x:1": "",
	} {
		err := CheckHTTPURL(in, "http://x:1")
		if why == "" {
			if err != nil {
				t.Errorf("%q: %v", in, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("CheckHTTPURL(%q) = %v; want %q", in, err, why)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("CheckHTTPURL(%q) echoes the password: %v", in, err)
		}
	}
}

// TestChainDefaultsPerField: a chain mapping that sets some fields keeps the defaults of the others (depth 2, fanOut
// 1, payloadBytes 128, as docs/config-reference.md says); it used to lose them all (fanOut 0: refused, payload 0).
func TestChainDefaultsPerField(t *testing.T) {
	t.Parallel()
	for chain, want := range map[string]Chain{
		"":                             {Depth: 2, FanOut: 1, PayloadBytes: 128},
		"chain: {}":                    {Depth: 2, FanOut: 1, PayloadBytes: 128},
		"chain: {depth: 3}":            {Depth: 3, FanOut: 1, PayloadBytes: 128},
		"chain: {fanOut: 2}":           {Depth: 2, FanOut: 2, PayloadBytes: 128},
		"chain: {payloadBytes: 64}":    {Depth: 2, FanOut: 1, PayloadBytes: 64},
		"chain: {serial: true}":        {Depth: 2, FanOut: 1, PayloadBytes: 128, Serial: true},
		"chain: {depth: 1, fanOut: 3}": {Depth: 1, FanOut: 3, PayloadBytes: 128},
		"chain: {depth: 4, fanOut: 2, payloadBytes: 1, serial: true}": {Depth: 4, FanOut: 2, PayloadBytes: 1, Serial: true},
	} {
		s := mustParse(t, "apiVersion: meshbench.dev/v1alpha1\nkind: Scenario\nmetadata: {name: c}\nspec:\n  workload:\n    app: fortio-chain\n    "+chain+"\n")
		if s.Spec.Workload.Chain == nil || *s.Spec.Workload.Chain != want {
			t.Errorf("%q: chain %+v, want %+v", chain, s.Spec.Workload.Chain, want)
		}
	}
}

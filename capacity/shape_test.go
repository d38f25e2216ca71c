package capacity

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestShapeValidate(t *testing.T) {
	t.Parallel()
	p := func(v float64) *float64 { return &v }
	ok := Shape{Pods: 10, Nodes: 2, Namespaces: 1, RPS: 100}
	for _, c := range []struct {
		name string
		mod  func(*Shape)
		want []string // empty: valid
	}{
		{"valid", func(*Shape) {}, nil},
		{"every count", func(s *Shape) { s.Pods, s.Nodes, s.Namespaces = 0, -1, 0 }, []string{"pods (--pods)", "nodes (--nodes): -1", "namespaces (--namespaces)"}},
		{"rps", func(s *Shape) { s.RPS = 0 }, []string{"rps (--rps): 0: must be a number > 0"}},
		{"negative price", func(s *Shape) { s.PriceCPU, s.PriceMemory = p(-1), p(1) }, []string{"priceCPU (--price-cpu): -1"}},
		{"one price", func(s *Shape) { s.PriceCPU = p(1) }, []string{"priceMemory (--price-memory): missing"}},
		{"per pod count", func(s *Shape) { s.RPSPerPod = []float64{50, 50} }, []string{"2 pods listed but pods is 10"}},
		{"per pod sum", func(s *Shape) { s.Pods, s.RPSPerPod = 2, []float64{50, 60} }, []string{"add up to 110 rps but rps is 100"}},
	} {
		s := ok
		c.mod(&s)
		err := s.Validate()
		if len(c.want) == 0 {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: valid, want %q", c.name, c.want)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q lacks %q", c.name, err, w)
			}
		}
	}
}

func TestParseRPSPerPod(t *testing.T) {
	t.Parallel()
	got, err := ParseRPSPerPod([]byte("# pods\nfrontend-0 120\n\n80\nledger,40.5\n"))
	if err != nil || len(got) != 3 || got[0] != 120 || got[1] != 80 || got[2] != 40.5 {
		t.Errorf("got %v, %v", got, err)
	}
	for _, bad := range []string{"", "# only\n", "frontend x\n", "a -3\n"} {
		if _, err := ParseRPSPerPod([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	s := Shape{RPSPerPod: []float64{1, 2}}
	s.Complete()
	if s.Pods != 2 || s.RPS != 3 {
		t.Errorf("Complete: %+v", s)
	}
}

// TestParseRPSPerPodInvalid: the rps-per-pod files of testdata/invalid-rps-per-pod-*.txt are refused, never a panic
// (a line holding only "," was an index out of range), each bad line named with its number and the fix, every one
// of them, not only the first.
func TestParseRPSPerPodInvalid(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file string
		want []string
	}{
		{"invalid-rps-per-pod-comma.txt", []string{`line 3 ",": no rate`}},
		{"invalid-rps-per-pod-lines.txt", []string{`line 2 ",": no rate`, `line 3 "backend x": "x" is not`, `line 4 ",,": no rate`,
			`line 5 "store -3": "-3" is not`, `line 6 "ledger 1e999": "1e999" is not`}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			_, err = ParseRPSPerPod(data)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range append(tc.want, `e.g. "frontend-0 120"`) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q lacks %q", err, w)
				}
			}
		})
	}
}

// TestParseShapeFileListsEveryProblem: testdata/invalid-shape.yaml has five problems; all of them are listed, each
// with its line and field (yaml.UnmarshalStrict stopped at the first).
func TestParseShapeFileListsEveryProblem(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("testdata", "invalid-shape.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = ParseShapeFile(data)
	if err == nil {
		t.Fatal("accepted")
	}
	for _, w := range []string{`line 2: pods: "3.5" is not a whole number`, "line 3: nodes: want a whole number, not a list",
		"line 4: podz: unknown field (fields: pods,", `line 5: rps: "lots" is not a number`, "line 7: namespaces: repeated (first on line 6)"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q lacks %q", err, w)
		}
	}
	for _, good := range []string{"", "# nothing\n", "pods: 200\nnodes: 20\nrps: 5000.5\npriceCPU: 25\npriceMemory: 3.5\nrpsPerPod: pods.txt\n", `{"pods": 3}`} {
		if _, err := ParseShapeFile([]byte(good)); err != nil {
			t.Errorf("%q: %v", good, err)
		}
	}
	f, _ := ParseShapeFile([]byte("pods: 200\nrps: 5000.5\nistiodCurve: c.json\n"))
	if f.Pods == nil || *f.Pods != 200 || f.RPS == nil || *f.RPS != 5000.5 || f.IstiodCurve != "c.json" {
		t.Errorf("decoded %+v", f)
	}
	if _, err := ParseShapeFile([]byte("pods: 1\n---\nnodes: 2\n")); err == nil || !strings.Contains(err.Error(), "second YAML document") {
		t.Errorf("two documents: %v", err)
	}
	if _, err := ParseShapeFile([]byte("- 1\n- 2\n")); err == nil || !strings.Contains(err.Error(), "line 1: want a mapping") {
		t.Errorf("a list: %v", err)
	}
}

package capacity

import (
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

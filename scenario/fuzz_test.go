package scenario

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// FuzzParse: the loader never panics, every refusal is Problems whose entries have a path and a message, and
// whatever it accepts is valid and plans to unique case IDs with a non-negative estimate. Seeded with the examples,
// the repo-level fixtures and the corpus of hostile inputs (testdata/bad).
func FuzzParse(f *testing.F) {
	for _, glob := range []string{"../examples/*.yaml", "../testdata/*.yaml", "testdata/bad/*.yaml"} {
		files, _ := filepath.Glob(glob)
		for _, file := range files {
			if b, err := os.ReadFile(file); err == nil {
				f.Add(b)
			}
		}
	}
	f.Add([]byte("spec: {load: {qps: [\"max\", 1e309]}}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data)
		if err != nil {
			var ps Problems
			if !errors.As(err, &ps) || len(ps) == 0 {
				t.Fatalf("refusal is not Problems: %v", err)
			}
			for _, p := range ps {
				if p.Path == "" || p.Message == "" {
					t.Fatalf("problem without path or message: %+v", p)
				}
			}
			return
		}
		if ps := Validate(s); ps != nil {
			t.Fatalf("Parse accepted a scenario Validate rejects: %v", ps)
		}
		if len(s.Spec.Workload.Topologies)*len(s.Spec.Modes)*len(s.Spec.Load.QPS)*s.Spec.Windows.Repetitions > 100000 {
			return // valid but too large to expand in a fuzz iteration
		}
		p := NewPlan(s)
		if p.Estimate < 0 {
			t.Fatalf("negative estimate %s", p.Estimate)
		}
		seen := map[string]bool{}
		for _, c := range p.Cases {
			if seen[c.ID] {
				t.Fatalf("duplicate case ID %q", c.ID)
			}
			seen[c.ID] = true
		}
	})
}

// FuzzParseBitrate: the one bitrate parser never panics, never returns more than maxBitrate, and an accepted rate
// written back as plain bit/s parses to itself.
func FuzzParseBitrate(f *testing.F) {
	for _, s := range []string{"0", "1G", "500M", "1.5g", "1T", "2T", "1.0005K", "12345678901234567890", "1e9", ".nan", " 2G ", "1G/100"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseBitrate(s)
		if err != nil {
			return
		}
		if v > maxBitrate {
			t.Fatalf("ParseBitrate(%q) = %d, above maxBitrate", s, v)
		}
		if back, err := ParseBitrate(strconv.FormatUint(v, 10)); err != nil || back != v {
			t.Fatalf("ParseBitrate(%q) = %d, but %d reads as %d, %v", s, v, v, back, err)
		}
	})
}

package capacity

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/results"
)

// The synthetic study: runs of the capacity fixture's shape (studySpec) with a known truth, each seeded, fitted by
// Build as a user's run is; what the intervals, the tests and the marks do over many of them. Each figure is logged
// (go test ./capacity -run TestStudy -v).

// studyRuns is how many seeded runs each study fits.
const studyRuns = 200

// studySpec is the capacity fixture's shape as a synthSpec: modes none/sidecar/ambient/waypoint, 250/500/1000 qps,
// 3 repetitions, 10 pods, 3 nodes, 1 waypoint, 3 % CPU and 1 % memory noise.
func studySpec(seed int, noise synthNoise) synthSpec {
	return synthSpec{runID: "study", seed: seed, modes: []string{"none", "sidecar", "ambient", "waypoint"},
		levels: []float64{250, 500, 1000}, reps: 3, pods: 10, nodes: 3, waypoints: 1, truth: synthFixtureTruth(),
		noise: noise, cpuSD: 0.03, memSD: 0.01, refKRPS: 0.5}
}

func studyModel(t *testing.T, sp synthSpec) *Model {
	t.Helper()
	m, err := Build(sp.run(), 0.95)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// coverage is a study's result at one multiple of the top measured load.
type coverage struct {
	points, inside int
	relErr         float64 // sum of (fitted - truth) / truth
}

func (c coverage) share() float64 { return float64(c.inside) / float64(c.points) }
func (c coverage) bias() float64  { return c.relErr / float64(c.points) }

// coverageStudy predicts every data-plane usage fit of metric (app, sidecar, ztunnel, waypoint) of studyRuns runs
// at each multiple of its top measured load: how often a new observation there (truth plus the spec's noise at that
// load) falls inside the 95 % prediction interval, and the fitted value's bias against the truth.
func coverageStudy(t *testing.T, noise synthNoise, metric string, multiples []float64) map[float64]*coverage {
	t.Helper()
	out := map[float64]*coverage{}
	for _, k := range multiples {
		out[k] = &coverage{}
	}
	for seed := range studyRuns {
		sp := studySpec(seed, noise)
		for _, f := range studyModel(t, sp).Fits {
			if f.Kind != KindUsage || f.Per == PerMesh || f.Metric != metric {
				continue
			}
			for _, k := range multiples {
				x := k * f.LoadMax
				y, pi := f.Predict(x)
				truth := sp.truth[f.Component].at(f.Metric, x)
				obs := sp.newObservation(f.Component, f.Metric, x, fmt.Sprintf("%s/%s/%s/%g", f.Mode, f.Component, f.Metric, k))
				c := out[k]
				c.points++
				c.relErr += (y - truth) / truth
				if pi != nil && pi.Low <= obs && obs <= pi.High {
					c.inside++
				}
			}
		}
	}
	return out
}

// TestStudyCoverage: where the model's assumptions hold (a line, the same noise at every load), the 95 % prediction
// intervals hold a new run's figure 95 % of the time at the measured load and at 3, 5 and 10 times it, and the
// fitted values are unbiased.
func TestStudyCoverage(t *testing.T) {
	t.Parallel()
	for _, metric := range []string{string(results.MetricCPU), string(results.MetricMemory)} {
		res := coverageStudy(t, noiseConstant, metric, []float64{1, 3, 5, 10})
		for _, k := range []float64{1, 3, 5, 10} {
			c := res[k]
			t.Logf("constant noise, %s at %gx the top load: %d points, %.1f %% inside, bias %+.2f %%", metric, k, c.points, 100*c.share(), 100*c.bias())
			// binomial sd of 1600 points at 95 %: 0.54 points; 3 sd either side
			if c.share() < 0.934 || c.share() > 0.966 || math.Abs(c.bias()) > 0.005 {
				t.Errorf("%s at %gx: coverage %.1f %%, bias %.2f %%: want 93.4-96.6 %% and |bias| < 0.5 %%", metric, k, 100*c.share(), 100*c.bias())
			}
		}
	}
}

// TestStudyNoise (item 5): with noise proportional to the load, the CPU intervals beyond the measured load hold the
// truth far less than 95 % of the time (the figure the projection's assumptions quote, proportionalCoverage), and
// the scatter check at the top level, in the projection and in --holdout, flags it in most runs while it flags
// constant noise about as often as a 5 % test should.
func TestStudyNoise(t *testing.T) {
	t.Parallel()
	res := coverageStudy(t, noiseProportional, string(results.MetricCPU), []float64{3, 5, 10})
	lo, hi := 100.0, 0.0
	for _, k := range []float64{3, 5, 10} {
		c := res[k]
		t.Logf("proportional noise, cpu at %gx the top load: %d points, %.1f %% inside, bias %+.2f %%", k, c.points, 100*c.share(), 100*c.bias())
		lo, hi = math.Min(lo, 100*c.share()), math.Max(hi, 100*c.share())
	}
	if quoted := fmt.Sprintf("%.0f-%.0f %%", math.Floor(lo), math.Ceil(hi)); quoted != proportionalCoverage {
		t.Errorf("the study gives %s, the assumptions quote %s: update proportionalCoverage", quoted, proportionalCoverage)
	}
	for _, c := range []struct {
		noise    synthNoise
		min, max int // runs flagged of studyRuns
	}{{noiseConstant, 0, studyRuns / 10}, {noiseProportional, studyRuns * 8 / 10, studyRuns}} {
		flagged, held, inside := 0, 0, 0
		for seed := range studyRuns {
			m := studyModel(t, studySpec(seed, c.noise))
			p := Project(m, goldenShape())
			h, err := CheckHoldout(m, p.HoldoutLevel)
			if err != nil {
				t.Fatal(err)
			}
			if p.Scatter.Grows != h.Scatter.Grows || p.Scatter.Level != "1000" {
				t.Fatalf("the projection's scatter check %+v is not the holdout's %+v", p.Scatter, h.Scatter)
			}
			warned := false
			for _, w := range p.Warnings {
				warned = warned || w.Code == WarnNoiseGrows
			}
			if warned != p.Scatter.Grows {
				t.Errorf("seed %d: scatter %+v, warning %v", seed, p.Scatter, warned)
			}
			if p.Scatter.Grows {
				flagged++
			}
			for _, f := range h.Fits {
				for _, pt := range f.Points {
					if f.Metric == string(results.MetricCPU) {
						held++
						if pt.Inside {
							inside++
						}
					}
				}
			}
		}
		t.Logf("noise %d: scatter check flagged %d of %d runs; --holdout 1000: %.1f %% of CPU points inside", c.noise, flagged, studyRuns, 100*float64(inside)/float64(held))
		if flagged < c.min || flagged > c.max {
			t.Errorf("noise %d: scatter check flagged %d of %d runs, want %d-%d", c.noise, flagged, studyRuns, c.min, c.max)
		}
	}
}

// TestStudyLinearity (item 7): a run of straight lines has 16 lack-of-fit tests; judged one by one at 5 %, about
// half the runs call at least one of them "not linear". Holm's adjustment brings that to at most 5 % (8 % allows
// for the study's own scatter), and a curved ztunnel is still found.
func TestStudyLinearity(t *testing.T) {
	t.Parallel()
	raw, adjusted, tests := 0, 0, 0
	for seed := range studyRuns {
		m := studyModel(t, studySpec(seed, noiseConstant))
		tests = m.LinearityTests
		anyRaw, anyAdj := false, false
		for _, f := range m.Fits {
			anyRaw = anyRaw || (f.LackOfFitP != nil && *f.LackOfFitP < 0.05)
			anyAdj = anyAdj || f.Trust == TrustNotLinear
		}
		if anyRaw {
			raw++
		}
		if anyAdj {
			adjusted++
		}
	}
	t.Logf("straight lines, %d tests per run: a false \"not linear\" in %d of %d runs unadjusted, %d with Holm", tests, raw, studyRuns, adjusted)
	if tests != 16 || raw < studyRuns*35/100 || adjusted > studyRuns*8/100 {
		t.Errorf("%d tests: false \"not linear\" in %d runs unadjusted (want >= 35 %%: the defect), %d with Holm (want <= 8 %%)", tests, raw, adjusted)
	}
	found, foundRaw := 0, 0
	for seed := range studyRuns {
		sp := studySpec(seed, noiseConstant)
		sp.truth = curvedZtunnel()
		f := studyModel(t, sp).Find("ambient", "ztunnel", "cpu", KindUsage)
		if f.Trust == TrustNotLinear {
			found++
		}
		if *f.LackOfFitP < 0.05 {
			foundRaw++
		}
	}
	t.Logf("curved ztunnel CPU: not linear in %d of %d runs with Holm, %d unadjusted", found, studyRuns, foundRaw)
	if found < studyRuns*7/10 {
		t.Errorf("curved ztunnel CPU found not linear in %d of %d runs with Holm, want >= 70 %%", found, studyRuns)
	}
}

// curvedZtunnel is the fixture's truth with a ztunnel whose CPU per node bends up: + 300 millicores x (krps per
// node)^2, 4 millicores more than the chord at mid-range, which a line through 0.08..0.33 krps per node misses.
func curvedZtunnel() map[string]synthTruth {
	tr := synthFixtureTruth()
	z := tr[string(results.ComponentZtunnel)]
	z.cpuC = 300
	tr[string(results.ComponentZtunnel)] = z
	return tr
}

// TestStudyBreakEven (item 4): with the curved ztunnel and a shape at 7.5 times the measured rate per node, the
// straight lines put the CPU break-even on the wrong side with a tight interval; every such break-even now carries
// the caveats of its fits (extrapolated, and not linear where the test found the curve) and says so.
func TestStudyBreakEven(t *testing.T) {
	t.Parallel()
	sh := goldenShape()
	sh.RPS = 50000 // 2.5 krps per node, 0.1 krps per pod
	wrong, marked, notLinear := 0, 0, 0
	for seed := range studyRuns {
		sp := studySpec(seed, noiseConstant)
		sp.truth = curvedZtunnel()
		p := Project(studyModel(t, sp), sh)
		var be *BreakEven
		for i := range p.BreakEven {
			if p.BreakEven[i].Metric == string(results.MetricCPU) && p.BreakEven[i].Kind == KindUsage {
				be = &p.BreakEven[i]
			}
		}
		r := sh.RPS / 1000 / float64(sh.Nodes)
		s, z := sp.truth[string(results.ComponentSidecar)], sp.truth[string(results.ComponentZtunnel)]
		truth := (z.at(string(results.MetricCPU), r) - s.cpuB*r) / s.cpuA
		e := be.PodsPerNode
		if e == nil || e.PI == nil || (truth >= e.PI.Low && truth <= e.PI.High) {
			continue
		}
		wrong++
		if len(be.Caveats) > 0 && strings.Contains(be.Statement, "built from fits that are") && e.Caveats != nil {
			marked++
		}
		for _, c := range be.Caveats {
			if c == CaveatNotLinear {
				notLinear++
			}
		}
	}
	t.Logf("curved ztunnel at 2.5 krps per node: the break-even's interval missed the truth in %d of %d runs; %d of them marked (%d not linear)", wrong, studyRuns, marked, notLinear)
	if wrong < studyRuns*9/10 || marked != wrong {
		t.Errorf("break-even missed the truth in %d runs (the defect needs >= 90 %%), marked in %d: every one must be", wrong, marked)
	}
}

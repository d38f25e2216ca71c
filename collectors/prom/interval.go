package prom

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"sigs.k8s.io/yaml"
)

// Interval is the resolution of the cAdvisor data: the configured scrape interval and the spacing the samples
// really have (cAdvisor stamps its samples; when its housekeeping is slower than the scrape, samples are sparser).
// Detect it once, at the start of a run, when most series are older than the 2 minutes it looks back.
type Interval struct {
	Scrape    time.Duration `json:"scrape"`    // configured scrape interval of the cAdvisor job
	Effective time.Duration `json:"effective"` // max(Scrape, observed spacing), whole seconds
	// Spacing is the measured median time between cAdvisor's samples (0 = not measured): cAdvisor stamps its own
	// housekeeping times, 8-15 s apart under load whatever the scrape interval.
	Spacing time.Duration `json:"spacing,omitempty"`
	Job     string        `json:"job,omitempty"`
	Source  string        `json:"source"` // how Scrape was found: configured | prometheus config | sample spacing
	Notes   []string      `json:"notes,omitempty"`
}

// RateRange is the range of rates used for min/max: 4 effective intervals.
func (i Interval) RateRange() time.Duration { return 4 * i.Step() }

// Step is the subquery step: the effective interval in whole seconds (at least 1 s).
func (i Interval) Step() time.Duration {
	return max(time.Second, ceilSecond(i.Effective))
}

// Guard is how far a window keeps from a phase change, and how far beyond a window's edges its samples count as the
// window's own (CounterStats): the longer of the step and two median sample spacings, in whole seconds, because
// cAdvisor's stamps vary up to about twice their median (docs/results.md, "guard").
func (i Interval) Guard() time.Duration {
	return max(i.Step(), ceilSecond(2*i.Spacing))
}

func ceilSecond(d time.Duration) time.Duration {
	return (d + time.Second - 1) / time.Second * time.Second
}

// ScrapeJob is one scrape_config of the Prometheus configuration.
type ScrapeJob struct {
	Name        string
	Interval    time.Duration
	MetricsPath string
}

// parseScrapeConfig reads the global scrape interval and the jobs from Prometheus' configuration YAML (as served by
// /api/v1/status/config). A job without its own interval gets the global one (default 1m). It is pure.
func parseScrapeConfig(cfgYAML string) ([]ScrapeJob, error) {
	var cfg struct {
		Global struct {
			ScrapeInterval string `json:"scrape_interval"`
		} `json:"global"`
		ScrapeConfigs []struct {
			JobName        string `json:"job_name"`
			ScrapeInterval string `json:"scrape_interval"`
			MetricsPath    string `json:"metrics_path"`
		} `json:"scrape_configs"`
	}
	if err := yaml.Unmarshal([]byte(cfgYAML), &cfg); err != nil {
		return nil, fmt.Errorf("parse prometheus config: %w", err)
	}
	global := time.Minute
	if s := cfg.Global.ScrapeInterval; s != "" {
		d, err := model.ParseDuration(s)
		if err != nil {
			return nil, fmt.Errorf("parse prometheus config: global scrape_interval %q: %w", s, err)
		}
		global = time.Duration(d)
	}
	jobs := make([]ScrapeJob, 0, len(cfg.ScrapeConfigs))
	for _, sc := range cfg.ScrapeConfigs {
		j := ScrapeJob{Name: sc.JobName, Interval: global, MetricsPath: sc.MetricsPath}
		if sc.ScrapeInterval != "" {
			d, err := model.ParseDuration(sc.ScrapeInterval)
			if err != nil {
				return nil, fmt.Errorf("parse prometheus config: job %s scrape_interval %q: %w", sc.JobName, sc.ScrapeInterval, err)
			}
			j.Interval = time.Duration(d)
		}
		jobs = append(jobs, j)
	}
	return jobs, nil
}

// CadvisorJob picks the job that scrapes cAdvisor, preferring among jobsWithMetric one whose path or name mentions
// cadvisor (a kubelet's /metrics/resource exports the same names); without data by path or name alone. The job
// name is never hard-coded. It is pure.
func CadvisorJob(jobs []ScrapeJob, jobsWithMetric []string) (ScrapeJob, bool) {
	looksCadvisor := func(j ScrapeJob) bool {
		return strings.Contains(j.MetricsPath, "cadvisor") || strings.Contains(j.Name, "cadvisor")
	}
	var withMetric, named []ScrapeJob
	for _, j := range jobs {
		if slices.Contains(jobsWithMetric, j.Name) {
			withMetric = append(withMetric, j)
		}
		if looksCadvisor(j) {
			named = append(named, j)
		}
	}
	for _, j := range withMetric {
		if looksCadvisor(j) {
			return j, true
		}
	}
	if len(withMetric) > 0 {
		return withMetric[0], true
	}
	if len(named) > 0 {
		return named[0], true
	}
	return ScrapeJob{}, false
}

// DetectInterval finds the cAdvisor resolution: the scrape interval (override > 0, else Prometheus' configuration) and
// the real sample spacing from the data; Effective is the interval unless the samples are clearly sparser.
func DetectInterval(ctx context.Context, a API, r Retry, override time.Duration, now time.Time) (Interval, error) {
	iv := Interval{Scrape: override, Source: "configured"}
	var jobsWithMetric []string
	if v, _, err := query(ctx, a, r, `count by (job) (container_cpu_usage_seconds_total)`, now); err == nil {
		if vec, ok := v.(model.Vector); ok {
			for _, s := range vec {
				jobsWithMetric = append(jobsWithMetric, string(s.Metric["job"]))
			}
		}
	} else if ctx.Err() != nil {
		return iv, err
	} else {
		// e.g. 401/403: say so, or the note below would blame cAdvisor for an auth problem.
		iv.Notes = append(iv.Notes, fmt.Sprintf("query count by (job) (container_cpu_usage_seconds_total) failed: %v", err))
	}
	slices.Sort(jobsWithMetric)
	if len(jobsWithMetric) == 0 {
		iv.Notes = append(iv.Notes, "no container_cpu_usage_seconds_total series in Prometheus yet: is cAdvisor scraped?")
	}
	var jobs []ScrapeJob
	if cfgRes, err := configWithTimeout(ctx, a, r); err != nil {
		iv.Notes = append(iv.Notes, fmt.Sprintf("prometheus config not readable (%v)", err))
	} else if jobs, err = parseScrapeConfig(cfgRes); err != nil {
		iv.Notes = append(iv.Notes, err.Error())
	}
	// Jobs seen in the data but absent from the config (e.g. config not readable) still count, without an interval.
	for _, name := range jobsWithMetric {
		if !slices.ContainsFunc(jobs, func(j ScrapeJob) bool { return j.Name == name }) {
			jobs = append(jobs, ScrapeJob{Name: name})
		}
	}
	if j, ok := CadvisorJob(jobs, jobsWithMetric); ok {
		iv.Job = j.Name
		if override <= 0 && j.Interval > 0 {
			iv.Scrape, iv.Source = j.Interval, "prometheus config"
		}
	} else {
		iv.Notes = append(iv.Notes, "no cAdvisor job found; queries are not restricted to one job")
	}
	if len(jobsWithMetric) > 1 {
		iv.Notes = append(iv.Notes, fmt.Sprintf("jobs %v all export container_cpu_usage_seconds_total; using job %q only", jobsWithMetric, iv.Job))
	}
	look := max(2*time.Minute, 10*ceilSecond(iv.Scrape))
	spacing, err := observedSpacing(ctx, a, r, now, look, iv.Job)
	if err != nil {
		if ctx.Err() != nil {
			return iv, err
		}
		iv.Notes = append(iv.Notes, fmt.Sprintf("sample spacing not measurable: %v", err))
	}
	iv.Spacing = spacing
	if iv.Scrape <= 0 {
		if spacing <= 0 {
			return iv, fmt.Errorf("cannot tell the cAdvisor scrape interval: set spec.prometheus.scrapeInterval (%s)", strings.Join(iv.Notes, "; "))
		}
		iv.Scrape, iv.Source = spacing, "sample spacing"
	}
	iv.Effective = ceilSecond(iv.Scrape)
	// The spacing estimate is coarse (young series count fewer samples), so only a clear excess overrides the config.
	if spacing > iv.Scrape+iv.Scrape/2 {
		iv.Effective = ceilSecond(spacing)
		iv.Notes = append(iv.Notes, fmt.Sprintf("cAdvisor samples are %s apart although the scrape interval is %s (cAdvisor housekeeping is slower than the scrape): rates use %s",
			spacing, iv.Scrape, iv.Effective))
	}
	return iv, nil
}

func configWithTimeout(ctx context.Context, a API, r Retry) (string, error) {
	cctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	c, err := a.Config(cctx)
	if err != nil {
		return "", err
	}
	return c.YAML, nil
}

// observedSpacing is the median time between the samples of the 5 cAdvisor CPU series with the most samples in
// look (the oldest, so young series do not skew it), computed from their own timestamps.
func observedSpacing(ctx context.Context, a API, r Retry, now time.Time, look time.Duration, job string) (time.Duration, error) {
	sel := `container!="",container!="POD"`
	if job != "" {
		sel += ",job=" + strconv.Quote(job)
	}
	lookS := int(look.Seconds())
	v, _, err := query(ctx, a, r, fmt.Sprintf(`topk(5, count_over_time(container_cpu_usage_seconds_total{%s}[%ds]))`, sel, lookS), now)
	if err != nil {
		return 0, err
	}
	top, _ := v.(model.Vector)
	var all model.Matrix
	for _, smp := range top {
		var ms []string
		for _, name := range slices.Sorted(maps.Keys(smp.Metric)) {
			ms = append(ms, string(name)+"="+strconv.Quote(string(smp.Metric[name])))
		}
		v, _, err := query(ctx, a, r, fmt.Sprintf(`container_cpu_usage_seconds_total{%s}[%ds]`, strings.Join(ms, ","), lookS), now)
		if err != nil {
			return 0, err
		}
		if m, ok := v.(model.Matrix); ok {
			all = append(all, m...)
		}
	}
	d, ok := medianSpacing(all)
	if !ok {
		return 0, fmt.Errorf("no series with 3 samples or more in the last %s", look)
	}
	return d, nil
}

// medianSpacing is the median of the time between consecutive samples over every series of m (series with fewer
// than 3 samples are ignored). It is pure.
func medianSpacing(m model.Matrix) (time.Duration, bool) {
	var deltas []time.Duration
	for _, ss := range m {
		if len(ss.Values) < 3 {
			continue
		}
		for i := 1; i < len(ss.Values); i++ {
			deltas = append(deltas, ss.Values[i].Timestamp.Time().Sub(ss.Values[i-1].Timestamp.Time()))
		}
	}
	if len(deltas) == 0 {
		return 0, false
	}
	slices.Sort(deltas)
	return deltas[len(deltas)/2].Round(10 * time.Millisecond), true
}

package report

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

type recorded struct {
	method, path, contentType string
	body                      []byte
}

func pushServer(t *testing.T, status int) (*httptest.Server, func() []recorded) {
	t.Helper()
	var mu sync.Mutex
	var got []recorded
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, recorded{r.Method, r.URL.Path, r.Header.Get("Content-Type"), b})
		mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []recorded {
		mu.Lock()
		defer mu.Unlock()
		return append([]recorded(nil), got...)
	}
}

func TestPush(t *testing.T) {
	t.Parallel()
	srv, requests := pushServer(t, http.StatusOK)
	rep := Build(readRun(t, "sample"))
	if err := Push(context.Background(), rep, PushOptions{URL: srv.URL, Job: "nightly", Instance: "prod-eu"}); err != nil {
		t.Fatal(err)
	}
	reqs := requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	req := reqs[0]
	if req.method != http.MethodPut || req.path != "/metrics/job/nightly/instance/prod-eu" {
		t.Errorf("request %s %s, want PUT /metrics/job/nightly/instance/prod-eu", req.method, req.path)
	}
	if !strings.HasPrefix(req.contentType, "text/plain") {
		t.Errorf("content type %q, want the text format", req.contentType)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(req.body))
	if err != nil {
		t.Fatalf("pushed body is not the text format: %v\n%s", err, req.body)
	}
	for _, name := range []string{MetricResourceMean, MetricResourceCILow, MetricResourceCIHigh, MetricPerKRPSMean, MetricMeasurementMean,
		MetricDeltaPercent, MetricDeltaPercentLow, MetricDeltaPercentHigh, MetricDeltaSignificant, MetricCasesTotal, MetricCasesFailed,
		MetricCasesSkipped, MetricRunInfo, MetricRunStart, MetricRunEnd} {
		if fams[name] == nil {
			t.Errorf("metric %s not pushed", name)
		}
	}
	// One known value with its full label set: the sidecar's mean CPU under load, topology single.
	found := false
	for _, m := range fams[MetricResourceMean].GetMetric() {
		l := map[string]string{}
		for _, lp := range m.GetLabel() {
			l[lp.GetName()] = lp.GetValue()
		}
		if l["topology"] == "single" && l["mode"] == "sidecar" && l["load"] == "1000" && l["window"] == "load" &&
			l["component"] == "sidecar" && l["metric"] == "cpu" && l["stat"] == "avg" && l["unit"] == "millicores" {
			found = true
			want := seriesMean(t, rep, "single", "sidecar", "1000", "load", "sidecar", "cpu", "avg")
			if got := m.GetGauge().GetValue(); got != want {
				t.Errorf("sidecar cpu = %v, want %v", got, want)
			}
		}
	}
	if !found {
		t.Error("meshbench_resource_mean has no series for the sidecar's CPU under load")
	}
	if got := fams[MetricCasesFailed].GetMetric()[0].GetCounter().GetValue(); got != 1 {
		t.Errorf("%s = %v, want 1", MetricCasesFailed, got)
	}
	pathTest := false
	for _, m := range fams[MetricMeasurementMean].GetMetric() {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == "path" && lp.GetValue() == "cross-node" {
				pathTest = true
			}
		}
	}
	if !pathTest {
		t.Error("network measurements lack the path label")
	}
	deltaLabels := map[string]bool{}
	for _, lp := range fams[MetricDeltaPercent].GetMetric()[0].GetLabel() {
		deltaLabels[lp.GetName()] = true
	}
	for _, l := range []string{"base", "other", "topology", "window", "component", "metric"} {
		if !deltaLabels[l] {
			t.Errorf("%s lacks label %s", MetricDeltaPercent, l)
		}
	}
}

func seriesMean(t *testing.T, rep Report, topo, mode, load, window, comp, metric, stat string) float64 {
	t.Helper()
	for _, s := range rep.Summary.Series {
		if s.Topology == topo && s.Mode == mode && s.Load == load && s.Window == window && s.Component == comp && s.Metric == metric && s.Stat == stat && s.Labels == "" {
			return s.Mean
		}
	}
	t.Fatalf("no series %s/%s/%s/%s/%s/%s/%s", topo, mode, load, window, comp, metric, stat)
	return 0
}

func TestPushDefaultsAndErrors(t *testing.T) {
	t.Parallel()
	srv, requests := pushServer(t, http.StatusOK)
	rep := Build(readRun(t, "aa-1"))
	if err := Push(context.Background(), rep, PushOptions{URL: srv.URL}); err != nil {
		t.Fatal(err)
	}
	if got := requests()[0].path; got != "/metrics/job/meshbench/instance/bank-of-anthos-modes" {
		t.Errorf("default grouping path %q", got)
	}

	bad, _ := pushServer(t, http.StatusBadRequest)
	err := Push(context.Background(), rep, PushOptions{URL: bad.URL})
	if err == nil || !strings.Contains(err.Error(), "push to") {
		t.Errorf("error on HTTP 400 = %v", err)
	}
	if err := Push(context.Background(), rep, PushOptions{}); err == nil {
		t.Error("no URL: want an error")
	}
}

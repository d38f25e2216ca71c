package prom

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/meshbench/meshbench/internal/podset"
	"github.com/meshbench/meshbench/results"
)

// clusterAPI answers every query, whatever its selector, with a counter growing by 3 core-seconds per second for
// each of its pods (namespace/pod), and counts the queries: what the collector keeps of the answer is its own doing.
type clusterAPI struct {
	pods    [][2]string
	mu      sync.Mutex
	queries []string
}

func (a *clusterAPI) Query(_ context.Context, q string, ts time.Time, _ ...promv1.Option) (model.Value, promv1.Warnings, promv1.Infos, error) {
	a.mu.Lock()
	a.queries = append(a.queries, q)
	a.mu.Unlock()
	var m model.Matrix
	for _, p := range a.pods {
		ss := rampMatrix(ts, 3)[0]
		ss.Metric = model.Metric{"namespace": model.LabelValue(p[0]), "pod": model.LabelValue(p[1])}
		m = append(m, ss)
	}
	return m, nil, nil, nil
}

func (*clusterAPI) Config(context.Context) (promv1.ConfigResult, error) {
	return promv1.ConfigResult{}, nil
}

// TestQueriesPerWindowDoNotGrowWithNamespaces: the same 120 app pods in 1 and in 60 namespaces take the same
// queries per window, one per component and catalog term (60 namespaces took 60 times as many), and every pod is
// counted once: a pod of the same name in another of the set's namespaces, which the one selector across them
// matches too, is not the set's and stays out of the figures.
func TestQueriesPerWindowDoNotGrowWithNamespaces(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 10, 5, 0, 0, time.UTC)
	w := results.Window{Kind: results.WindowLoad, Start: now.Add(-2 * time.Minute), End: now.Add(-time.Minute)}
	const pods = 120
	counts := map[int]int{}
	for _, nss := range []int{1, 60} {
		app := podset.PodSet{Component: results.ComponentApp, Pods: map[string][]string{}, Container: matchNotProxy}
		sidecar := podset.PodSet{Component: results.ComponentSidecar, Pods: map[string][]string{}, Container: matchProxy}
		var cluster [][2]string
		for i := range pods {
			ns, name := fmt.Sprintf("mb-%02d", i%nss), fmt.Sprintf("svc-%03d", i/nss)
			app.Pods[ns] = append(app.Pods[ns], name)
			sidecar.Pods[ns] = append(sidecar.Pods[ns], name)
			cluster = append(cluster, [2]string{ns, name})
		}
		istiod := podset.PodSet{Component: results.ComponentIstiod, Pods: map[string][]string{"istio-system": {"istiod-1"}}}
		// Pods the selectors may match but the sets do not hold: svc-000 of a namespace of the cluster the app does
		// not run in, and a pod name of the app in istio-system.
		cluster = append(cluster, [2]string{"other", "svc-000"}, [2]string{"istio-system", "svc-000"}, [2]string{"istio-system", "istiod-1"})
		api := &clusterAPI{pods: cluster}
		c := &Collector{API: api, Interval: Interval{Scrape: 5 * time.Second, Effective: 5 * time.Second}, Retry: DefaultRetry(), Clock: testingclock.NewFakeClock(now)}
		got, err := c.Collect(context.Background(), w, []podset.PodSet{app, sidecar, istiod})
		if err != nil {
			t.Fatal(err)
		}
		counts[nss] = len(api.queries)
		for _, q := range api.queries {
			if nss > 1 && !strings.Contains(q, `namespace=~"mb-00|mb-01|`) && !strings.Contains(q, `namespace="istio-system"`) {
				t.Errorf("%d namespaces: query %s has no selector across the namespaces", nss, q)
			}
		}
		cpu := map[string]float64{}
		for _, s := range got.Samples {
			if s.Metric == results.MetricCPU && s.Stat == "avg" {
				cpu[s.Component] = s.Value
			}
		}
		// 3 cores per pod.
		for comp, n := range map[string]int{results.ComponentApp: pods, results.ComponentSidecar: pods, results.ComponentIstiod: 1} {
			if want := 3000.0 * float64(n); math.Abs(cpu[comp]-want) > 1e-6*want {
				t.Errorf("%d namespaces: %s CPU %.3f millicores, want %.0f (each of its %d pods once, no other pod)", nss, comp, cpu[comp], want, n)
			}
		}
	}
	if want := 3 * len(Catalog()); counts[1] != want || counts[60] != want {
		t.Errorf("queries per window: %d at 1 namespace, %d at 60; want %d at both (one per component and catalog term)", counts[1], counts[60], want)
	}
}

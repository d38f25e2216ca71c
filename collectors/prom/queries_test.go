package prom

import (
	"context"
	"errors"
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
				cpu[string(s.Component)] = s.Value
			}
		}
		// 3 cores per pod.
		for comp, n := range map[string]int{string(results.ComponentApp): pods, string(results.ComponentSidecar): pods, string(results.ComponentIstiod): 1} {
			if want := 3000.0 * float64(n); math.Abs(cpu[comp]-want) > 1e-6*want {
				t.Errorf("%d namespaces: %s CPU %.3f millicores, want %.0f (each of its %d pods once, no other pod)", nss, comp, cpu[comp], want, n)
			}
		}
	}
	if want := 3 * len(Catalog()); counts[1] != want || counts[60] != want {
		t.Errorf("queries per window: %d at 1 namespace, %d at 60; want %d at both (one per component and catalog term)", counts[1], counts[60], want)
	}
}

// nodesAPI is a Prometheus whose only node source is cAdvisor's root cgroup, of every node (job kubelet, instance
// its address, node its name), node i's counter growing by i+1 core-seconds per second, plus a series the one
// selector across nodes also matches: node 0's instance with the last node's name, growing by 1000. It counts the
// queries.
type nodesAPI struct {
	nodes   []podset.NodeRef
	queries int
	failMem bool // refuse the memory queries (bad data, not retried)
}

func (a *nodesAPI) ident(i, j int) model.Metric {
	return model.Metric{"job": "kubelet", "instance": model.LabelValue(a.nodes[i].Addresses[0] + ":10250"), "node": model.LabelValue(a.nodes[j].Name), "id": "/"}
}

func (a *nodesAPI) Query(_ context.Context, q string, ts time.Time, _ ...promv1.Option) (model.Value, promv1.Warnings, promv1.Infos, error) {
	a.queries++
	if strings.HasPrefix(q, "up{") { // every target scraped all through
		var m model.Matrix
		for i := range a.nodes {
			ss := rampMatrix(ts, 0)[0]
			ss.Metric = a.ident(i, i)
			for j := range ss.Values {
				ss.Values[j].Value = 1
			}
			m = append(m, ss)
		}
		return m, nil, nil, nil
	}
	if !strings.Contains(q, `{id="/"`) {
		return model.Vector{}, nil, nil, nil // no kubelet /metrics/resource, no node-exporter
	}
	if strings.HasPrefix(q, "max by (") {
		var v model.Vector
		for i := range a.nodes {
			v = append(v, &model.Sample{Metric: a.ident(i, i), Value: 20})
		}
		return v, nil, nil, nil
	}
	if a.failMem && strings.Contains(q, "memory") {
		return nil, nil, nil, &promv1.Error{Type: promv1.ErrBadData, Msg: "refused"}
	}
	var m model.Matrix
	for i := range a.nodes {
		ss := rampMatrix(ts, float64(i+1))[0]
		ss.Metric = a.ident(i, i)
		m = append(m, ss)
	}
	if n := len(a.nodes); n > 1 {
		ss := rampMatrix(ts, 1000)[0]
		ss.Metric = a.ident(0, n-1)
		m = append(m, ss)
	}
	return m, nil, nil, nil
}

func (*nodesAPI) Config(context.Context) (promv1.ConfigResult, error) {
	return promv1.ConfigResult{}, nil
}

// TestNodeQueriesPerWindowDoNotGrowWithNodes: 1 and 20 test nodes take the same queries per window (the three
// source searches, one per term for every node, 20 nodes took 40 more, and the job's up series), and each node's figures are its own
// series' only, not a series the selector across nodes matches with another node's labels.
func TestNodeQueriesPerWindowDoNotGrowWithNodes(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 10, 5, 0, 0, time.UTC)
	w := results.Window{Kind: results.WindowLoad, Start: now.Add(-2 * time.Minute), End: now.Add(-time.Minute)}
	counts := map[int]int{}
	for _, n := range []int{1, 20} {
		var nodes []podset.NodeRef
		for i := range n {
			nodes = append(nodes, podset.NodeRef{Name: fmt.Sprintf("node-%02d", i), Addresses: []string{fmt.Sprintf("10.0.0.%d", i+1)}})
		}
		api := &nodesAPI{nodes: nodes}
		c := &Collector{API: api, Interval: Interval{Scrape: 5 * time.Second, Effective: 5 * time.Second, Job: "kubelet"}, Retry: DefaultRetry(), Clock: testingclock.NewFakeClock(now)}
		got, err := c.Collect(context.Background(), w, []podset.PodSet{podset.NodeSet(nodes...)})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Warnings) > 0 {
			t.Errorf("%d nodes: warnings %q", n, got.Warnings)
		}
		counts[n] = api.queries
		cpu := map[string]float64{}
		for _, s := range got.Samples {
			if s.Metric == results.MetricCPU && s.Stat == "avg" {
				cpu[s.Labels[LabelNode]] = s.Value
			}
		}
		if len(got.Samples) != 6*n || len(cpu) != n {
			t.Errorf("%d nodes: %d samples for %d nodes, want 6 per node", n, len(got.Samples), len(cpu))
		}
		for i, nd := range nodes {
			if want := 1000 * float64(i+1); math.Abs(cpu[nd.Name]-want) > 1e-6*want {
				t.Errorf("%d nodes: %s CPU %.3f millicores, want %.0f (its own series only)", n, nd.Name, cpu[nd.Name], want)
			}
		}
	}
	if want := len(nodeSources()) + len(Catalog()) + 1; counts[1] != want || counts[20] != want { // + the up series of job kubelet
		t.Errorf("queries per window: %d at 1 node, %d at 20; want %d at both", counts[1], counts[20], want)
	}
	// One refused query of the batch: every node's memory is missing, each named, and the count stays a share.
	var nodes []podset.NodeRef
	for i := range 3 {
		nodes = append(nodes, podset.NodeRef{Name: fmt.Sprintf("node-%02d", i), Addresses: []string{fmt.Sprintf("10.0.0.%d", i+1)}})
	}
	c := &Collector{API: &nodesAPI{nodes: nodes, failMem: true}, Interval: Interval{Scrape: 5 * time.Second, Effective: 5 * time.Second, Job: "kubelet"},
		Retry: DefaultRetry(), Clock: testingclock.NewFakeClock(now)}
	got, err := c.Collect(context.Background(), w, []podset.PodSet{podset.NodeSet(nodes...)})
	var qe *QueryErrors
	if !errors.As(err, &qe) || len(qe.Failed) != 3 || qe.Queries != 7 || len(got.Samples) != 9 {
		t.Fatalf("refused memory query: %v (%d samples), want 3 of 7 (6 figures, 1 up) failed and the 9 CPU figures", err, len(got.Samples))
	}
	for _, nd := range nodes {
		if !strings.Contains(err.Error(), "node "+nd.Name+", cadvisor-root") {
			t.Errorf("error %q does not name %s", err, nd.Name)
		}
	}
}

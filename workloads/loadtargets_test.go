package workloads

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/scenario"
)

func TestLoadTargetOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		lt   scenario.LoadTarget
		want target.LoadTarget
	}{
		{"http service", scenario.LoadTarget{Name: "web", Service: "web", Port: 8080, Path: "/x", Protocol: "http", Weight: 3, Headers: map[string]string{"X-A": "1"}},
			target.LoadTarget{Name: "web", URL: "http://web.shop.svc.cluster.local:8080/x", Protocol: "http", Weight: 3, Headers: map[string]string{"X-A": "1"}}},
		{"http default path and port", scenario.LoadTarget{Service: "web"},
			target.LoadTarget{Name: "web", URL: "http://web.shop.svc.cluster.local:80/home", Protocol: "http", Weight: 1}},
		{"grpc service", scenario.LoadTarget{Name: "rpc", Service: "rpc", Protocol: "grpc", Weight: 1},
			target.LoadTarget{Name: "rpc", URL: "rpc.shop.svc.cluster.local:8079", Protocol: "grpc", Weight: 1}},
		{"tcp service", scenario.LoadTarget{Name: "echo", Service: "echo", Port: 9000, Protocol: "tcp", Weight: 2},
			target.LoadTarget{Name: "echo", URL: "tcp://echo.shop.svc.cluster.local:9000", Protocol: "tcp", Weight: 2}},
		{"url as given", scenario.LoadTarget{Name: "ext", URL: "http://example:9/x", Protocol: "http", Weight: 1},
			target.LoadTarget{Name: "ext", URL: "http://example:9/x", Protocol: "http", Weight: 1}},
	} {
		if got := loadTargetOf(tc.lt, "shop", "cluster.local", "/home"); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// Every load target of app existing becomes an endpoint (not only the first); the first is the entry.
func TestDiscoverEndpoints(t *testing.T) {
	s := existingScenario([]string{"shop", "db"}, nil, scenario.LoadTarget{Name: "web", Service: "web", Port: 8080, Path: "/", Protocol: "http", Weight: 3})
	s.Spec.Load.Targets = append(s.Spec.Load.Targets,
		scenario.LoadTarget{Name: "pg", Service: "pg", Port: 5432, Protocol: "tcp", Weight: 1},
		scenario.LoadTarget{Name: "ext", URL: "ext:8079", Protocol: "grpc", Weight: 1, Headers: map[string]string{"X-B": "2"}})
	got, err := Discover(context.Background(), fake.NewClientset(existingCluster()...), s)
	if err != nil {
		t.Fatal(err)
	}
	want := []target.LoadTarget{
		{Name: "web", URL: "http://web.shop.svc.cluster.local:8080/", Protocol: "http", Weight: 3},
		{Name: "pg", URL: "tcp://pg.db.svc.cluster.local:5432", Protocol: "tcp", Weight: 1},
		{Name: "ext", URL: "ext:8079", Protocol: "grpc", Weight: 1, Headers: map[string]string{"X-B": "2"}},
	}
	if !reflect.DeepEqual(got.LoadTargets, want) {
		t.Errorf("endpoints %+v\nwant %+v", got.LoadTargets, want)
	}
	if got.EntryURL != want[0].URL || got.EntryService != "web" || got.EntryNamespace != "shop" {
		t.Errorf("entry %s %s/%s, want the first endpoint", got.EntryURL, got.EntryNamespace, got.EntryService)
	}
	s.Spec.Load.Targets[1].Service = "nope"
	if _, err := Discover(context.Background(), fake.NewClientset(existingCluster()...), s); err == nil || !strings.Contains(err.Error(), "targets[1]") {
		t.Errorf("a second target's missing service: %v, want it named", err)
	}
}

// Every load target of app manifests becomes an endpoint in the namespace its Service was placed in.
func TestManifestsEndpoints(t *testing.T) {
	t.Parallel()
	s := manifestsScenario(t, kustomizeManifests, strings.Replace(kustomizeTopologies, "    - {service: frontend, port: 8080, path: /echo}\n",
		"    - {service: frontend, port: 8080, path: /echo, weight: 3}\n    - {service: store, port: 8079, protocol: grpc, headers: {x-t: s}}\n", 1))
	if ps := CheckManifests(s); len(ps) > 0 {
		t.Fatal(ps)
	}
	_, got, err := Objects(s, s.Spec.Workload.Topologies[1], "golden-run")
	if err != nil {
		t.Fatal(err)
	}
	want := []target.LoadTarget{
		{Name: "frontend", URL: "http://frontend.mb-multi3-0.svc.cluster.local:8080/echo", Protocol: "http", Weight: 3},
		{Name: "store", URL: "store.mb-multi3-2.svc.cluster.local:8079", Protocol: "grpc", Weight: 1, Headers: map[string]string{"x-t": "s"}},
	}
	if !reflect.DeepEqual(got.LoadTargets, want) {
		t.Errorf("endpoints %+v\nwant %+v", got.LoadTargets, want)
	}
	if got.EntryURL != want[0].URL || got.EntryService != "frontend" {
		t.Errorf("entry %s (%s), want the first endpoint", got.EntryURL, got.EntryService)
	}
}

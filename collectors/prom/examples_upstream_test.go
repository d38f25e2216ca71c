package prom

import (
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/meshbench/meshbench/scenario"
)

// Issue 29 section 1 item 8: the studies named monitoring/prometheus-k8s, which only kube-prometheus (jsonnet)
// creates, while the README sends users to kube-prometheus-stack, whose Services are named after the release. The
// Service prometheus-operator creates for every Prometheus, prometheus-operated:9090, exists under both
// (testdata/upstream/prometheus-operator.yaml), so the examples that read Prometheus through the API server name it.
func TestExamplesReachTheOperatorsPrometheusService(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "upstream", "prometheus-operator.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var up struct {
		PrometheusOperator struct {
			GoverningService string `json:"governingService"`
			Port             int    `json:"port"`
		} `json:"prometheusOperator"`
		KubePrometheusStack struct {
			PrometheusSpecServiceName *string `json:"prometheusSpecServiceName"`
		} `json:"kubePrometheusStack"`
		KubePrometheus struct {
			Namespace string `json:"namespace"`
		} `json:"kubePrometheus"`
	}
	if err := yaml.Unmarshal(b, &up); err != nil {
		t.Fatal(err)
	}
	if up.PrometheusOperator.GoverningService == "" || up.PrometheusOperator.Port == 0 || up.KubePrometheusStack.PrometheusSpecServiceName == nil ||
		*up.KubePrometheusStack.PrometheusSpecServiceName != "" {
		t.Fatalf("fixture: %+v", up)
	}
	for _, f := range []string{"study-a-single.yaml", "study-a-multi.yaml"} {
		s, err := scenario.Load(filepath.Join("..", "..", "examples", f))
		if err != nil {
			t.Fatal(err)
		}
		svc := s.Spec.Prometheus.Service
		if svc == nil {
			t.Errorf("%s: no spec.prometheus.service", f)
			continue
		}
		c := ConfigFor(s.Spec.Prometheus, nil)
		if svc.Name != up.PrometheusOperator.GoverningService || c.ServicePort != "" && c.ServicePort != "9090" || svc.Namespace != up.KubePrometheus.Namespace {
			t.Errorf("%s: spec.prometheus.service %s/%s:%s, want %s/%s:%d (prometheus-operator's Service, there under kube-prometheus-stack and kube-prometheus alike)",
				f, svc.Namespace, svc.Name, svc.Port, up.KubePrometheus.Namespace, up.PrometheusOperator.GoverningService, up.PrometheusOperator.Port)
		}
	}
}

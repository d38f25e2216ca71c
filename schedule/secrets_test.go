package schedule

import (
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/meshbench/meshbench/scenario"
)

// TestPrometheusCredentialsBySecretReference: the scheduled objects reference the Prometheus token through a
// Secret volume, never inline it (no ConfigMap value, no argument, no env) and never point at a file of the machine
// the schedule was made on (issue 15 section 3); credentials in a Pushgateway URL would sit in the CronJob's
// arguments and are refused.
func TestPrometheusCredentialsBySecretReference(t *testing.T) {
	t.Parallel()
	const localToken, localCA = "/home/alice/.secrets/prom-token", "/home/alice/ca.pem"
	withToken := func() *scenario.Scenario {
		s := loadScenario(t)
		s.Spec.Prometheus = scenario.Prometheus{URL: "https://prometheus.monitoring:9090", BearerTokenFile: localToken, CAFile: localCA}
		return s
	}
	for _, tc := range []struct {
		name    string
		o       Options
		wantErr string
	}{
		{"token file without a Secret", Options{Scenario: withToken(), Image: "x", PVC: "runs"}, "--prometheus-secret"},
		{"bad Secret name", Options{Scenario: withToken(), Image: "x", PVC: "runs", PrometheusSecret: "Not_A_Name"}, "must be a Secret name"},
		{"credentials in the push URL", Options{Scenario: loadScenario(t), Image: "x", Push: "http://bench:planted-pw@pg:9091"}, "credentials in the Pushgateway URL"},
		{"token by Secret", Options{Scenario: withToken(), Image: "x", PVC: "runs", PrometheusSecret: "meshbench-prometheus"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			objs, err := Objects(tc.o)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "planted-pw") {
					t.Fatalf("error %v, want one containing %q and no password", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			y, err := YAML(objs)
			if err != nil {
				t.Fatal(err)
			}
			for _, local := range []string{localToken, localCA} {
				if strings.Contains(string(y), local) {
					t.Errorf("the manifests name the local file %s", local)
				}
			}
			var cm *corev1.ConfigMap
			var cj *batchv1.CronJob
			for _, o := range objs {
				switch x := o.(type) {
				case *corev1.ConfigMap:
					cm = x
				case *batchv1.CronJob:
					cj = x
				case *corev1.Secret:
					t.Errorf("a Secret %s is emitted: the token must be referenced, not copied", x.Name)
				}
			}
			sc, err := scenario.Parse([]byte(cm.Data[ScenarioFile]))
			if err != nil {
				t.Fatal(err)
			}
			if p := sc.Spec.Prometheus; p.BearerTokenFile != prometheusSecretDir+"/token" || p.CAFile != prometheusSecretDir+"/ca.crt" {
				t.Errorf("scheduled prometheus %+v, want the token and CA in %s", p, prometheusSecretDir)
			}
			pod := cj.Spec.JobTemplate.Spec.Template.Spec
			i := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Secret != nil })
			if i < 0 || pod.Volumes[i].Secret.SecretName != "meshbench-prometheus" {
				t.Fatalf("volumes %+v: want the Secret meshbench-prometheus", pod.Volumes)
			}
			for _, c := range append(pod.InitContainers, pod.Containers...) {
				if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
					return m.Name == pod.Volumes[i].Name && m.MountPath == prometheusSecretDir && m.ReadOnly
				}) {
					t.Errorf("container %s does not mount the Secret read-only at %s: %+v", c.Name, prometheusSecretDir, c.VolumeMounts)
				}
			}
		})
	}
	if got := steps(Options{Push: "https://pg:9091", PushInsecure: true})[1]; !slices.Contains(got, "--push-insecure") {
		t.Errorf("report step %q: want --push-insecure passed on", got)
	}
}

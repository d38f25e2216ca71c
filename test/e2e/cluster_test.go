//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// webScript serves /cgi-bin/who with busybox httpd: it answers with the serving pod's hostname and the client
// address it saw, so a test can tell which pod answered and that the source IP was not masqueraded.
const webScript = `mkdir -p /www/cgi-bin
printf '#!/bin/sh\necho Content-Type: text/plain\necho\necho "host=$(hostname) remote=$REMOTE_ADDR"\n' > /www/cgi-bin/who
chmod +x /www/cgi-bin/who
echo ok > /www/index.html
exec httpd -f -p 8080 -h /www`

// TestCluster checks the harness end to end: scheduling over both nodes, cluster DNS, ClusterIP services,
// cross-node pod traffic without SNAT, exec, the apiserver Service from pods, and Prometheus container metrics.
func TestCluster(t *testing.T) {
	c := RequireCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ns := c.CreateNamespace(t, "cluster")

	web := webDeployment(t, c, ns)
	if _, err := c.Client.AppsV1().Deployments(ns).Create(ctx, web, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create deployment: %v", err)
	}
	svc, err := c.Client.CoreV1().Services(ns).Create(ctx, webService(c, ns), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create service: %v", err)
	}
	if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, clientPod(t, c, ns), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create client pod: %v", err)
	}

	webPods, err := c.WaitPodsReady(ctx, ns, "app=web", 2)
	if err != nil {
		t.Fatalf("web pods: %v", err)
	}
	if webPods[0].Spec.NodeName == webPods[1].Spec.NodeName {
		t.Fatalf("both web replicas on node %q, want one per node", webPods[0].Spec.NodeName)
	}
	for _, p := range webPods {
		if !slices.Contains(c.Nodes, p.Spec.NodeName) {
			t.Errorf("pod %s on node %q, not one of %v", p.Name, p.Spec.NodeName, c.Nodes)
		}
	}
	clients, err := c.WaitPodsReady(ctx, ns, "app=client", 1)
	if err != nil {
		t.Fatalf("client pod: %v", err)
	}
	client := clients[0]
	var remote corev1.Pod // the web replica on the other node than the client
	for _, p := range webPods {
		if p.Spec.NodeName != client.Spec.NodeName {
			remote = p
		}
	}
	t.Logf("client %s (%s) on %s; web %s (%s) on %s and %s (%s) on %s; service %s",
		client.Name, client.Status.PodIP, client.Spec.NodeName,
		webPods[0].Name, webPods[0].Status.PodIP, webPods[0].Spec.NodeName,
		webPods[1].Name, webPods[1].Status.PodIP, webPods[1].Spec.NodeName, svc.Spec.ClusterIP)

	// run execs a shell command in the client pod, retrying until check passes (services, endpoints and DNS
	// records appear a little after the pods are Ready).
	run := func(t *testing.T, script string, check func(out string) error) string {
		t.Helper()
		var out string
		var lastErr error
		deadline := time.Now().Add(60 * time.Second)
		for attempt := 1; ; attempt++ {
			// Each attempt gets its own bound, so the reported error is the command's, not the deadline's.
			actx, acancel := context.WithTimeout(ctx, 20*time.Second)
			stdout, _, err := c.Exec(actx, ns, client.Name, "client", "sh", "-c", script)
			acancel()
			out = stdout
			if err == nil {
				err = check(stdout)
			}
			if err == nil {
				return out
			}
			lastErr = err
			if time.Now().After(deadline) || ctx.Err() != nil {
				t.Fatalf("in pod %s on %s: `%s` still failing after %d attempts: %v; last output %q",
					client.Name, client.Spec.NodeName, script, attempt, lastErr, out)
			}
			time.Sleep(time.Second)
		}
	}
	fqdn := fmt.Sprintf("%s.%s.svc.cluster.local", svc.Name, ns)

	t.Run("exec", func(t *testing.T) {
		out := run(t, "echo exec-ok $(hostname); test -x /bin/busybox && echo toolbox-present", func(out string) error {
			return expect(out, "exec-ok "+client.Name, "toolbox-present")
		})
		t.Logf("exec: %q", strings.TrimSpace(out))
	})

	// Every image reaches the nodes through the harness registry, as on a user's cluster: each container's imageID is
	// the registry repository at the digest the harness pushed (an image imported with `ctr import` has no such repo
	// digest), and the kubelet reports a pull.
	t.Run("registry", func(t *testing.T) {
		pushed := map[string]string{} // repo -> digest
		b, err := os.ReadFile(filepath.Join(c.Env["MESHBENCH_CLUSTER_DIR"], "run", "pushed"))
		if err != nil {
			t.Fatalf("the harness records what it pushed: %v", err)
		}
		for _, line := range strings.Fields(string(b)) {
			ref, digest, _ := strings.Cut(line, "@")
			pushed[ref[:strings.LastIndex(ref, ":")]] = digest
		}
		all := append(append([]corev1.Pod{}, webPods...), client)
		for _, p := range all {
			for _, st := range p.Status.ContainerStatuses {
				repo, digest, _ := strings.Cut(st.ImageID, "@")
				if !strings.HasPrefix(repo, c.Env["MESHBENCH_REGISTRY"]+"/") || pushed[repo] != digest {
					t.Errorf("pod %s container %s: imageID %q is not a pushed image of the registry %s (pushed: %v)", p.Name, st.Name, st.ImageID, c.Env["MESHBENCH_REGISTRY"], pushed)
				}
			}
		}
		ev, err := c.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=Pulled"})
		if err != nil || len(ev.Items) == 0 {
			t.Fatalf("no Pulled events in %s: %v", ns, err)
		}
		t.Logf("kubelet: %s", ev.Items[0].Message)
	})

	t.Run("dns", func(t *testing.T) {
		out := run(t, "nslookup "+fqdn, func(out string) error {
			return expect(out, fqdn, svc.Spec.ClusterIP)
		})
		t.Logf("nslookup %s:\n%s", fqdn, out)
	})

	t.Run("service-http", func(t *testing.T) {
		// NB: Debian's busybox wget segfaults with -T; bound it with timeout(1) instead.
		out := run(t, "timeout 5 wget -q -O - http://"+fqdn+"/cgi-bin/who", func(out string) error {
			// kube-proxy must not masquerade pod-to-service traffic inside the cluster CIDR.
			return expect(out, "host=web-", "remote=", client.Status.PodIP)
		})
		t.Logf("GET http://%s/cgi-bin/who: %q", fqdn, strings.TrimSpace(out))
	})

	t.Run("cross-node-pod-ip", func(t *testing.T) {
		url := fmt.Sprintf("http://%s:8080/cgi-bin/who", remote.Status.PodIP)
		out := run(t, "timeout 5 wget -q -O - "+url, func(out string) error {
			// ipMasq is off on both bridges: the remote pod sees the client's real pod IP.
			return expect(out, "host="+remote.Name, "remote=", client.Status.PodIP)
		})
		t.Logf("%s on %s -> %s on %s: %q", client.Name, client.Spec.NodeName, remote.Name, remote.Spec.NodeName, strings.TrimSpace(out))
	})

	t.Run("apiserver-service", func(t *testing.T) {
		// TCP connect to the kubernetes Service (10.96.0.1:443, DNATed by kube-proxy to the apiserver on node1).
		run(t, "nc -w 3 10.96.0.1 443 </dev/null && echo tcp-ok", func(out string) error {
			return expect(out, "tcp-ok")
		})
	})

	t.Run("prometheus", func(t *testing.T) {
		for _, p := range webPods {
			for _, metric := range []string{"container_cpu_usage_seconds_total", "container_memory_working_set_bytes"} {
				q := fmt.Sprintf(`%s{namespace=%q,pod=%q,container="web"}`, metric, ns, p.Name)
				pctx, pcancel := context.WithTimeout(ctx, 90*time.Second)
				samples, err := c.WaitPromSeries(pctx, q, 1)
				pcancel()
				if err != nil {
					t.Errorf("pod %s on %s: %v", p.Name, p.Spec.NodeName, err)
					continue
				}
				s := samples[0]
				if s.Metric["namespace"] != ns || s.Metric["pod"] != p.Name || s.Metric["container"] != "web" {
					t.Errorf("%s: labels %v", q, s.Metric)
				}
				if s.Metric["node"] != p.Spec.NodeName {
					t.Errorf("%s: scraped from node %q, pod runs on %q", q, s.Metric["node"], p.Spec.NodeName)
				}
				if metric == "container_memory_working_set_bytes" && s.Value <= 0 {
					t.Errorf("%s = %v, want > 0", q, s.Value)
				}
				t.Logf("%s = %g (node %s)", q, s.Value, s.Metric["node"])
			}
		}
	})
}

// expect returns an error naming the first of want that out lacks.
func expect(out string, want ...string) error {
	for _, w := range want {
		if !strings.Contains(out, w) {
			return fmt.Errorf("output lacks %q", w)
		}
	}
	return nil
}

func webDeployment(t *testing.T, c *Cluster, ns string) *appsv1.Deployment {
	labels := c.Labels(map[string]string{"app": "web"})
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					// One replica per node, strictly.
					TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
						MaxSkew:           1,
						TopologyKey:       corev1.LabelHostname,
						WhenUnsatisfiable: corev1.DoNotSchedule,
						LabelSelector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
					}},
					Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
						RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
							TopologyKey:   corev1.LabelHostname,
							LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
						}},
					}},
					TerminationGracePeriodSeconds: ptr.To[int64](1),
					Containers: []corev1.Container{{
						Name:    "web",
						Image:   c.Image(t, "TOOLBOX"),
						Command: []string{"sh", "-c", webScript},
						Ports:   []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
						ReadinessProbe: &corev1.Probe{
							ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(8080)}},
							PeriodSeconds: 1,
						},
					}},
				},
			},
		},
	}
}

func webService(c *Cluster, ns string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns, Labels: c.Labels(nil)},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
}

func clientPod(t *testing.T, c *Cluster, ns string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "client", Namespace: ns, Labels: c.Labels(map[string]string{"app": "client"})},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{
				Name:    "client",
				Image:   c.Image(t, "TOOLBOX"),
				Command: []string{"sleep", "3600"},
			}},
		},
	}
}

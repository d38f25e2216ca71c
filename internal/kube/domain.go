package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// DefaultClusterDomain is Kubernetes' default DNS domain (kubelet --cluster-domain), used when detection fails.
const DefaultClusterDomain = "cluster.local"

// parseKubeletConfigz reads the cluster DNS domain from a kubelet's /configz body: {"kubeletconfig":
// {"clusterDomain": "..."}} (k8s.io/kubernetes pkg/kubelet/server, the KubeletConfiguration as JSON). It is pure.
func parseKubeletConfigz(body []byte) (string, error) {
	var cz struct {
		KubeletConfig struct {
			ClusterDomain string `json:"clusterDomain"`
		} `json:"kubeletconfig"`
	}
	if err := json.Unmarshal(body, &cz); err != nil {
		return "", fmt.Errorf("parse kubelet /configz: %w", err)
	}
	d := strings.TrimSuffix(strings.TrimSpace(cz.KubeletConfig.ClusterDomain), ".")
	if d == "" {
		return "", errors.New("kubelet /configz has no kubeletconfig.clusterDomain")
	}
	return d, nil
}

// DetectClusterDomain asks the kubelets (nodes/proxy, which the run already needs) for their clusterDomain: Istio
// does not detect it either (global.proxy.clusterDomain, default cluster.local). Nodes that disagree are an error
// naming both; a node that cannot be read is skipped.
func DetectClusterDomain(ctx context.Context, kc kubernetes.Interface) (string, error) {
	lctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	nodes, err := kc.CoreV1().Nodes().List(lctx, metav1.ListOptions{})
	if err != nil {
		return "", fmt.Errorf("detect cluster domain: list nodes: %w", err)
	}
	var found, from string
	var errs []error
	for i, n := range nodes.Items {
		if i >= 3 { // a few nodes suffice: the domain is cluster-wide
			break
		}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		body, err := ProxyGet(cctx, kc, "nodes", "", n.Name, "/configz", nil)
		cancel()
		if err == nil {
			var d string
			if d, err = parseKubeletConfigz(body); err == nil {
				if found != "" && d != found {
					return "", fmt.Errorf("detect cluster domain: node %s says %q, node %s says %q: set spec.workload.clusterDomain", from, found, n.Name, d)
				}
				found, from = d, n.Name
				continue
			}
		}
		errs = append(errs, fmt.Errorf("node %s: %w", n.Name, err))
	}
	if found == "" {
		if len(errs) == 0 {
			return "", errors.New("detect cluster domain: no nodes")
		}
		return "", fmt.Errorf("detect cluster domain: %w", errors.Join(errs...))
	}
	return found, nil
}

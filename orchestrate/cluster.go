package orchestrate

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiversion "k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/kubernetes"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/mesh"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

// DefaultConnectTimeout bounds the first API call (the server version): an API server that does not answer in this
// time is not reachable for a run.
const DefaultConnectTimeout = 15 * time.Second

// Connect builds the Kubernetes clients from the kubeconfig and context and checks that the API server answers
// (Reach). It returns the clients and the server's version.
func Connect(ctx context.Context, kubeconfig, kubeContext string, timeout time.Duration) (*kube.Clients, string, error) {
	clients, err := kube.NewClients(kubeconfig, kubeContext)
	return Reach(ctx, clients, err, timeout)
}

// Reach checks clients that kube.NewClients returned with err, for a caller that used them before (run and cni
// resolve the images with them first): the API server must answer GET /version within timeout. A kubeconfig that
// could not be loaded (err) or an API server that does not answer is an *InputError: nothing has been created or
// changed yet. It returns the same clients and the server's version.
func Reach(ctx context.Context, clients *kube.Clients, err error, timeout time.Duration) (*kube.Clients, string, error) {
	if err != nil {
		return nil, "", inputError(fmt.Errorf("%w (nothing was changed)", err))
	}
	v, err := serverVersion(ctx, clients.Kube, timeout)
	if err != nil {
		return nil, "", inputError(fmt.Errorf("the Kubernetes API server %s does not answer: %w; check --kubeconfig/--context or $KUBECONFIG (nothing was changed)",
			clients.Config.Host, err))
	}
	return clients, v, nil
}

// serverVersion reads the API server's GitVersion with ctx and a timeout (client-go's Discovery().ServerVersion takes
// no context and waits as long as the transport does).
func serverVersion(ctx context.Context, kc kubernetes.Interface, timeout time.Duration) (string, error) {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	rc := kc.Discovery().RESTClient()
	if rc == nil { // client-go's fake discovery has no REST client and answers at once
		v, err := kc.Discovery().ServerVersion()
		if err != nil {
			return "", err
		}
		return v.GitVersion, nil
	}
	body, err := rc.Get().AbsPath("/version").Do(cctx).Raw()
	if err != nil {
		return "", fmt.Errorf("get /version: %w", err)
	}
	var info apiversion.Info
	if err := json.Unmarshal(body, &info); err != nil {
		return "", fmt.Errorf("decode /version: %w", err)
	}
	return info.GitVersion, nil
}

// resolveCluster reads, before anything is changed, the Istio control plane serving the app (several and no default:
// *InputError) and the cluster DNS domain for the app's FQDNs (the scenario's, else the kubelets', else cluster.local
// with a warning), which it sets in s.
func resolveCluster(ctx context.Context, clients *kube.Clients, s *scenario.Scenario, plan scenario.Plan, log *slog.Logger) (mesh.IstioInfo, error) {
	info, err := mesh.Detect(ctx, clients, s.Spec.Istio.Revision)
	if err != nil {
		log.Warn("detect istio", "err", err)
	}
	for _, p := range info.Problems {
		log.Warn("detect istio", "problem", p)
	}
	needIstio := false
	for _, c := range plan.Cases {
		needIstio = needIstio || mesh.NeedsIstio(c.Mode)
	}
	if info.RevisionError != "" && needIstio {
		return info, inputError(fmt.Errorf("choose the Istio control plane: %s (nothing was changed in the cluster)", info.RevisionError))
	}
	if len(plan.Cases) > 0 && s.Spec.Workload.ClusterDomain == "" {
		d, err := kube.DetectClusterDomain(ctx, clients.Kube)
		if err != nil {
			d = kube.DefaultClusterDomain
			log.Warn("cluster DNS domain not detected: using "+d+" (set spec.workload.clusterDomain if the cluster uses another)", "err", err)
		}
		s.Spec.Workload.ClusterDomain = d
	}
	return info, nil
}

// ClusterFacts gathers run.json's cluster facts; what cannot be read is logged and left empty.
func ClusterFacts(ctx context.Context, clients *kube.Clients, s *scenario.Scenario, kubeVersion string, ist mesh.IstioInfo, log *slog.Logger) results.ClusterFacts {
	f := results.ClusterFacts{Profile: string(s.Spec.Profile), ClusterDomain: s.Spec.Workload.ClusterDomain, KubernetesVersion: kubeVersion}
	cctx, cancel := context.WithTimeout(ctx, DefaultConnectTimeout)
	defer cancel()
	nodes, err := clients.Kube.CoreV1().Nodes().List(cctx, metav1.ListOptions{})
	if err != nil {
		log.Warn("list nodes", "err", err)
	} else {
		for _, n := range nodes.Items {
			nf := results.NodeFacts{Name: n.Name, KubeletVersion: n.Status.NodeInfo.KubeletVersion, KernelVersion: n.Status.NodeInfo.KernelVersion,
				OSImage: n.Status.NodeInfo.OSImage, ContainerRuntime: n.Status.NodeInfo.ContainerRuntimeVersion,
				MachineID: n.Status.NodeInfo.MachineID, BootID: n.Status.NodeInfo.BootID,
				CPU: n.Status.Allocatable.Cpu().String(), Memory: n.Status.Allocatable.Memory().String()}
			for _, a := range n.Status.Addresses {
				if a.Type == corev1.NodeInternalIP {
					nf.InternalIP = a.Address
				}
			}
			f.Nodes = append(f.Nodes, nf)
		}
		sort.Slice(f.Nodes, func(i, j int) bool { return f.Nodes[i].Name < f.Nodes[j].Name })
	}
	if f.Istio = istioFacts(ist); f.Istio != nil {
		f.Istio.DataPlane = runDataPlane(f.Istio, s.Spec.Modes)
	}
	return f
}

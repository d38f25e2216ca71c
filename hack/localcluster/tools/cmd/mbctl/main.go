// Command mbctl is the local cluster harness's small client-go helper, so the scripts never need kubectl:
//
//	mbctl [-kubeconfig FILE] apply FILE...                 server-side apply of multi-document YAML
//	mbctl [-kubeconfig FILE] wait-nodes N                  until N nodes exist and are Ready
//	mbctl [-kubeconfig FILE] wait-deployment NS/NAME       until the Deployment is fully available
//	mbctl [-kubeconfig FILE] wait-serviceaccount NS/NAME   until the ServiceAccount exists
//	mbctl [-kubeconfig FILE] status                        nodes and pods, for humans
//
// -timeout bounds every wait (default 3m). The kubeconfig defaults to $KUBECONFIG.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
)

const fieldManager = "meshbench-localcluster"

func main() {
	os.Exit(mainE())
}

func mainE() int {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig file")
	timeout := flag.Duration("timeout", 3*time.Minute, "upper bound for waits")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: mbctl [-kubeconfig FILE] [-timeout D] apply FILE... | wait-nodes N | wait-deployment NS/NAME | wait-serviceaccount NS/NAME | status")
	}
	flag.Parse()
	if flag.NArg() < 1 {
		flag.Usage()
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *kubeconfig, *timeout, flag.Arg(0), flag.Args()[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "mbctl %s: %v\n", flag.Arg(0), err)
		return 1
	}
	return 0
}

func run(ctx context.Context, kubeconfig string, timeout time.Duration, verb string, args []string) error {
	if kubeconfig == "" {
		return errors.New("no kubeconfig: pass -kubeconfig or set KUBECONFIG")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("load kubeconfig %s: %w", kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("build clientset: %w", err)
	}
	switch verb {
	case "apply":
		if len(args) == 0 {
			return errors.New("need at least one FILE")
		}
		return apply(ctx, cfg, args)
	case "wait-nodes":
		var n int
		if len(args) != 1 {
			return errors.New("need N")
		}
		if _, err := fmt.Sscanf(args[0], "%d", &n); err != nil {
			return fmt.Errorf("parse N %q: %w", args[0], err)
		}
		return waitNodes(ctx, cs, n, timeout)
	case "wait-deployment":
		ns, name, err := splitNSName(args)
		if err != nil {
			return err
		}
		return waitDeployment(ctx, cs, ns, name, timeout)
	case "wait-serviceaccount":
		ns, name, err := splitNSName(args)
		if err != nil {
			return err
		}
		return waitServiceAccount(ctx, cs, ns, name, timeout)
	case "status":
		return status(ctx, cs, os.Stdout)
	default:
		return fmt.Errorf("unknown verb %q", verb)
	}
}

func splitNSName(args []string) (string, string, error) {
	if len(args) != 1 {
		return "", "", errors.New("need NS/NAME")
	}
	ns, name, ok := strings.Cut(args[0], "/")
	if !ok || ns == "" || name == "" {
		return "", "", fmt.Errorf("%q is not NS/NAME", args[0])
	}
	return ns, name, nil
}

// apply server-side-applies every object of every file (multi-document YAML), in file order.
func apply(ctx context.Context, cfg *rest.Config, files []string) error {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("build discovery client: %w", err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("build dynamic client: %w", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
		for {
			var obj unstructured.Unstructured
			if err := dec.Decode(&obj.Object); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return fmt.Errorf("decode %s: %w", f, err)
			}
			if len(obj.Object) == 0 {
				continue
			}
			gvk := obj.GroupVersionKind()
			m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				return fmt.Errorf("map %s: %w", gvk, err)
			}
			var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
			if m.Scope.Name() == "namespace" {
				if obj.GetNamespace() == "" {
					obj.SetNamespace(corev1.NamespaceDefault)
				}
				ri = dyn.Resource(m.Resource).Namespace(obj.GetNamespace())
			}
			data, err := obj.MarshalJSON()
			if err != nil {
				return err
			}
			force := true
			if _, err := ri.Patch(ctx, obj.GetName(), types.ApplyPatchType, data,
				metav1.PatchOptions{FieldManager: fieldManager, Force: &force}); err != nil {
				return fmt.Errorf("apply %s %s/%s: %w", gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
			}
			fmt.Printf("applied %s %s\n", strings.ToLower(gvk.Kind), strings.TrimPrefix(obj.GetNamespace()+"/"+obj.GetName(), "/"))
		}
	}
	return nil
}

func poll(ctx context.Context, timeout time.Duration, what string, cond func(context.Context) (bool, string)) error {
	last := ""
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		ok, msg := cond(ctx)
		last = msg
		return ok, nil
	})
	if err != nil {
		return fmt.Errorf("wait for %s (%s): %w; last state: %s", what, timeout, err, last)
	}
	return nil
}

func waitNodes(ctx context.Context, cs kubernetes.Interface, n int, timeout time.Duration) error {
	return poll(ctx, timeout, fmt.Sprintf("%d Ready nodes", n), func(ctx context.Context) (bool, string) {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		ready := 0
		for i := range nodes.Items {
			if nodeReady(&nodes.Items[i]) {
				ready++
			}
		}
		return ready >= n, fmt.Sprintf("%d/%d nodes Ready", ready, len(nodes.Items))
	})
}

func waitDeployment(ctx context.Context, cs kubernetes.Interface, ns, name string, timeout time.Duration) error {
	return poll(ctx, timeout, "deployment "+ns+"/"+name, func(ctx context.Context) (bool, string) {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return deploymentAvailable(d), fmt.Sprintf("%d/%d available (generation %d, observed %d)",
			d.Status.AvailableReplicas, replicas(d), d.Generation, d.Status.ObservedGeneration)
	})
}

func waitServiceAccount(ctx context.Context, cs kubernetes.Interface, ns, name string, timeout time.Duration) error {
	return poll(ctx, timeout, "serviceaccount "+ns+"/"+name, func(ctx context.Context) (bool, string) {
		_, err := cs.CoreV1().ServiceAccounts(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, "not found yet"
		}
		if err != nil {
			return false, err.Error()
		}
		return true, "exists"
	})
}

func replicas(d *appsv1.Deployment) int32 {
	if d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
}

func deploymentAvailable(d *appsv1.Deployment) bool {
	want := replicas(d)
	return d.Status.ObservedGeneration >= d.Generation && d.Status.UpdatedReplicas == want &&
		d.Status.AvailableReplicas == want && d.Status.Replicas == want
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// status prints nodes and pods as two small tables, sorted for stable output.
func status(ctx context.Context, cs kubernetes.Interface, w io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tREADY\tINTERNAL-IP\tPOD-CIDR\tVERSION\tRUNTIME")
	sort.Slice(nodes.Items, func(i, j int) bool { return nodes.Items[i].Name < nodes.Items[j].Name })
	for i := range nodes.Items {
		n := &nodes.Items[i]
		ip := ""
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				ip = a.Address
			}
		}
		fmt.Fprintf(tw, "%s\t%t\t%s\t%s\t%s\t%s\n", n.Name, nodeReady(n), ip, n.Spec.PodCIDR,
			n.Status.NodeInfo.KubeletVersion, n.Status.NodeInfo.ContainerRuntimeVersion)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list pods: %w", err)
	}
	sort.Slice(pods.Items, func(i, j int) bool {
		a, b := &pods.Items[i], &pods.Items[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tPOD\tPHASE\tREADY\tNODE\tPOD-IP\tAGE")
	for i := range pods.Items {
		p := &pods.Items[i]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%t\t%s\t%s\t%s\n", p.Namespace, p.Name, p.Status.Phase, podReady(p),
			p.Spec.NodeName, p.Status.PodIP, time.Since(p.CreationTimestamp.Time).Round(time.Second))
	}
	if len(pods.Items) == 0 {
		fmt.Fprintln(tw, "(no pods)")
	}
	return tw.Flush()
}

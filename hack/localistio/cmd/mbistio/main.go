// Command mbistio is the local Istio harness's helper (hack/localistio). It keeps the shell scripts free of
// kubectl, jq and python:
//
//	mbistio render -f VALUES -out DIR [-ztunnel-sock-dir DIR]     render Istio's own charts and split them
//	mbistio gwapi-crds -dir MODULE_DIR -out FILE                   join the Gateway API standard CRDs with ---
//	mbistio apply FILE...                                          server-side apply (multi-document YAML)
//	mbistio delete FILE...                                         delete what FILE... describes (reverse order)
//	mbistio wait-crds FILE...                                      until every CRD in FILE... is Established
//	mbistio wait-deployment NS/NAME                                until the Deployment is available
//	mbistio wait-daemonset NS/NAME                                 until every scheduled DaemonSet pod is ready
//	mbistio wait-webhook [-revision R]                             until istiod has patched its validator to fail-close
//	mbistio sa-creds -sa NS/NAME -server URL -out DIR              token + ca.crt + namespace + kubeconfig for a host agent
//	mbistio cni-env FILE                                           print `export K='V'` lines from the rendered istio-cni env
//	mbistio supervise -watch-file F -- CMD...                      run CMD; end it when F (the cluster CA) goes away
//	mbistio marker apply -set K=V... | marker delete               the stand-in marker ConfigMap
//	mbistio cleanup                                                remove what istiod created outside its manifests
//	mbistio status                                                 istiod, agents' view, marker
//	mbistio waypoint-bootstrap -in F -out F                        the bootstrap template for an upstream Envoy waypoint
//	mbistio waypoint-envoyfilter [-root-namespace NS] -out F       the EnvoyFilter that fits waypoint listeners to it
//
// The kubeconfig comes from -kubeconfig or $KUBECONFIG; -timeout bounds every wait (default 3m).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"istio.io/istio/operator/pkg/component"
	"istio.io/istio/operator/pkg/render"
	"istio.io/istio/operator/pkg/util/clog"
)

const (
	fieldManager = "meshbench-localistio"
	// MarkerName/MarkerAnnotation: marker (a), the authoritative "this data plane is a test stand-in" signal that
	// meshbench's mesh.Detect looks for (mesh.StandInAnnotation).
	markerNamespace  = "istio-system"
	markerName       = "meshbench-test-standin"
	markerAnnotation = "meshbench.dev/test-standin"
)

var (
	kubeconfig = flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig file")
	timeout    = flag.Duration("timeout", 3*time.Minute, "upper bound for waits")
)

func main() {
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: mbistio [-kubeconfig F] [-timeout D] render|gwapi-crds|apply|delete|wait-crds|wait-deployment|wait-daemonset|wait-webhook|sa-creds|cni-env|supervise|marker|cleanup|status ...")
	}
	flag.Parse()
	if flag.NArg() < 1 {
		flag.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, flag.Arg(0), flag.Args()[1:])
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "mbistio %s: %v\n", flag.Arg(0), err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cmd string, args []string) error {
	switch cmd {
	case "render":
		return cmdRender(args)
	case "gwapi-crds":
		return cmdGatewayAPICRDs(args)
	case "cni-env":
		return cmdCNIEnv(args)
	case "supervise":
		return cmdSupervise(args)
	case "waypoint-bootstrap", "waypoint-envoyfilter":
		return cmdWaypoint(cmd, args)
	}
	c, err := newClients()
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	switch cmd {
	case "apply":
		return c.applyFiles(wctx, args)
	case "delete":
		return c.deleteFiles(wctx, args)
	case "wait-crds":
		return c.waitCRDs(wctx, args)
	case "wait-deployment":
		return c.waitDeployment(wctx, one(args))
	case "wait-daemonset":
		return c.waitDaemonSet(wctx, one(args))
	case "wait-webhook":
		wfs := flag.NewFlagSet("wait-webhook", flag.ExitOnError)
		rev := wfs.String("revision", "", "istiod revision (empty: the default install)")
		_ = wfs.Parse(args)
		return c.waitWebhook(wctx, *rev)
	case "sa-creds":
		return c.saCreds(wctx, args)
	case "marker":
		return c.marker(wctx, args)
	case "cleanup":
		return c.cleanup(wctx)
	case "status":
		return c.status(wctx)
	}
	flag.Usage()
	return fmt.Errorf("unknown command %q", cmd)
}

func one(args []string) string {
	if len(args) != 1 {
		return ""
	}
	return args[0]
}

// ---------------------------------------------------------------------------------------------------------------
// render

// cmdRender renders the charts embedded in istio.io/istio (exactly what `istioctl manifest generate -f VALUES` does)
// and splits the result for the local cluster:
//
//	istio-crds.yaml        the Istio CRDs (Base component)
//	istiod.yaml            Base (minus CRDs) + Pilot: istiod Deployment, webhooks, RBAC, mesh/injector ConfigMaps
//	istio-cni.yaml         Cni minus the DaemonSet (ServiceAccount, RBAC, istio-cni-config): the agent runs on the host
//	istio-cni-env.json     the agent's environment: istio-cni-config data + the DaemonSet's literal env
//	ztunnel.yaml           the ztunnel DaemonSet + RBAC, ztunnel socket hostPath moved to -ztunnel-sock-dir
//	unused.yaml            what is not applied (the istio-cni DaemonSet), for reference
//	all.yaml               the unsplit render
func cmdRender(args []string) error {
	fs := flag.NewFlagSet("render", flag.ExitOnError)
	var values multiFlag
	fs.Var(&values, "f", "IstioOperator overlay (required; repeatable, later files win)")
	out := fs.String("out", "", "output directory (required)")
	sockDir := fs.String("ztunnel-sock-dir", "", "host directory replacing the ztunnel DaemonSet's /var/run/ztunnel hostPath")
	var sets multiFlag
	fs.Var(&sets, "set", "extra --set style override (repeatable)")
	_ = fs.Parse(args)
	if len(values) == 0 || *out == "" {
		return errors.New("-f and -out are required")
	}
	sets2, _, err := render.GenerateManifest(values, sets, true, nil, clog.NewDefaultLogger())
	if err != nil {
		return fmt.Errorf("generate manifest: %w", err)
	}
	sort.SliceStable(sets2, func(i, j int) bool { return sets2[i].Component < sets2[j].Component })
	buckets := map[string][]*unstructured.Unstructured{}
	var all []*unstructured.Unstructured
	env := map[string]string{}
	for _, s := range sets2 {
		for _, m := range s.Manifests {
			u := m.Unstructured.DeepCopy()
			all = append(all, u)
			kind := u.GetKind()
			switch {
			case kind == "CustomResourceDefinition":
				buckets["istio-crds.yaml"] = append(buckets["istio-crds.yaml"], u)
			case s.Component == component.BaseComponentName || s.Component == component.PilotComponentName:
				buckets["istiod.yaml"] = append(buckets["istiod.yaml"], u)
			case s.Component == component.CNIComponentName && kind == "DaemonSet":
				if err := cniDaemonSetEnv(u, env); err != nil {
					return err
				}
				buckets["unused.yaml"] = append(buckets["unused.yaml"], u)
			case s.Component == component.CNIComponentName:
				if kind == "ConfigMap" && u.GetName() == "istio-cni-config" {
					data, _, _ := unstructured.NestedStringMap(u.Object, "data")
					for k, v := range data {
						env[k] = v
					}
				}
				buckets["istio-cni.yaml"] = append(buckets["istio-cni.yaml"], u)
			case s.Component == component.ZtunnelComponentName:
				if kind == "DaemonSet" && *sockDir != "" {
					if err := patchZtunnel(u, *sockDir); err != nil {
						return err
					}
				}
				buckets["ztunnel.yaml"] = append(buckets["ztunnel.yaml"], u)
			default:
				buckets["unused.yaml"] = append(buckets["unused.yaml"], u)
			}
		}
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	buckets["all.yaml"] = all
	names := make([]string, 0, len(buckets))
	for n := range buckets {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := writeYAML(filepath.Join(*out, n), buckets[n]); err != nil {
			return err
		}
		fmt.Printf("%-18s %3d objects\n", n, len(buckets[n]))
	}
	b, _ := json.MarshalIndent(env, "", "  ")
	return os.WriteFile(filepath.Join(*out, "istio-cni-env.json"), append(b, '\n'), 0o644)
}

// cniDaemonSetEnv keeps the literal env of the istio-cni DaemonSet's container (the rest comes from the ConfigMap,
// and valueFrom fields are set by the host runner).
func cniDaemonSetEnv(u *unstructured.Unstructured, env map[string]string) error {
	var ds appsv1.DaemonSet
	if err := fromUnstructured(u, &ds); err != nil {
		return err
	}
	for _, c := range ds.Spec.Template.Spec.Containers {
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				env[e.Name] = e.Value
			}
		}
	}
	return nil
}

// patchZtunnel points the ztunnel DaemonSet's socket hostPath at sockDir. The istio-cni agents run as host
// processes and each node's agent serves its ZDS socket at sockDir/<node>/ztunnel.sock; the ztunnel stand-in
// finds its node's socket from NODE_NAME. Nothing else in Istio's DaemonSet changes.
func patchZtunnel(u *unstructured.Unstructured, sockDir string) error {
	var ds appsv1.DaemonSet
	if err := fromUnstructured(u, &ds); err != nil {
		return err
	}
	found := false
	for i, v := range ds.Spec.Template.Spec.Volumes {
		if v.HostPath != nil && v.HostPath.Path == "/var/run/ztunnel" {
			ds.Spec.Template.Spec.Volumes[i].HostPath.Path = sockDir
			found = true
		}
	}
	if !found {
		return errors.New("ztunnel DaemonSet: no hostPath /var/run/ztunnel to patch (chart changed?)")
	}
	obj, err := toUnstructured(&ds)
	if err != nil {
		return err
	}
	u.Object = obj
	u.SetAPIVersion("apps/v1")
	u.SetKind("DaemonSet")
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "spec", "template", "metadata", "creationTimestamp")
	return nil
}

func writeYAML(path string, objs []*unstructured.Unstructured) error {
	var buf bytes.Buffer
	for _, o := range objs {
		b, err := yaml.Marshal(o.Object)
		if err != nil {
			return fmt.Errorf("marshal %s/%s: %w", o.GetKind(), o.GetName(), err)
		}
		buf.WriteString("---\n")
		buf.Write(b)
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// cmdGatewayAPICRDs joins config/crd/standard/*.yaml of a sigs.k8s.io/gateway-api module directory. The files do
// not start with `---`, so a plain cat would merge them into one document and apply only the last object.
func cmdGatewayAPICRDs(args []string) error {
	fs := flag.NewFlagSet("gwapi-crds", flag.ExitOnError)
	dir := fs.String("dir", "", "sigs.k8s.io/gateway-api module directory (required)")
	out := fs.String("out", "", "output file (required)")
	_ = fs.Parse(args)
	if *dir == "" || *out == "" {
		return errors.New("-dir and -out are required")
	}
	files, err := filepath.Glob(filepath.Join(*dir, "config", "crd", "standard", "*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no standard CRDs under %s (err=%v)", *dir, err)
	}
	sort.Strings(files)
	var buf bytes.Buffer
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		docs, err := splitDocs(b)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		for _, d := range docs {
			buf.WriteString("---\n")
			buf.Write(bytes.TrimSpace(d))
			buf.WriteString("\n")
			n++
		}
	}
	fmt.Printf("%s: %d objects from %d files\n", *out, n, len(files))
	return os.WriteFile(*out, buf.Bytes(), 0o644)
}

// cmdCNIEnv prints the rendered istio-cni agent environment as shell `export` lines (single-quoted).
func cmdCNIEnv(args []string) error {
	if len(args) != 1 {
		return errors.New("usage: cni-env FILE")
	}
	b, err := os.ReadFile(args[0])
	if err != nil {
		return err
	}
	env := map[string]string{}
	if err := json.Unmarshal(b, &env); err != nil {
		return err
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Printf("export %s='%s'\n", k, strings.ReplaceAll(env[k], "'", `'\''`))
	}
	return nil
}

// ---------------------------------------------------------------------------------------------------------------
// cluster operations

type clients struct {
	cfg    *rest.Config
	raw    clientcmdapi.Config
	kube   kubernetes.Interface
	dyn    dynamic.Interface
	mapper meta.ResettableRESTMapper
}

func newClients() (*clients, error) {
	if *kubeconfig == "" {
		return nil, errors.New("no kubeconfig: set -kubeconfig or KUBECONFIG")
	}
	loader := &clientcmd.ClientConfigLoadingRules{ExplicitPath: *kubeconfig}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(loader, nil)
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %s: %w", *kubeconfig, err)
	}
	raw, err := cc.RawConfig()
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 50, 100
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &clients{cfg: cfg, raw: raw, kube: kc, dyn: dc, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))}, nil
}

func readObjects(files []string) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		docs, err := splitDocs(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		for _, d := range docs {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal(d, &u.Object); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			if len(u.Object) == 0 || u.GetKind() == "" {
				continue
			}
			objs = append(objs, u)
		}
	}
	return objs, nil
}

func splitDocs(b []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufioReader(b))
	var out [][]byte
	for {
		d, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(d)) > 0 {
			out = append(out, d)
		}
	}
}

func (c *clients) resource(u *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	gvk := u.GroupVersionKind()
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		c.mapper.Reset()
		if m, err = c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			return nil, err
		}
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		ns := u.GetNamespace()
		if ns == "" {
			ns = "default"
		}
		return c.dyn.Resource(m.Resource).Namespace(ns), nil
	}
	return c.dyn.Resource(m.Resource), nil
}

func (c *clients) applyFiles(ctx context.Context, files []string) error {
	objs, err := readObjects(files)
	if err != nil {
		return err
	}
	for _, u := range objs {
		// Retry briefly: a CRD applied a moment ago may not be served yet, and a namespace may still be terminating.
		err := wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			ri, err := c.resource(u)
			if err != nil {
				fmt.Fprintf(os.Stderr, "  waiting for %s: %v\n", u.GroupVersionKind(), err)
				return false, nil
			}
			b, err := json.Marshal(u.Object)
			if err != nil {
				return false, err
			}
			force := true
			_, err = ri.Patch(ctx, u.GetName(), types.ApplyPatchType, b, metav1.PatchOptions{FieldManager: fieldManager, Force: &force})
			if err != nil {
				fmt.Fprintf(os.Stderr, "  apply %s %s/%s: %v (retrying)\n", u.GetKind(), u.GetNamespace(), u.GetName(), err)
				return false, nil
			}
			return true, nil
		})
		if err != nil {
			return fmt.Errorf("apply %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
		}
	}
	fmt.Printf("applied %d objects from %s\n", len(objs), strings.Join(files, " "))
	return nil
}

func (c *clients) deleteFiles(ctx context.Context, files []string) error {
	objs, err := readObjects(files)
	if err != nil {
		return err
	}
	slices.Reverse(objs)
	bg := metav1.DeletePropagationBackground
	n := 0
	for _, u := range objs {
		ri, err := c.resource(u)
		if err != nil {
			if meta.IsNoMatchError(err) {
				continue // the CRD is gone already: so is the object
			}
			return err
		}
		err = ri.Delete(ctx, u.GetName(), metav1.DeleteOptions{PropagationPolicy: &bg})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return fmt.Errorf("delete %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
		default:
			n++
		}
	}
	fmt.Printf("deleted %d objects from %s\n", n, strings.Join(files, " "))
	return nil
}

var (
	crdGVR     = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	gwClassGVR = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gatewayclasses"}
)

func (c *clients) waitCRDs(ctx context.Context, files []string) error {
	objs, err := readObjects(files)
	if err != nil {
		return err
	}
	for _, u := range objs {
		if u.GetKind() != "CustomResourceDefinition" {
			continue
		}
		name := u.GetName()
		err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			got, err := c.dyn.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
			for _, ci := range conds {
				cm, _ := ci.(map[string]any)
				if cm["type"] == "Established" && cm["status"] == "True" {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s not established: %w", name, err)
		}
	}
	c.mapper.Reset()
	return nil
}

func splitNN(s string) (string, string, error) {
	ns, name, ok := strings.Cut(s, "/")
	if !ok || ns == "" || name == "" {
		return "", "", fmt.Errorf("want NAMESPACE/NAME, got %q", s)
	}
	return ns, name, nil
}

func (c *clients) waitDeployment(ctx context.Context, nn string) error {
	ns, name, err := splitNN(nn)
	if err != nil {
		return err
	}
	last := ""
	err = wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		d, err := c.kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		s := d.Status
		last = fmt.Sprintf("generation %d/%d, updated %d, available %d of %d", s.ObservedGeneration, d.Generation, s.UpdatedReplicas, s.AvailableReplicas, want)
		return s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == want && s.AvailableReplicas == want && s.Replicas == want, nil
	})
	if err != nil {
		return fmt.Errorf("deployment %s not available (%s): %w", nn, last, err)
	}
	return nil
}

func (c *clients) waitDaemonSet(ctx context.Context, nn string) error {
	ns, name, err := splitNN(nn)
	if err != nil {
		return err
	}
	last := ""
	err = wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		d, err := c.kube.AppsV1().DaemonSets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		s := d.Status
		last = fmt.Sprintf("generation %d/%d, desired %d, updated %d, ready %d", s.ObservedGeneration, d.Generation, s.DesiredNumberScheduled, s.UpdatedNumberScheduled, s.NumberReady)
		return s.ObservedGeneration >= d.Generation && s.DesiredNumberScheduled > 0 && s.UpdatedNumberScheduled == s.DesiredNumberScheduled && s.NumberReady == s.DesiredNumberScheduled, nil
	})
	if err != nil {
		return fmt.Errorf("daemonset %s not ready (%s): %w", nn, last, err)
	}
	fmt.Printf("daemonset %s ready\n", nn)
	return nil
}

// waitWebhook waits until istiod has patched its caBundle into the validating webhook and switched it to
// failurePolicy=Fail, which it does only after it has checked that the apiserver reaches its webhook.
// With a revision the names carry it (istio-discovery templates validatingwebhookconfiguration.yaml and
// mutatingwebhook.yaml: istio-validator-<rev>-<ns>, istio-sidecar-injector-<rev>).
func (c *clients) waitWebhook(ctx context.Context, revision string) error {
	validator, injector := "istio-validator-istio-system", "istio-sidecar-injector"
	if revision != "" {
		validator, injector = "istio-validator-"+revision+"-istio-system", "istio-sidecar-injector-"+revision
	}
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		v, err := c.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, validator, metav1.GetOptions{})
		if err != nil || len(v.Webhooks) == 0 || v.Webhooks[0].FailurePolicy == nil {
			return false, nil
		}
		return string(*v.Webhooks[0].FailurePolicy) == "Fail" && len(v.Webhooks[0].ClientConfig.CABundle) > 0, nil
	})
	if err != nil {
		return fmt.Errorf("istiod validating webhook never switched to fail-close: %w", err)
	}
	m, err := c.kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, injector, metav1.GetOptions{})
	if err != nil {
		return err
	}
	for _, w := range m.Webhooks {
		if len(w.ClientConfig.CABundle) == 0 {
			return fmt.Errorf("mutating webhook %s has no caBundle yet", w.Name)
		}
	}
	return nil
}

// saCreds writes what a DaemonSet pod of SA would see under /var/run/secrets/kubernetes.io/serviceaccount, plus a
// kubeconfig with that token: the host agent then works with exactly the RBAC the chart gives it.
func (c *clients) saCreds(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("sa-creds", flag.ExitOnError)
	sa := fs.String("sa", "istio-system/istio-cni", "service account NS/NAME")
	server := fs.String("server", "", "apiserver URL the agent uses (default: the kubeconfig's)")
	out := fs.String("out", "", "output directory (required)")
	dur := fs.Duration("duration", 48*time.Hour, "token lifetime")
	_ = fs.Parse(args)
	ns, name, err := splitNN(*sa)
	if err != nil || *out == "" {
		return errors.Join(err, errors.New("-out is required"))
	}
	secs := int64(dur.Seconds())
	var tok *authenticationv1.TokenRequest
	err = wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		var err error
		tok, err = c.kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs}}, metav1.CreateOptions{})
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("token for %s: %w", *sa, err)
	}
	ca := c.cfg.CAData
	if len(ca) == 0 && c.cfg.CAFile != "" {
		if ca, err = os.ReadFile(c.cfg.CAFile); err != nil {
			return err
		}
	}
	if len(ca) == 0 {
		return errors.New("kubeconfig has no CA")
	}
	srv := *server
	if srv == "" {
		srv = c.cfg.Host
	}
	if err := os.MkdirAll(filepath.Join(*out, "sa"), 0o700); err != nil {
		return err
	}
	files := map[string][]byte{
		"sa/token":     []byte(tok.Status.Token),
		"sa/ca.crt":    ca,
		"sa/namespace": []byte(ns),
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["local"] = &clientcmdapi.Cluster{Server: srv, CertificateAuthorityData: ca}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{TokenFile: filepath.Join(*out, "sa", "token")}
	kc.Contexts["default"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: name, Namespace: ns}
	kc.CurrentContext = "default"
	kb, err := clientcmd.Write(*kc)
	if err != nil {
		return err
	}
	files["kubeconfig"] = kb
	for f, b := range files {
		if err := os.WriteFile(filepath.Join(*out, f), b, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// marker manages the authoritative stand-in marker: ConfigMap istio-system/meshbench-test-standin with annotation
// meshbench.dev/test-standin=true; its data says which Istio components are stand-ins, and their versions.
func (c *clients) marker(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return errors.New("usage: marker apply -set K=V... | marker delete")
	}
	cms := c.kube.CoreV1().ConfigMaps(markerNamespace)
	switch args[0] {
	case "delete":
		err := cms.Delete(ctx, markerName, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		return nil
	case "apply":
		fs := flag.NewFlagSet("marker apply", flag.ExitOnError)
		var sets multiFlag
		fs.Var(&sets, "set", "data K=V (repeatable)")
		_ = fs.Parse(args[1:])
		data := map[string]string{}
		for _, s := range sets {
			k, v, ok := strings.Cut(s, "=")
			if !ok {
				return fmt.Errorf("-set %q is not K=V", s)
			}
			data[k] = v
		}
		cm := &corev1.ConfigMap{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{
				Name: markerName, Namespace: markerNamespace,
				Annotations: map[string]string{markerAnnotation: "true"},
				Labels:      map[string]string{"app.kubernetes.io/managed-by": "meshbench-localistio", markerAnnotation: "true"},
			},
			Data: data,
		}
		b, err := json.Marshal(cm)
		if err != nil {
			return err
		}
		force := true
		_, err = cms.Patch(ctx, markerName, types.ApplyPatchType, b, metav1.PatchOptions{FieldManager: fieldManager, Force: &force})
		return err
	}
	return fmt.Errorf("marker: unknown action %q", args[0])
}

// cleanup removes what Istio writes outside its manifests: the istio-ca-root-cert and istio-ca-crl ConfigMaps
// istiod copies into every namespace, the GatewayClasses it creates (if the Gateway API CRDs are still there), and
// the ambient.istio.io/redirection annotation the istio-cni agents put on pods (istio-down removes the capture rules
// from the pods' netns itself: the agents leave them in place on SIGTERM).
func (c *clients) cleanup(ctx context.Context) error {
	nss, err := c.kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	cms := 0
	for _, ns := range nss.Items {
		for _, name := range []string{"istio-ca-root-cert", "istio-ca-crl"} {
			err := c.kube.CoreV1().ConfigMaps(ns.Name).Delete(ctx, name, metav1.DeleteOptions{})
			if err == nil {
				cms++
			} else if !apierrors.IsNotFound(err) {
				return err
			}
		}
	}
	for _, gc := range []string{"istio", "istio-waypoint", "istio-remote", "istio-east-west", "agentgateway", "agentgateway-waypoint"} {
		err := c.dyn.Resource(gwClassGVR).Delete(ctx, gc, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) && !isNoResource(err) {
			return err
		}
	}
	pods, err := c.kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	var unannotated []string
	patch := []byte(`{"metadata":{"annotations":{"ambient.istio.io/redirection":null}}}`)
	for _, p := range pods.Items {
		if _, ok := p.Annotations["ambient.istio.io/redirection"]; !ok {
			continue
		}
		_, err := c.kube.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		unannotated = append(unannotated, p.Namespace+"/"+p.Name)
	}
	fmt.Printf("cleanup: %d istio-ca-* ConfigMaps deleted; ambient.istio.io/redirection removed from %d pods %v\n", cms, len(unannotated), unannotated)
	return nil
}

func isNoResource(err error) bool {
	return apierrors.IsNotFound(err) || strings.Contains(err.Error(), "the server could not find the requested resource")
}

func (c *clients) status(ctx context.Context) error {
	pods, err := c.kube.CoreV1().Pods("istio-system").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, p := range pods.Items {
		ready := 0
		for _, s := range p.Status.ContainerStatuses {
			if s.Ready {
				ready++
			}
		}
		fmt.Printf("pod %-40s %-8s %d/%d node=%s\n", p.Name, p.Status.Phase, ready, len(p.Spec.Containers), p.Spec.NodeName)
	}
	cm, err := c.kube.CoreV1().ConfigMaps(markerNamespace).Get(ctx, markerName, metav1.GetOptions{})
	if err == nil {
		fmt.Printf("marker %s/%s annotations=%v data=%v\n", markerNamespace, markerName, cm.Annotations, cm.Data)
	} else {
		fmt.Printf("marker: %v\n", err)
	}
	return nil
}

// ---------------------------------------------------------------------------------------------------------------

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

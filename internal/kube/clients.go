package kube

import (
	"errors"
	"fmt"
	"io/fs"
	"time"

	istioclient "istio.io/client-go/pkg/clientset/versioned"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/meshbench/meshbench/internal/inputfile"
)

// Clients bundles the clients built from one rest.Config.
type Clients struct {
	// Config is the configuration every client was built from, its per-request timeout included (exec and
	// port-forward built from it are streams and not cut by it).
	Config *rest.Config
	// RequestTimeout is the deadline of every ordinary API request (0: none); see defaultRequestTimeout.
	RequestTimeout time.Duration
	Kube           kubernetes.Interface
	Dynamic        dynamic.Interface
	Istio          istioclient.Interface
	Gateway        gatewayclient.Interface
	Mapper         *restmapper.DeferredDiscoveryRESTMapper
	// Requests counts every API request these clients send (Config carries its transport wrapper).
	Requests *RequestCounter
}

// LoadConfig resolves a rest.Config as kubectl does (explicit path, $KUBECONFIG, ~/.kube/config, in-cluster; context
// "" is the current one). Every kubeconfig file follows inputfile's rule first: client-go reads them whole.
func LoadConfig(kubeconfig, context string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	return loadConfig(rules, context)
}

// loadConfig is LoadConfig with the loading rules given (a test counts their loads). The files are parsed once:
// client-go's deferred loader keeps what RawConfig loaded for ClientConfig, which adds its in-cluster fallback (an
// empty or default config inside a pod: the CronJob of meshbench schedule), so the loader stays client-go's. A load
// that fails is reported from RawConfig: ClientConfig would load again and return the same error.
func loadConfig(rules clientcmd.ClientConfigLoader, context string) (*rest.Config, error) {
	if err := checkKubeconfigs(rules); err != nil {
		return nil, fmt.Errorf("load kubeconfig: %w", err)
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: context}
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	raw, err := loader.RawConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig (use --kubeconfig/--context or $KUBECONFIG): %w", err)
	}
	if err := checkReferencedFiles(raw, context); err != nil {
		return nil, fmt.Errorf("load kubeconfig: %w", err)
	}
	cfg, err := loader.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig (use --kubeconfig/--context or $KUBECONFIG): %w", err)
	}
	// A benchmark issues bursts of reads while waiting and collecting; client-go's default 5 qps throttles them.
	cfg.QPS, cfg.Burst = 50, 100
	cfg.UserAgent = "meshbench"
	return cfg, nil
}

// checkKubeconfigs applies inputfile's rule to each file client-go would read: the explicit path, else every file
// of $KUBECONFIG, else ~/.kube/config (rules' loading precedence). A missing file is left to client-go, which skips
// it (or, named explicitly, says so).
func checkKubeconfigs(rules clientcmd.ConfigAccess) error {
	for _, p := range rules.GetLoadingPrecedence() {
		if _, err := inputfile.Check(p, inputfile.Kubeconfig); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// checkReferencedFiles applies inputfile's rule to the files the chosen context's user and cluster name: client-go
// reads the token file while building the config and the certificate files while building the transport, whole
// and without a bound. The loading rules have made the paths absolute. A missing file is left to client-go.
func checkReferencedFiles(raw clientcmdapi.Config, context string) error {
	if context == "" {
		context = raw.CurrentContext
	}
	kctx, ok := raw.Contexts[context]
	if !ok {
		return nil // client-go names the missing context
	}
	var paths []string
	if c, ok := raw.Clusters[kctx.Cluster]; ok {
		paths = append(paths, c.CertificateAuthority)
	}
	if a, ok := raw.AuthInfos[kctx.AuthInfo]; ok {
		paths = append(paths, a.ClientCertificate, a.ClientKey, a.TokenFile)
	}
	for _, p := range paths {
		if p == "" {
			continue
		}
		if _, err := inputfile.Check(p, inputfile.KubeconfigFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// Options are how clients are built; the zero value is the default.
type Options struct {
	// Kubeconfig and Context select the cluster ("" = kubectl's defaults, see LoadConfig).
	Kubeconfig, Context string
	// RequestTimeout bounds each ordinary API request: 0 means defaultRequestTimeout (30 s), a negative value no
	// bound. Streams (watch, exec, port-forward, logs -f) are never bounded by it. A --request-timeout flag maps here.
	RequestTimeout time.Duration
}

func (o Options) requestTimeout() time.Duration {
	switch {
	case o.RequestTimeout == 0:
		return defaultRequestTimeout
	case o.RequestTimeout < 0:
		return 0
	}
	return o.RequestTimeout
}

// NewClients builds every client meshbench uses from a kubeconfig, with the default request timeout.
func NewClients(kubeconfig, context string) (*Clients, error) {
	return Options{Kubeconfig: kubeconfig, Context: context}.NewClients()
}

// NewClients builds every client meshbench uses from the kubeconfig the options name.
func (o Options) NewClients() (*Clients, error) {
	cfg, err := LoadConfig(o.Kubeconfig, o.Context)
	if err != nil {
		return nil, err
	}
	return o.ClientsForConfig(cfg)
}

// NewClientsForConfig builds every client from a rest.Config, with the default request timeout.
func NewClientsForConfig(cfg *rest.Config) (*Clients, error) {
	return Options{}.ClientsForConfig(cfg)
}

// ClientsForConfig builds every client from a copy of cfg that carries the options' request timeout (Kubeconfig
// and Context are not used).
func (o Options) ClientsForConfig(cfg *rest.Config) (*Clients, error) {
	timeout := o.requestTimeout()
	cfg = withRequestTimeout(cfg, timeout)
	requests := NewRequestCounter()
	cfg.Wrap(requests.Wrap)
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	ic, err := istioclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("istio client: %w", err)
	}
	gc, err := gatewayclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("gateway-api client: %w", err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	return &Clients{Config: cfg, RequestTimeout: timeout, Kube: kc, Dynamic: dc, Istio: ic, Gateway: gc, Mapper: mapper, Requests: requests}, nil
}

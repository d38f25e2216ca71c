package kube

import (
	"fmt"

	istioclient "istio.io/client-go/pkg/clientset/versioned"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"
)

// Clients bundles the clients built from one rest.Config.
type Clients struct {
	Config  *rest.Config
	Kube    kubernetes.Interface
	Dynamic dynamic.Interface
	Istio   istioclient.Interface
	Gateway gatewayclient.Interface
	Mapper  *restmapper.DeferredDiscoveryRESTMapper
}

// LoadConfig resolves a rest.Config the way kubectl does: explicit path, else $KUBECONFIG, else ~/.kube/config,
// else in-cluster; context "" means the current context.
func LoadConfig(kubeconfig, context string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: context}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig (use --kubeconfig/--context or $KUBECONFIG): %w", err)
	}
	// A benchmark issues bursts of reads while waiting and collecting; client-go's default 5 qps throttles them.
	cfg.QPS, cfg.Burst = 50, 100
	cfg.UserAgent = "meshbench"
	return cfg, nil
}

// NewClients builds every client meshbench uses from a kubeconfig.
func NewClients(kubeconfig, context string) (*Clients, error) {
	cfg, err := LoadConfig(kubeconfig, context)
	if err != nil {
		return nil, err
	}
	return NewClientsForConfig(cfg)
}

// NewClientsForConfig builds every client from a rest.Config.
func NewClientsForConfig(cfg *rest.Config) (*Clients, error) {
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
	return &Clients{Config: cfg, Kube: kc, Dynamic: dc, Istio: ic, Gateway: gc, Mapper: mapper}, nil
}

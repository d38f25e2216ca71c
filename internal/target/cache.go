package target

import (
	"context"
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/meshbench/meshbench/internal/kube"
)

// Cache is the informer cache of one deployed app that a case's readiness wait and then its mode verification read:
// its Deployments, StatefulSets and slimmed pods per namespace, and the cluster's namespaces (their labels are part
// of a mode's proof). One list and watch per namespace and kind per case; objects read from it are read only.
type Cache struct {
	// Clock times the re-evaluations of WaitReady and the age of node conditions (nil = the wall clock); set it
	// before WaitReady.
	Clock clock.Clock

	t         Target
	kc        kubernetes.Interface
	factories kube.Factories
	deps      map[string]appslisters.DeploymentNamespaceLister
	stss      map[string]appslisters.StatefulSetNamespaceLister
	pods      map[string]corelisters.PodNamespaceLister
	nss       corelisters.NamespaceLister
	changed   chan struct{}

	once   sync.Once
	cancel context.CancelFunc
}

// NewCache builds the cache of t's objects; nothing is requested before Start. Workloads are cached without a
// selector (a workload named in t need not carry its pods' labels), pods with t.AppSelector.
func NewCache(kc kubernetes.Interface, t Target) *Cache {
	c := &Cache{t: t, kc: kc, deps: map[string]appslisters.DeploymentNamespaceLister{},
		stss: map[string]appslisters.StatefulSetNamespaceLister{}, pods: map[string]corelisters.PodNamespaceLister{},
		changed: make(chan struct{}, 1)}
	h := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.notify() },
		UpdateFunc: func(any, any) { c.notify() },
		DeleteFunc: func(any) { c.notify() },
	}
	for _, ns := range t.Namespaces {
		wf := informers.NewSharedInformerFactoryWithOptions(kc, 0, informers.WithNamespace(ns), informers.WithTransform(kube.StripManagedFields))
		pf := informers.NewSharedInformerFactoryWithOptions(kc, 0, informers.WithNamespace(ns), informers.WithTransform(kube.SlimPod),
			informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = t.AppSelector }))
		if hasKind(t, ns, KindDeployment) {
			inf := wf.Apps().V1().Deployments()
			_, _ = inf.Informer().AddEventHandler(h)
			c.deps[ns] = inf.Lister().Deployments(ns)
		}
		if hasKind(t, ns, KindStatefulSet) {
			inf := wf.Apps().V1().StatefulSets()
			_, _ = inf.Informer().AddEventHandler(h)
			c.stss[ns] = inf.Lister().StatefulSets(ns)
		}
		pinf := pf.Core().V1().Pods()
		_, _ = pinf.Informer().AddEventHandler(h)
		c.pods[ns] = pinf.Lister().Pods(ns)
		c.factories = append(c.factories, wf, pf)
	}
	nf := informers.NewSharedInformerFactoryWithOptions(kc, 0, informers.WithTransform(kube.StripManagedFields))
	ninf := nf.Core().V1().Namespaces()
	_, _ = ninf.Informer().AddEventHandler(h)
	c.nss = ninf.Lister()
	c.factories = append(c.factories, nf)
	return c
}

// notify sends on Changed without blocking: events while nobody reads coalesce into one.
func (c *Cache) notify() {
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// Start runs the informers until ctx ends or Stop is called; a second Start does nothing.
func (c *Cache) Start(ctx context.Context) {
	c.once.Do(func() {
		ctx, c.cancel = context.WithCancel(ctx)
		c.factories.Start(ctx)
	})
}

// Stop ends the informers (their watches close). Safe before Start and more than once.
func (c *Cache) Stop() {
	c.once.Do(func() {}) // a Start after Stop must not start anything
	if c.cancel != nil {
		c.cancel()
	}
}

// Synced waits for every informer's first list: nil, or ctx's cause naming the type not yet listed.
func (c *Cache) Synced(ctx context.Context) error { return c.factories.Synced(ctx) }

// Changed receives after objects of the cache changed (coalesced): a wait reading the cache re-checks then.
func (c *Cache) Changed() <-chan struct{} { return c.changed }

// Target is the app the cache holds.
func (c *Cache) Target() Target { return c.t }

// AppPods returns the cached app pods of namespace ns sorted by name, so that problem lists and proofs come in a
// stable order. The pods are the cache's own (read only): at 5,000 pods a copy per evaluation would allocate
// megabytes of Pod values to read a few fields.
func (c *Cache) AppPods(ns string) []*corev1.Pod {
	l, ok := c.pods[ns]
	if !ok {
		return nil
	}
	out, _ := l.List(labels.Everything()) // a lister's List never fails; the slice is new, its pods are shared
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Namespace returns the cached namespace name (read only).
func (c *Cache) Namespace(name string) (*corev1.Namespace, error) { return c.nss.Get(name) }

func hasKind(t Target, ns, kind string) bool {
	for _, w := range t.Workloads {
		if w.Namespace == ns && w.Kind == kind {
			return true
		}
	}
	return false
}

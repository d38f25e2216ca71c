package hbonenode

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/structpb"

	istiogrpc "istio.io/istio/pilot/pkg/grpc"
	"istio.io/istio/pkg/adsc"
	"istio.io/istio/pkg/backoff"
	pm "istio.io/istio/pkg/model"
	"istio.io/istio/pkg/security"
	"istio.io/istio/pkg/workloadapi"
	wsecurity "istio.io/istio/pkg/workloadapi/security"
	"istio.io/istio/security/pkg/credentialfetcher/plugin"
	"istio.io/istio/security/pkg/nodeagent/caclient"
)

// WDSConfig says how to reach istiod's workload discovery and who the node proxy is there. istiod serves WDS to
// proxies of type ztunnel only, checks that the token's namespace is the node's NAMESPACE (pilot/pkg/xds/auth.go),
// and reads the node id ztunnel~<ip>~<pod>.<ns>~<ns>.svc.cluster.local (ztunnel src/xds/client.rs; pkg/adsc builds
// the same from NodeType, IP, Workload and Namespace).
type WDSConfig struct {
	Address      string // $XDS_ADDRESS
	RootCert     string
	TokenFile    string
	ClusterID    string
	PodName      string
	PodNamespace string
	NodeName     string
	InstanceIP   string
	IstioVersion string // sent as ISTIO_VERSION (else pkg/adsc sends 65536.65536.65536)
}

// WDS keeps Tables in step with istiod over a Delta ADS stream (pkg/adsc), wildcard watches on
// istio.workload.Address and istio.security.Authorization, as ztunnel does (Delta only: istiod's SotW response
// drops removals, pilot/pkg/xds/workload.go Generate).
type WDS struct {
	log     *slog.Logger
	metrics *Metrics
	client  *adsc.Client

	mu      sync.RWMutex
	t       *Tables
	changed chan struct{} // closed and replaced on every change
}

// NewWDS prepares the client; Run connects.
func NewWDS(cfg WDSConfig, t *Tables, m *Metrics, log *slog.Logger) (*WDS, error) {
	w := &WDS{log: log, metrics: m, t: t, changed: make(chan struct{})}
	opts, err := istiogrpc.ClientOptions(nil, &istiogrpc.TLSOptions{RootCert: cfg.RootCert, ServerAddress: cfg.Address})
	if err != nil {
		return nil, fmt.Errorf("XDS TLS options (root %s): %w", cfg.RootCert, err)
	}
	opts = append(opts,
		grpc.WithPerRPCCredentials(caclient.NewDefaultTokenProvider(&security.Options{CredFetcher: plugin.CreateTokenPlugin(cfg.TokenFile)})),
		grpc.WithStreamInterceptor(w.interceptStream))
	meta, err := structpb.NewStruct(map[string]any{
		"NAME": cfg.PodName, "NAMESPACE": cfg.PodNamespace, "INSTANCE_IPS": cfg.InstanceIP, "NODE_NAME": cfg.NodeName,
		"CLUSTER_ID": cfg.ClusterID, "ENABLE_HBONE": "true", "ISTIO_VERSION": cfg.IstioVersion,
	})
	if err != nil {
		return nil, err
	}
	w.client = adsc.NewDeltaWithBackoffPolicy(cfg.Address, &adsc.DeltaADSConfig{Config: adsc.Config{
		ClientName: "wds", NodeType: pm.Ztunnel, IP: cfg.InstanceIP, Workload: cfg.PodName, Namespace: cfg.PodNamespace,
		Meta: meta, GrpcOpts: opts,
	}}, backoff.NewExponentialBackOff(backoff.Option{InitialInterval: 500 * time.Millisecond, MaxInterval: 15 * time.Second}),
		adsc.Register(w.onAddress), adsc.Watch[*workloadapi.Address]("*"),
		adsc.Register(w.onPolicy), adsc.Watch[*wsecurity.Authorization]("*"))
	return w, nil
}

// newLocalWDS serves fixed tables (no istiod): for tests, which change them with Update.
func newLocalWDS(t *Tables, log *slog.Logger) *WDS {
	return &WDS{log: log, t: t, changed: make(chan struct{})}
}

// Run follows istiod until ctx ends, reconnecting with backoff.
func (w *WDS) Run(ctx context.Context) { w.client.Run(ctx) }

// Synced is closed once both watches got their first response.
func (w *WDS) Synced() <-chan struct{} { return w.client.Synced() }

// Read runs f on the tables under a read lock; f must not keep them.
func (w *WDS) Read(f func(*Tables)) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	f(w.t)
}

// Await returns when cond holds on the tables, re-checking after every change, or ctx's error.
func (w *WDS) Await(ctx context.Context, cond func(*Tables) bool) error {
	for {
		w.mu.RLock()
		ok, ch := cond(w.t), w.changed
		w.mu.RUnlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// Update runs f on the tables under the write lock and wakes Await callers.
func (w *WDS) Update(f func(*Tables)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f(w.t)
	close(w.changed)
	w.changed = make(chan struct{})
	if w.metrics != nil {
		nw, ns, np := w.t.Counts()
		w.metrics.xds.WithLabelValues("workload").Set(float64(nw))
		w.metrics.xds.WithLabelValues("service").Set(float64(ns))
		w.metrics.xds.WithLabelValues("authorization").Set(float64(np))
	}
}

func (w *WDS) onAddress(_ adsc.HandlerContext, name, _ string, a *workloadapi.Address, ev adsc.Event) {
	w.Update(func(t *Tables) {
		if ev == adsc.EventDelete {
			t.DeleteAddress(name)
		} else {
			t.PutAddress(name, a)
		}
	})
}

func (w *WDS) onPolicy(_ adsc.HandlerContext, name, _ string, p *wsecurity.Authorization, ev adsc.Event) {
	w.Update(func(t *Tables) {
		if ev == adsc.EventDelete {
			t.DeletePolicy(name)
		} else {
			t.PutPolicy(name, p)
		}
	})
}

// interceptStream fixes pkg/adsc's reconnect: it re-subscribes without initial_resource_versions, and istiod only
// reports removals of resources the client says it holds (pilot/pkg/xds/workload.go GenerateDeltas), so whatever
// was deleted while the stream was down would stay. istiod's first response per type on a new stream is the whole
// world (a request push with no retained versions): it replaces the table instead of being merged into it.
func (w *WDS) interceptStream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string,
	streamer grpc.Streamer, opts ...grpc.CallOption,
) (grpc.ClientStream, error) {
	s, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil || !strings.HasSuffix(method, "/DeltaAggregatedResources") {
		return s, err
	}
	return &resyncStream{ClientStream: s, w: w, seen: map[string]bool{}}, nil
}

type resyncStream struct {
	grpc.ClientStream
	w    *WDS
	seen map[string]bool // type URLs that got their first response on this stream
}

func (s *resyncStream) RecvMsg(m any) error {
	if err := s.ClientStream.RecvMsg(m); err != nil {
		return err
	}
	resp, ok := m.(*discovery.DeltaDiscoveryResponse)
	if !ok || s.seen[resp.GetTypeUrl()] {
		return nil
	}
	s.seen[resp.GetTypeUrl()] = true
	keep := make(map[string]bool, len(resp.GetResources()))
	for _, r := range resp.GetResources() {
		keep[r.GetName()] = true
	}
	s.w.resync(resp.GetTypeUrl(), keep)
	return nil
}

// resync drops every resource of typeURL not in keep (the new stream's first response).
func (w *WDS) resync(typeURL string, keep map[string]bool) {
	var dropped int
	w.Update(func(t *Tables) {
		switch typeURL {
		case pm.AddressType:
			dropped = t.RetainAddresses(keep)
		case pm.WorkloadAuthorizationType:
			dropped = t.RetainPolicies(keep)
		}
	})
	if dropped > 0 {
		w.log.Info("new WDS stream: dropped resources istiod no longer has", "type", typeURL, "dropped", dropped)
	}
}

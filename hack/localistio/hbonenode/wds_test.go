package hbonenode

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	pm "istio.io/istio/pkg/model"
	"istio.io/istio/pkg/workloadapi"
	"istio.io/istio/pkg/workloadapi/security"
)

// scriptedStream replays DeltaDiscoveryResponses, as a gRPC stream would hand them to pkg/adsc.
type scriptedStream struct {
	grpc.ClientStream
	msgs []*discovery.DeltaDiscoveryResponse
}

func (s *scriptedStream) RecvMsg(m any) error {
	if len(s.msgs) == 0 {
		return io.EOF
	}
	proto.Merge(m.(*discovery.DeltaDiscoveryResponse), s.msgs[0])
	s.msgs = s.msgs[1:]
	return nil
}

func deltaResponse(typeURL string, names ...string) *discovery.DeltaDiscoveryResponse {
	r := &discovery.DeltaDiscoveryResponse{TypeUrl: typeURL}
	for _, n := range names {
		r.Resources = append(r.Resources, &discovery.Resource{Name: n})
	}
	return r
}

// TestResyncOnNewStream: what istiod deleted while the stream was down goes at the new stream's first response
// per type, and only then (later responses are deltas).
func TestResyncOnNewStream(t *testing.T) {
	tb := meshTables(t, nil)
	tb.PutPolicy("app/stale", &security.Authorization{Name: "stale", Namespace: "app"})
	tb.PutPolicy("app/kept", &security.Authorization{Name: "kept", Namespace: "app"})
	w := newLocalWDS(tb, slog.New(slog.NewTextHandler(io.Discard, nil)))
	interceptor := grpc.StreamClientInterceptor(w.interceptStream)
	open := func(msgs ...*discovery.DeltaDiscoveryResponse) grpc.ClientStream {
		s, err := interceptor(context.Background(), &grpc.StreamDesc{}, nil,
			"/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources",
			func(context.Context, *grpc.StreamDesc, *grpc.ClientConn, string, ...grpc.CallOption) (grpc.ClientStream, error) {
				return &scriptedStream{msgs: msgs}, nil
			})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	drain := func(s grpc.ClientStream) {
		for {
			if err := s.RecvMsg(&discovery.DeltaDiscoveryResponse{}); err != nil {
				return
			}
		}
	}
	drain(open(
		deltaResponse(pm.AddressType, svcKey, "Kubernetes//Pod/app/server-b"),
		deltaResponse(pm.WorkloadAuthorizationType, "app/kept"),
		// a later delta on the same stream names one resource: nothing else may go
		deltaResponse(pm.AddressType, "Kubernetes//Pod/app/server-b"),
	))
	w.Read(func(tb *Tables) {
		if nw, ns, np := tb.Counts(); nw != 1 || ns != 1 || np != 1 {
			t.Errorf("after the first stream: %d workloads, %d services, %d policies; want 1, 1, 1", nw, ns, np)
		}
		if tb.WorkloadByName("app", "server-b") == nil || tb.policies["app/kept"] == nil {
			t.Error("kept resources missing: server-b or app/kept")
		}
	})
	// A new stream starts over.
	drain(open(deltaResponse(pm.AddressType)))
	w.Read(func(tb *Tables) {
		if nw, ns, np := tb.Counts(); nw != 0 || ns != 0 || np != 1 {
			t.Errorf("after an empty world on a new stream: %d workloads, %d services, %d policies; want 0, 0, 1", nw, ns, np)
		}
	})
	// Other gRPC methods pass untouched.
	s, err := interceptor(context.Background(), &grpc.StreamDesc{}, nil, "/other.Service/Stream",
		func(context.Context, *grpc.StreamDesc, *grpc.ClientConn, string, ...grpc.CallOption) (grpc.ClientStream, error) {
			return &scriptedStream{}, nil
		})
	if _, ok := s.(*scriptedStream); err != nil || !ok {
		t.Errorf("other methods wrapped: %T, %v", s, err)
	}
}

func TestAwaitWakesOnUpdate(t *testing.T) {
	w := newLocalWDS(NewTables("cluster.local"), slog.New(slog.NewTextHandler(io.Discard, nil)))
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		done <- w.Await(ctx, func(tb *Tables) bool { return tb.WorkloadByName("app", "late") != nil })
	}()
	time.Sleep(20 * time.Millisecond)
	name, a := pod("app", "late", "10.244.0.99", workloadapi.TunnelProtocol_HBONE, "", nil)
	w.Update(func(tb *Tables) { tb.PutAddress(name, a) })
	if err := <-done; err != nil {
		t.Fatalf("Await: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := w.Await(ctx, func(*Tables) bool { return false }); err == nil {
		t.Fatal("Await of a condition that never holds returned nil")
	}
}

package kube

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/remotecommand"
	"k8s.io/client-go/rest"
	"k8s.io/streaming/pkg/httpstream/wsstream"
)

// hangingAPIServer answers like an API server whose PATCH hangs until the client gives up, whose watch of pods
// sends one event only after `after` and then stays open, and whose pods/exec (WebSocket, remotecommand v5 as in
// k8s.io/client-go tools/remotecommand/websocket_test.go at v0.37.2) prints "done" only after `after`.
func hangingAPIServer(t *testing.T, after time.Duration) *httptest.Server {
	t.Helper()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPatch:
			select { // hung: only the client's deadline (or the end of the test) ends it
			case <-r.Context().Done():
			case <-release:
			}
		case strings.HasSuffix(r.URL.Path, "/exec"):
			conn := wsstream.NewConn(map[string]wsstream.ChannelProtocolConfig{
				remotecommand.StreamProtocolV5Name: {Binary: true, Channels: []wsstream.ChannelType{
					wsstream.IgnoreChannel, wsstream.WriteChannel, wsstream.WriteChannel, wsstream.WriteChannel, wsstream.ReadChannel}},
			})
			_, streams, err := conn.Open(w, r)
			if err != nil {
				t.Errorf("exec upgrade: %v", err)
				return
			}
			defer conn.Close()
			_, _ = streams[remotecommand.StreamStdOut].Write([]byte{}) // the stream is established
			time.Sleep(after)
			_, _ = streams[remotecommand.StreamStdOut].Write([]byte("done"))
			st, _ := json.Marshal(metav1.Status{Status: metav1.StatusSuccess})
			_, _ = streams[remotecommand.StreamErr].Write(st)
		case r.URL.Query().Get("watch") == "true":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			select {
			case <-time.After(after):
			case <-r.Context().Done():
				return
			}
			pod, _ := json.Marshal(corev1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}})
			_, _ = w.Write([]byte(`{"type":"ADDED","object":` + string(pod) + "}\n"))
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // first: Close waits for the handlers
	return srv
}

// A hung PATCH fails after the request timeout; a watch and an exec that outlive it are not cut.
func TestRequestTimeout(t *testing.T) {
	t.Parallel()
	const timeout = 300 * time.Millisecond
	srv := hangingAPIServer(t, 3*timeout)
	cl, err := Options{RequestTimeout: timeout}.ClientsForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if cl.RequestTimeout != timeout {
		t.Errorf("Clients.RequestTimeout = %v, want %v", cl.RequestTimeout, timeout)
	}
	// The test's own context only guards against a hang of the test itself.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel) // after the parallel subtests

	t.Run("hung patch fails", func(t *testing.T) {
		t.Parallel()
		_, err := cl.Kube.CoreV1().Pods("ns").Patch(ctx, "p", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Patch = %v, want the request deadline (context.DeadlineExceeded)", err)
		}
		if ctx.Err() != nil {
			t.Fatal("the patch was ended by the test's guard, not by the request timeout")
		}
	})
	t.Run("watch not cut", func(t *testing.T) {
		t.Parallel()
		w, err := cl.Kube.CoreV1().Pods("ns").Watch(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("Watch: %v", err)
		}
		defer w.Stop()
		ev, ok := <-w.ResultChan()
		if !ok {
			t.Fatal("the watch closed before its event (cut by the request timeout?)")
		}
		if p, _ := ev.Object.(*corev1.Pod); p == nil || p.Name != "p" {
			t.Fatalf("event %v %#v, want pod p", ev.Type, ev.Object)
		}
	})
	t.Run("exec not cut", func(t *testing.T) {
		t.Parallel()
		out, _, err := PodExecer{Config: cl.Config, Kube: cl.Kube}.Exec(ctx, "ns", "p", "c", []string{"sleep"}, nil)
		if err != nil || string(out) != "done" {
			t.Fatalf("Exec = %q, %v; want \"done\" after the stream outlived the request timeout", out, err)
		}
	})
	t.Run("a negative timeout is none", func(t *testing.T) {
		t.Parallel()
		cl, err := Options{RequestTimeout: -1}.ClientsForConfig(&rest.Config{Host: srv.URL})
		if err != nil || cl.RequestTimeout != 0 {
			t.Fatalf("RequestTimeout %v, %v", cl.RequestTimeout, err)
		}
		pctx, cancel := context.WithTimeout(ctx, 3*timeout)
		defer cancel()
		_, err = cl.Kube.CoreV1().Pods("ns").Patch(pctx, "p", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{})
		if !errors.Is(err, context.DeadlineExceeded) || pctx.Err() == nil {
			t.Fatalf("Patch = %v, want it to run until the caller's own deadline", err)
		}
	})
	if (Options{}).requestTimeout() != defaultRequestTimeout {
		t.Errorf("the zero Options must give defaultRequestTimeout")
	}
}

func TestStreaming(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		method, url string
		header      http.Header
		want        bool
	}{
		{"GET", "/api/v1/namespaces/ns/pods?watch=true", nil, true},
		{"GET", "/apis/apps/v1/deployments?watch=1&resourceVersion=5", nil, true},
		{"GET", "/api/v1/namespaces/ns/pods/p/log?follow=true&container=c", nil, true},
		{"GET", "/api/v1/namespaces/ns/pods/p/exec?command=ls&stdout=true", nil, true},
		{"POST", "/api/v1/namespaces/ns/pods/p/portforward", nil, true},
		{"POST", "/api/v1/namespaces/ns/pods/p/attach", http.Header{"Connection": {"Upgrade"}, "Upgrade": {"SPDY/3.1"}}, true},
		{"GET", "/api/v1/namespaces/ns/pods", nil, false},
		{"GET", "/api/v1/namespaces/ns/pods?watch=false", nil, false},
		{"GET", "/api/v1/namespaces/ns/pods/p/log?container=c", nil, false},
		{"PATCH", "/apis/apps/v1/namespaces/ns/deployments/exec", nil, false},
		{"GET", "/api/v1/namespaces/ns/services/http:prom:9090/proxy/api/v1/query", nil, false},
		{"GET", "/api/v1/namespaces/ns/pods/p:8080/proxy/exec", nil, false},
	} {
		u, err := url.Parse("https://k8s.example" + tc.url)
		if err != nil {
			t.Fatal(err)
		}
		req := &http.Request{Method: tc.method, URL: u, Header: tc.header}
		if req.Header == nil {
			req.Header = http.Header{}
		}
		if got := streaming(req); got != tc.want {
			t.Errorf("streaming(%s %s) = %v, want %v", tc.method, tc.url, got, tc.want)
		}
	}
}

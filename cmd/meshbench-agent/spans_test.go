package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/spansink"
)

func TestSpansServesAndStops(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	addrc := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- spansMain(ctx, []string{"--listen", "127.0.0.1:0"}, func(a net.Addr) { addrc <- a }) }()
	var base string
	select {
	case a := <-addrc:
		base = "http://" + a.String()
	case err := <-done:
		t.Fatalf("spans returned before listening: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("spans did not start listening")
	}

	const body = `[{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","id":"00f067aa0ba902b7","name":"productpage.default.svc.cluster.local:9080/*","timestamp":1718000000123456,"duration":2345,"kind":"SERVER","localEndpoint":{"serviceName":"productpage.default","ipv4":"10.244.1.7","port":0},"tags":{"component":"proxy"}},
{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","parentId":"00f067aa0ba902b7","id":"53995c3f42cd8ad8","name":"reviews.default.svc.cluster.local:9080/*","timestamp":1718000000124001,"duration":1210,"kind":"CLIENT","localEndpoint":{"serviceName":"productpage.default","ipv4":"10.244.1.7","port":0},"tags":{"component":"proxy"}}]`
	tests := []struct {
		name   string
		method string
		path   string
		body   string
		want   int
	}{
		{"healthz", http.MethodGet, "/healthz", "", http.StatusOK},
		{"report", http.MethodPost, spansink.SpansPath, body, http.StatusAccepted},
		{"bad report", http.MethodPost, spansink.SpansPath, `{}`, http.StatusBadRequest},
		{"other path", http.MethodGet, "/", "", http.StatusNotFound},
	}
	for _, tt := range tests { // in order, on one server: the counts below add them up
		req, err := http.NewRequestWithContext(t.Context(), tt.method, base+tt.path, strings.NewReader(tt.body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("%s: status %d, want %d", tt.name, resp.StatusCode, tt.want)
		}
	}

	resp, err := http.Get(base + spansink.CountsPath)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	got, err := spansink.ParseCounts(b)
	if err != nil {
		t.Fatal(err)
	}
	if want := (spansink.Counts{Spans: 2, Roots: 1, Reports: 1, Rejected: 1}); got != want {
		t.Errorf("counts = %+v, want %+v", got, want)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("spans returned %v after cancel, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("spans did not stop after cancel")
	}
}

func TestSpansFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"extra argument", []string{"extra"}, "unexpected arguments"},
		{"unknown flag", []string{"--port", "1"}, "flag provided but not defined"},
		{"bad address", []string{"--listen", "127.0.0.1:notaport"}, "listen"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := spansMain(t.Context(), tt.args, nil)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("spans %q = %v, want an error containing %q", tt.args, err, tt.wantErr)
			}
		})
	}
}

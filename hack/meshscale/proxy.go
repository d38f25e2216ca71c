package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"
)

// QueryLog is a reverse proxy in front of Prometheus that notes when each API request (query, query_range,
// series, status, ...) passed: meshbench records how long collection took, not how many queries it sent.
type QueryLog struct {
	mu    sync.Mutex
	times []time.Time
}

// Times are the requests' times so far.
func (q *QueryLog) Times() []time.Time {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]time.Time(nil), q.times...)
}

// Serve proxies addr to upstream until ctx ends and returns the proxy's URL.
func (q *QueryLog) Serve(ctx context.Context, addr, upstream string) (string, error) {
	u, err := url.Parse(upstream)
	if err != nil {
		return "", fmt.Errorf("prometheus url: %w", err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/api/v1/") {
			q.mu.Lock()
			q.times = append(q.times, time.Now())
			q.mu.Unlock()
		}
		rp.ServeHTTP(w, r)
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("query proxy listen: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	go func() { <-ctx.Done(); _ = srv.Close() }()
	return "http://" + ln.Addr().String(), nil
}

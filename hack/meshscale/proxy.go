package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"
)

// QueryLog is a reverse proxy in front of Prometheus that notes when each API request (query, query_range,
// series, status, ...) passed and how long Prometheus took to answer it: meshbench records how long collection took,
// not how many queries it sent nor how much of that time was Prometheus'.
type QueryLog struct {
	mu   sync.Mutex
	reqs []Request
}

// Request is one proxied API request.
type Request struct {
	At       time.Time     `json:"at"`
	Took     time.Duration `json:"took"`
	Path     string        `json:"path"`
	Method   string        `json:"method"`
	Bytes    int64         `json:"bytes"` // the request body (a POSTed query) or, for GET, the URL's query string
	Response int           `json:"status"`
}

// Requests are the proxied API requests so far, in the order they ended.
func (q *QueryLog) Requests() []Request {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]Request(nil), q.reqs...)
}

// statusWriter keeps the status code the proxy answered with.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

// Times are the times the requests so far came in (Requests' At).
func (q *QueryLog) Times() []time.Time {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make([]time.Time, len(q.reqs))
	for i, r := range q.reqs {
		out[i] = r.At
	}
	return out
}

// Serve proxies addr to upstream until ctx ends and returns the proxy's URL.
func (q *QueryLog) Serve(ctx context.Context, addr, upstream string) (string, error) {
	u, err := url.Parse(upstream)
	if err != nil {
		return "", fmt.Errorf("prometheus url: %w", err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/api/v1/") {
			rp.ServeHTTP(w, r)
			return
		}
		at := time.Now()
		size := r.ContentLength
		if r.Method == http.MethodGet {
			size = int64(len(r.URL.RawQuery))
		}
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		rp.ServeHTTP(sw, r)
		q.mu.Lock()
		q.reqs = append(q.reqs, Request{At: at, Took: time.Since(at), Path: r.URL.Path, Method: r.Method, Bytes: size, Response: sw.code})
		q.mu.Unlock()
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

// writeRequests writes reqs one JSON object per line: which of a collection's seconds were Prometheus answering.
func writeRequests(path string, reqs []Request) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	for _, r := range reqs {
		if err := enc.Encode(r); err != nil {
			_ = f.Close()
			return err
		}
	}
	return f.Close()
}

package kube

import (
	"context"
	"io"
	"net/http"
	"strings"
	"time"

	"k8s.io/client-go/rest"
)

// defaultRequestTimeout bounds every ordinary API request, its body included, so a hung PATCH fails instead of
// waiting as long as the run; streams (watch, exec, port-forward, logs -f) live as long as their context.
const defaultRequestTimeout = 30 * time.Second

// withRequestTimeout returns a copy of cfg whose transport gives every non-streaming request a deadline of d (d <= 0:
// unchanged) through the request's context, so a shorter deadline of the caller still wins.
func withRequestTimeout(cfg *rest.Config, d time.Duration) *rest.Config {
	out := rest.CopyConfig(cfg)
	if d > 0 {
		out.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &timeoutRoundTripper{next: rt, timeout: d} })
	}
	return out
}

// timeoutRoundTripper applies the per-request deadline.
type timeoutRoundTripper struct {
	next    http.RoundTripper
	timeout time.Duration
}

func (t *timeoutRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if streaming(req) {
		return t.next.RoundTrip(req)
	}
	ctx, cancel := context.WithTimeout(req.Context(), t.timeout)
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	// The deadline covers reading the body; closing it releases the timer.
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// WrappedRoundTripper lets client-go's debugging and error paths see the transport underneath.
func (t *timeoutRoundTripper) WrappedRoundTripper() http.RoundTripper { return t.next }

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// streaming reports whether req is a long-lived stream a per-request deadline must not cut: a watch, a followed log,
// an upgrade, or the exec, attach and portforward subresources (the WebSocket executor upgrades below the
// RoundTripper). It is pure.
func streaming(req *http.Request) bool {
	q := req.URL.Query()
	if isTrue(q.Get("watch")) || isTrue(q.Get("follow")) {
		return true
	}
	if strings.EqualFold(req.Header.Get("Connection"), "upgrade") || req.Header.Get("Upgrade") != "" {
		return true
	}
	// .../namespaces/<ns>/pods/<name>/<subresource>, the subresource last (a proxy path may contain anything).
	seg := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	if n := len(seg); n >= 3 && seg[n-3] == "pods" {
		switch seg[n-1] {
		case "exec", "attach", "portforward":
			return true
		}
	}
	return false
}

// isTrue is the apiserver's reading of a boolean query parameter (strconv.ParseBool on "true", "1", ...).
func isTrue(v string) bool {
	switch strings.ToLower(v) {
	case "1", "t", "true":
		return true
	}
	return false
}

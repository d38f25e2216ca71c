package kube

import (
	"maps"
	"net/http"
	"strings"
	"sync"
)

// RequestCounter counts the API requests of every client built from one rest.Config, by verb and resource, on the
// client side: what meshbench itself asks of the API server (a run's cost to the control plane), independent of the
// API server's own metrics, which a managed cluster may not expose. Safe for concurrent use.
type RequestCounter struct {
	mu    sync.Mutex
	total int64
	by    map[string]int64
}

// NewRequestCounter is an empty counter.
func NewRequestCounter() *RequestCounter { return &RequestCounter{by: map[string]int64{}} }

// Wrap is a rest.Config.Wrap transport wrapper: every request that reaches the transport is counted once when it is
// sent (a watch when it opens; client-go's retries are separate requests and count again).
func (c *RequestCounter) Wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		c.add(VerbResource(req.Method, req.URL.Path, req.URL.Query().Get("watch")))
		return rt.RoundTrip(req)
	})
}

func (c *RequestCounter) add(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total++
	c.by[key]++
}

// Counts returns the totals so far: all requests and requests per "verb resource" key (see VerbResource). The map is
// a copy.
func (c *RequestCounter) Counts() (int64, map[string]int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total, maps.Clone(c.by)
}

// CountsSince is what was counted after an earlier Counts (a case's share of a run's requests). It is pure.
func CountsSince(total int64, by map[string]int64, prevTotal int64, prevBy map[string]int64) (int64, map[string]int64) {
	out := map[string]int64{}
	for k, v := range by {
		if d := v - prevBy[k]; d > 0 {
			out[k] = d
		}
	}
	return total - prevTotal, out
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// VerbResource names a request as the API server's audit log does: the verb and the resource, qualified by its
// group and followed by its subresource ("list pods", "patch deployments.apps", "create pods/exec"), by the path
// grammar of k8s.io/apiserver pkg/endpoints/request/requestinfo.go; anything else is "get /<first segment>". Pure.
func VerbResource(method, path, watch string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	var group string
	var rest []string
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		rest = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		group, rest = parts[1], parts[3:]
	default:
		return strings.ToLower(method) + " /" + parts[0]
	}
	if len(rest) >= 1 && rest[0] == "watch" { // the deprecated /watch/ prefix
		rest, watch = rest[1:], "true"
	}
	// namespaces/NS/RESOURCE...: a namespaced resource; namespaces[/NAME[/status|finalize]]: the namespace object
	// (requestinfo.go's namespaceSubresources).
	if len(rest) >= 3 && rest[0] == "namespaces" && rest[2] != "status" && rest[2] != "finalize" {
		rest = rest[2:]
	}
	if len(rest) == 0 {
		return strings.ToLower(method) + " /" + parts[0]
	}
	resource := rest[0]
	if group != "" {
		resource += "." + group
	}
	named := len(rest) >= 2
	if len(rest) >= 3 {
		resource += "/" + rest[2]
	}
	verb := strings.ToLower(method)
	switch method {
	case http.MethodGet, http.MethodHead:
		switch {
		case watch == "true" || watch == "1":
			verb = "watch"
		case named:
			verb = "get"
		default:
			verb = "list"
		}
	case http.MethodPost:
		verb = "create"
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		verb = "patch"
	case http.MethodDelete:
		if !named {
			verb = "deletecollection"
		} else {
			verb = "delete"
		}
	}
	return verb + " " + resource
}

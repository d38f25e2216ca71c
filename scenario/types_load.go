package scenario

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// LoadSpec is how the app is driven.
type LoadSpec struct {
	// QPS levels, each a number of requests per second from 0.1 to 10000000, or "max". Each level is a separate case.
	QPS []QPS `json:"qps,omitempty" mb:"defaulted"`
	// Connections per client pod (fortio -c).
	Connections int `json:"connections,omitempty" mb:"defaulted"`
	// PayloadBytes is the request body size (0 = GET without body).
	PayloadBytes int `json:"payloadBytes,omitempty"`
	// Path is the URL path requested on the entry service; default "/" (fortio-chain) or "/home" (bank-of-anthos).
	Path string `json:"path,omitempty" mb:"defaulted"`
	// Duration is the whole load run per level; default warmUp + trimStart + windows.load + trimEnd.
	Duration Duration `json:"duration,omitzero" mb:"defaulted"`
	// WarmUp runs load before the measured part begins (connections, JIT, caches).
	WarmUp Duration `json:"warmUp,omitzero" mb:"defaulted"`
	// TrimStart and TrimEnd are cut from the load run around the measured window.
	TrimStart Duration `json:"trimStart,omitzero"`
	TrimEnd   Duration `json:"trimEnd,omitzero" mb:"defaulted"`
	// Clients is the number of fortio client pods; the QPS level is split evenly between them.
	Clients int `json:"clients,omitempty" mb:"defaulted"`
	// Jitter adds ±10% jitter to request intervals (fortio -jitter).
	Jitter bool `json:"jitter,omitempty"`
	// Uniform spreads requests uniformly across connections (fortio -uniform).
	Uniform bool `json:"uniform,omitempty"`
	// Targets are where load goes for apps "manifests" and "existing" (required there; the catalog apps send load
	// to their entry service). The QPS level (each target at max for "max") and every client's connections (at least
	// one per target) are split between them by weight; latency, QPS and errors are recorded per target (label
	// target) and over all.
	Targets []LoadTarget `json:"targets,omitempty"`
	// Login runs once per topology and mode before load, from inside the mesh; what it captures is sent with every
	// load request (bank-of-anthos' login is one instance of it).
	Login *Login `json:"login,omitempty"`
}

// Load target protocols: fortio's HTTP client, its gRPC health/ping client, its TCP echo client.
const (
	ProtocolHTTP = "http"
	ProtocolGRPC = "grpc"
	ProtocolTCP  = "tcp"
)

// LoadTarget is one destination of load. Either Service (with Port) or URL is set.
type LoadTarget struct {
	// Name labels the target's samples; default the service name (or the URL's host).
	Name string `json:"name,omitempty" mb:"defaulted"`
	// Service is a Service of the app; meshbench finds the namespace it was placed in (existing: the first of
	// existing.namespaces that has it, unless Namespace is set).
	Service string `json:"service,omitempty"`
	// Namespace pins the Service's namespace (app existing only: the deployed namespace's name).
	Namespace string `json:"namespace,omitempty"`
	// Port of the Service (number); default 80 (http), 8079 (grpc, fortio's), 8078 (tcp, fortio's echo).
	Port int `json:"port,omitempty" mb:"defaulted"`
	// Path of HTTP requests; default load.path.
	Path string `json:"path,omitempty" mb:"defaulted"`
	// URL is a full URL instead of Service/Port/Path (http://, https://; grpc targets host:port; tcp://host:port).
	URL string `json:"url,omitempty"`
	// Protocol is http (default), grpc (fortio's client of the standard gRPC health check, grpc.health.v1, which a
	// fortio server answers; headers go as metadata, payloadBytes is not sent) or tcp (fortio's echo client: each
	// request, payloadBytes or 24 bytes, must come back unchanged; no headers).
	Protocol string `json:"protocol,omitempty" mb:"defaulted"`
	// Weight is this target's share of the load (relative; default 1).
	Weight int `json:"weight,omitempty" mb:"defaulted"`
	// Headers are added to this target's requests (besides what login captured).
	Headers map[string]string `json:"headers,omitempty"`
}

// Login is a request whose response supplies a cookie or header that load requests then carry.
type Login struct {
	// Service, Port, Path or URL address the login request as in a load target (http only).
	Service   string `json:"service,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Port      int    `json:"port,omitempty" mb:"defaulted"`
	Path      string `json:"path,omitempty"`
	URL       string `json:"url,omitempty"`
	// Method is GET (default) or POST.
	Method string `json:"method,omitempty" mb:"defaulted"`
	// Body of a POST; ContentType its type (default application/x-www-form-urlencoded).
	Body        string `json:"body,omitempty"`
	ContentType string `json:"contentType,omitempty"`
	// Headers of the login request.
	Headers map[string]string `json:"headers,omitempty"`
	// Capture says which part of the response holds the credential: "cookie:<name>" (a Set-Cookie),
	// "header:<name>" (a response header) or "json:<field>" (a string field of a JSON body; dots descend into objects: "json:data.token"). A 2xx answer
	// without it fails the login at once; a 3xx with it succeeds (form logins redirect, and the agent does not follow);
	// every other answer, or none, is retried until Timeout.
	Capture string `json:"capture"`
	// SetHeader is the load request header that carries it; default "Cookie".
	SetHeader string `json:"setHeader,omitempty" mb:"defaulted"`
	// Value is the header's value with {value} replaced by what was captured; default "<cookie name>={value}" for
	// a cookie capture and SetHeader Cookie, else "{value}".
	Value string `json:"value,omitempty" mb:"defaulted"`
	// Timeout bounds the retries until the login succeeds (the app's backends may still be starting).
	Timeout Duration `json:"timeout,omitzero" mb:"defaulted"`
}

// QPS is a load level: a positive number, or Max (encoded "max").
type QPS struct {
	Value float64
	Max   bool
}

// MaxQPS is the "max" level.
var MaxQPS = QPS{Max: true}

// String renders "max" or the number without trailing zeros.
func (q QPS) String() string {
	if q.Max {
		return "max"
	}
	return strconv.FormatFloat(q.Value, 'f', -1, 64)
}

// MarshalJSON encodes "max" or a number.
func (q QPS) MarshalJSON() ([]byte, error) {
	if q.Max {
		return []byte(`"max"`), nil
	}
	return json.Marshal(q.Value)
}

// UnmarshalJSON accepts a number, "max", or a numeric string. Range checks are Validate's job, so that every
// problem is reported together.
func (q *QPS) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		if strings.EqualFold(strings.TrimSpace(s), "max") {
			*q = MaxQPS
			return nil
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return fmt.Errorf(`qps %q: must be a number > 0 or "max"`, s)
		}
		*q = QPS{Value: v}
		return nil
	}
	var v float64
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf(`qps %s: must be a number > 0 or "max"`, string(b))
	}
	*q = QPS{Value: v}
	return nil
}

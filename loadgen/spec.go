package loadgen

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// MaxQPS is the per-client QPS that means "as fast as possible". fortio treats 0 as its default of 8 qps, so max is
// always sent as a negative number.
const MaxQPS = -1

// Load target protocols (scenario.ProtocolHTTP, ProtocolGRPC, ProtocolTCP).
const (
	ProtocolHTTP = "http"
	ProtocolGRPC = "grpc"
	ProtocolTCP  = "tcp"
)

// LoadTarget is one destination of a load run.
type LoadTarget struct {
	// Name labels the target's samples (label "target") when a run has more than one target.
	Name string
	// URL is http(s)://host:port/path (http), host:port or grpc://host:port (grpc), tcp://host:port (tcp).
	URL string
	// Protocol is ProtocolHTTP (default), ProtocolGRPC (the standard gRPC health check, which fortio's own server
	// also answers) or ProtocolTCP (fortio's echo client: every request must come back unchanged).
	Protocol string
	// Weight is the target's relative share of the QPS and of every client's connections (>= 1).
	Weight int
	// Headers are sent with this target's requests on top of Spec.Headers (gRPC: as metadata; tcp has none).
	Headers map[string]string
}

// Spec is one load run across every client.
type Spec struct {
	// URL is requested by every client when Targets is empty (one unnamed http target).
	URL string
	// Targets share the load by weight: the QPS (unless max, where every target runs at max) and every client's
	// connections are split between them, and every client runs one fortio run per target at the same time.
	Targets []LoadTarget
	// QPS is the total target rate across clients; <= 0 means max.
	QPS float64
	// Connections per client (fortio -c; one connection per fortio thread with the fast client).
	Connections int
	// Duration of the measured phase. Its exact start and end are reported.
	Duration time.Duration
	// WarmUp runs the same load before the measured phase; its results are discarded.
	WarmUp time.Duration
	// CoolDown keeps the load running after the measured phase (so resource samples at the window end are taken
	// under load); its results are discarded.
	CoolDown time.Duration
	// PayloadBytes > 0 sends a POST body of that size.
	PayloadBytes int
	// Headers are added to every request.
	Headers map[string]string
	// Jitter and Uniform are fortio's -jitter and -uniform.
	Jitter, Uniform bool
	// NoKeepAlive opens a new connection for every http request (fortio -keepalive=false); HTTP2 sends http
	// requests as cleartext HTTP/2 with prior knowledge (fortio -h2, its standard client). grpc and tcp targets are
	// sent as they are.
	NoKeepAlive, HTTP2 bool
	// PerSecond keeps a per-second record of the measured phase (Measured.Seconds).
	PerSecond bool
	// Clients is the number of client processes; the QPS is split evenly between them.
	Clients int
}

// Max reports whether the spec asks for max QPS.
func (s Spec) Max() bool { return s.QPS <= 0 }

// Validate checks the spec.
func (s Spec) Validate() error {
	var errs []error
	if s.URL == "" && len(s.Targets) == 0 {
		errs = append(errs, errors.New("url is empty and there are no targets"))
	}
	if s.URL != "" && len(s.Targets) > 0 {
		errs = append(errs, errors.New("url and targets are both set: set one of them"))
	}
	names := map[string]bool{}
	for i, t := range s.Targets {
		if t.URL == "" {
			errs = append(errs, fmt.Errorf("targets[%d] (%s): url is empty", i, t.Name))
		}
		switch t.Protocol {
		case "", ProtocolHTTP, ProtocolGRPC, ProtocolTCP:
		default:
			errs = append(errs, fmt.Errorf("targets[%d] (%s): protocol %q is not http, grpc or tcp", i, t.Name, t.Protocol))
		}
		if t.Weight < 1 {
			errs = append(errs, fmt.Errorf("targets[%d] (%s): weight must be >= 1 (got %d)", i, t.Name, t.Weight))
		}
		if len(s.Targets) > 1 && (t.Name == "" || names[t.Name]) {
			errs = append(errs, fmt.Errorf("targets[%d]: name %q is empty or not unique (it labels the target's samples)", i, t.Name))
		}
		names[t.Name] = true
		for k := range t.Headers {
			if k == "" || strings.ContainsAny(k, ":\r\n") {
				errs = append(errs, fmt.Errorf("targets[%d] (%s): header name %q is not valid", i, t.Name, k))
			}
		}
	}
	if s.Connections < 1 {
		errs = append(errs, fmt.Errorf("connections must be >= 1 (got %d)", s.Connections))
	}
	if s.Duration <= 0 {
		errs = append(errs, fmt.Errorf("duration must be > 0 (got %s)", s.Duration))
	}
	if s.WarmUp < 0 || s.CoolDown < 0 {
		errs = append(errs, errors.New("warm-up and cool-down must not be negative"))
	}
	if s.Clients < 1 {
		errs = append(errs, fmt.Errorf("clients must be >= 1 (got %d)", s.Clients))
	}
	if s.PayloadBytes < 0 {
		errs = append(errs, fmt.Errorf("payload bytes must not be negative (got %d)", s.PayloadBytes))
	}
	for k := range s.Headers {
		if k == "" || strings.ContainsAny(k, ":\r\n") {
			errs = append(errs, fmt.Errorf("header name %q is not valid", k))
		}
	}
	return errors.Join(errs...)
}

// ClientSpec is what one fortio client does against one target.
type ClientSpec struct {
	// Target names the target (empty with a single unnamed target); Protocol is ProtocolHTTP, ProtocolGRPC or
	// ProtocolTCP.
	Target       string
	Protocol     string
	URL          string
	QPS          float64 // this client's rate; MaxQPS (or any value <= 0) = max
	Connections  int
	Duration     time.Duration
	WarmUp       time.Duration
	CoolDown     time.Duration
	PayloadBytes int
	Headers      []string // "Name: value", in a stable order
	Jitter       bool
	Uniform      bool
	NoKeepAlive  bool // http only
	HTTP2        bool // http only
	PerSecond    bool
}

// targets is Targets, or the one target URL stands for.
func (s Spec) targets() []LoadTarget {
	if len(s.Targets) > 0 {
		return s.Targets
	}
	return []LoadTarget{{URL: s.URL, Protocol: ProtocolHTTP, Weight: 1}}
}

// TargetQPS is each target's share of the total QPS by weight (MaxQPS for every target when the spec asks for max).
func (s Spec) TargetQPS() []float64 {
	ts := s.targets()
	q, _ := split(s.QPS, 1, weights(ts))
	return q
}

func weights(ts []LoadTarget) []int {
	w := make([]int, len(ts))
	for i, t := range ts {
		w[i] = t.Weight
	}
	return w
}

// split divides a total QPS and a connection count between targets by weight: QPS <= 0 gives every target MaxQPS;
// connections by largest remainder, at least one per target (weights < 1 count as 1). It is pure.
func split(qps float64, connections int, weights []int) ([]float64, []int) {
	n := len(weights)
	qs, cs := make([]float64, n), make([]int, n)
	if n == 0 {
		return qs, cs
	}
	total := 0
	for _, w := range weights {
		total += max(w, 1)
	}
	ideal := make([]float64, n)
	sum := 0
	for i, w := range weights {
		share := float64(max(w, 1)) / float64(total)
		qs[i] = MaxQPS
		if qps > 0 {
			qs[i] = qps * share
		}
		ideal[i] = float64(connections) * share
		cs[i] = max(int(ideal[i]), 1)
		sum += cs[i]
	}
	want := max(connections, n)
	// Hand out what flooring left, most under-served first; take back what the minimum of one added, most
	// over-served first (ties: the earlier target is served first and taken from last).
	for sum < want {
		best := 0
		for i := range cs {
			if ideal[i]-float64(cs[i]) > ideal[best]-float64(cs[best]) {
				best = i
			}
		}
		cs[best]++
		sum++
	}
	for sum > want {
		best := -1
		for i := range cs {
			if cs[i] > 1 && (best < 0 || ideal[i]-float64(cs[i]) <= ideal[best]-float64(cs[best])) {
				best = i
			}
		}
		cs[best]--
		sum--
	}
	return qs, cs
}

// ClientSpecs splits the spec over its clients and targets: [client][target]. Each target gets its weight's share of
// the QPS (max stays max), divided evenly between the clients, and its weight's share of every client's connections
// (see split); every other setting is as is. A target's headers are added to (and override) the spec's.
func (s Spec) ClientSpecs() [][]ClientSpec {
	n := max(s.Clients, 1)
	ts := s.targets()
	tq, tc := split(s.QPS, s.Connections, weights(ts))
	out := make([][]ClientSpec, n)
	for i := range out {
		out[i] = make([]ClientSpec, len(ts))
		for j, t := range ts {
			qps := float64(MaxQPS)
			if !s.Max() {
				qps = tq[j] / float64(n)
			}
			proto := t.Protocol
			if proto == "" {
				proto = ProtocolHTTP
			}
			out[i][j] = ClientSpec{
				Target: t.Name, Protocol: proto, URL: t.URL, QPS: qps, Connections: tc[j], Duration: s.Duration, WarmUp: s.WarmUp,
				CoolDown: s.CoolDown, PayloadBytes: s.PayloadBytes, Headers: headerLines(s.Headers, t.Headers), Jitter: s.Jitter, Uniform: s.Uniform,
				PerSecond: s.PerSecond,
			}
			if proto == ProtocolHTTP {
				out[i][j].NoKeepAlive, out[i][j].HTTP2 = s.NoKeepAlive, s.HTTP2
			}
		}
	}
	return out
}

// headerLines are base with over on top, as "Name: value" sorted by name (nil when there are none).
func headerLines(base, over map[string]string) []string {
	m := maps.Clone(base)
	if m == nil {
		m = map[string]string{}
	}
	maps.Copy(m, over)
	var hdrs []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		hdrs = append(hdrs, k+": "+m[k])
	}
	return hdrs
}

// Args is the `meshbench-agent load` command line for the client (without the binary and subcommand names).
func (c ClientSpec) Args() []string {
	qps := "-1"
	if c.QPS > 0 {
		qps = strconv.FormatFloat(c.QPS, 'f', -1, 64)
	}
	var a []string
	if c.Target != "" {
		a = append(a, "--target", c.Target)
	}
	if c.Protocol != "" && c.Protocol != ProtocolHTTP {
		a = append(a, "--protocol", c.Protocol)
	}
	a = append(a,
		"--url", c.URL,
		"--qps", qps,
		"--connections", strconv.Itoa(c.Connections),
		"--duration", c.Duration.String(),
	)
	if c.WarmUp > 0 {
		a = append(a, "--warmup", c.WarmUp.String())
	}
	if c.CoolDown > 0 {
		a = append(a, "--cooldown", c.CoolDown.String())
	}
	if c.PayloadBytes > 0 {
		a = append(a, "--payload-bytes", strconv.Itoa(c.PayloadBytes))
	}
	for _, h := range c.Headers {
		a = append(a, "--header", h)
	}
	if c.Jitter {
		a = append(a, "--jitter")
	}
	if c.Uniform {
		a = append(a, "--uniform")
	}
	if c.NoKeepAlive {
		a = append(a, "--no-keepalive")
	}
	if c.HTTP2 {
		a = append(a, "--h2")
	}
	if c.PerSecond {
		a = append(a, "--per-second")
	}
	return append(a, "--json")
}

// Total is the whole time the client generates load.
func (c ClientSpec) Total() time.Duration { return c.WarmUp + c.Duration + c.CoolDown }

// headerList is a repeatable "Name: value" flag.
type headerList []string

func (h *headerList) String() string { return strings.Join(*h, ", ") }

func (h *headerList) Set(v string) error {
	name, _, ok := strings.Cut(v, ":")
	if !ok || strings.TrimSpace(name) == "" {
		return fmt.Errorf("header %q: want Name:value", v)
	}
	*h = append(*h, v)
	return nil
}

// qpsFlag accepts a number, -1 or "max".
type qpsFlag float64

func (q *qpsFlag) String() string { return strconv.FormatFloat(float64(*q), 'f', -1, 64) }

func (q *qpsFlag) Set(v string) error {
	if strings.EqualFold(v, "max") {
		*q = MaxQPS
		return nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f == 0 {
		return fmt.Errorf("qps %q: want a number > 0, or -1/max for max speed (0 would be fortio's default of 8 qps)", v)
	}
	if f < 0 {
		f = MaxQPS
	}
	*q = qpsFlag(f)
	return nil
}

// RegisterFlags defines the agent's flags (the inverse of Args) on fs, writing into c. jsonOut receives --json.
func (c *ClientSpec) RegisterFlags(fs *flag.FlagSet, jsonOut *bool) {
	fs.StringVar(&c.Target, "target", "", "target name, reported back in the JSON report")
	fs.StringVar(&c.Protocol, "protocol", ProtocolHTTP, "http, grpc (gRPC health check; --url host:port) or tcp (echo; --url tcp://host:port)")
	fs.StringVar(&c.URL, "url", "", "URL to load (required)")
	fs.Var((*qpsFlag)(&c.QPS), "qps", "target requests per second for this client; -1 or max = as fast as possible")
	fs.IntVar(&c.Connections, "connections", 4, "connections (fortio threads)")
	fs.DurationVar(&c.Duration, "duration", 30*time.Second, "measured phase")
	fs.DurationVar(&c.WarmUp, "warmup", 0, "load before the measured phase (results discarded)")
	fs.DurationVar(&c.CoolDown, "cooldown", 0, "load after the measured phase (results discarded)")
	fs.IntVar(&c.PayloadBytes, "payload-bytes", 0, "POST body size; 0 = GET")
	fs.Var((*headerList)(&c.Headers), "header", "extra request header Name:value (repeatable)")
	fs.BoolVar(&c.Jitter, "jitter", false, "±10% jitter on request intervals (fortio -jitter)")
	fs.BoolVar(&c.Uniform, "uniform", false, "stagger requests uniformly across connections (fortio -uniform)")
	fs.BoolVar(&c.NoKeepAlive, "no-keepalive", false, "a new connection for every request (http; fortio -keepalive=false)")
	fs.BoolVar(&c.HTTP2, "h2", false, "cleartext HTTP/2 with prior knowledge (http; fortio -h2, its standard client)")
	fs.BoolVar(&c.PerSecond, "per-second", false, "keep a per-second record of the measured phase: requests, errors by kind, latency percentiles")
	fs.BoolVar(jsonOut, "json", false, "print the JSON report on stdout (otherwise a one-line summary)")
	if c.QPS == 0 {
		c.QPS = MaxQPS
	}
}

// parseArgs is the inverse of Args: it reads a `meshbench-agent load` command line.
func parseArgs(args []string) (ClientSpec, bool, error) {
	var c ClientSpec
	var jsonOut bool
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	c.RegisterFlags(fs, &jsonOut)
	if err := fs.Parse(args); err != nil {
		return c, false, err
	}
	if fs.NArg() > 0 {
		return c, false, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return c, jsonOut, c.Validate()
}

// Validate checks a client spec as the agent's flags would.
func (c ClientSpec) Validate() error {
	if c.URL == "" {
		return errors.New("--url is required")
	}
	switch c.Protocol {
	case "", ProtocolHTTP, ProtocolGRPC, ProtocolTCP:
	default:
		return fmt.Errorf("--protocol %q: want http, grpc or tcp", c.Protocol)
	}
	if c.NoKeepAlive && c.HTTP2 {
		return errors.New("--no-keepalive cannot go with --h2: fortio's HTTP/2 client sends every request on one connection")
	}
	if (c.NoKeepAlive || c.HTTP2) && c.Protocol != "" && c.Protocol != ProtocolHTTP {
		return fmt.Errorf("--no-keepalive and --h2 are for --protocol http (got %s)", c.Protocol)
	}
	if c.Connections < 1 || c.Duration <= 0 || c.WarmUp < 0 || c.CoolDown < 0 || c.PayloadBytes < 0 {
		return errors.New("--connections must be >= 1, --duration > 0, --warmup/--cooldown/--payload-bytes >= 0")
	}
	return nil
}

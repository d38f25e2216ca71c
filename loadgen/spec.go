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

// Spec is one load run across every client.
type Spec struct {
	// URL is requested by every client.
	URL string
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
	// Clients is the number of client processes; the QPS is split evenly between them.
	Clients int
}

// Max reports whether the spec asks for max QPS.
func (s Spec) Max() bool { return s.QPS <= 0 }

// Validate checks the spec.
func (s Spec) Validate() error {
	var errs []error
	if s.URL == "" {
		errs = append(errs, errors.New("url is empty"))
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

// ClientSpec is what one fortio client does.
type ClientSpec struct {
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
}

// ClientSpecs splits the spec over its clients: each gets QPS/Clients (max stays max) and every other setting as is.
func (s Spec) ClientSpecs() []ClientSpec {
	n := max(s.Clients, 1)
	qps := float64(MaxQPS)
	if !s.Max() {
		qps = s.QPS / float64(n)
	}
	var hdrs []string
	for _, k := range slices.Sorted(maps.Keys(s.Headers)) {
		hdrs = append(hdrs, k+": "+s.Headers[k])
	}
	out := make([]ClientSpec, n)
	for i := range out {
		out[i] = ClientSpec{
			URL: s.URL, QPS: qps, Connections: s.Connections, Duration: s.Duration, WarmUp: s.WarmUp,
			CoolDown: s.CoolDown, PayloadBytes: s.PayloadBytes, Headers: slices.Clone(hdrs), Jitter: s.Jitter, Uniform: s.Uniform,
		}
	}
	return out
}

// Args is the `meshbench-agent load` command line for the client (without the binary and subcommand names).
func (c ClientSpec) Args() []string {
	qps := "-1"
	if c.QPS > 0 {
		qps = strconv.FormatFloat(c.QPS, 'f', -1, 64)
	}
	a := []string{
		"--url", c.URL,
		"--qps", qps,
		"--connections", strconv.Itoa(c.Connections),
		"--duration", c.Duration.String(),
	}
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
	fs.BoolVar(jsonOut, "json", false, "print the JSON report on stdout (otherwise a one-line summary)")
	if c.QPS == 0 {
		c.QPS = MaxQPS
	}
}

// ParseArgs is the inverse of Args: it reads a `meshbench-agent load` command line.
func ParseArgs(args []string) (ClientSpec, bool, error) {
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
	if c.Connections < 1 || c.Duration <= 0 || c.WarmUp < 0 || c.CoolDown < 0 || c.PayloadBytes < 0 {
		return errors.New("--connections must be >= 1, --duration > 0, --warmup/--cooldown/--payload-bytes >= 0")
	}
	return nil
}

package loadgen

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/meshbench/meshbench/results"
)

// ClientResult is one client's measured phase, parsed from its Report.
type ClientResult struct {
	Client string
	// Target and Protocol are the report's (Target empty with a single unnamed target).
	Target, Protocol string
	Start, End       time.Time // exact measured phase
	RequestedQPS     float64   // MaxQPS for max
	ActualQPS        float64
	Connections      int
	Sockets          int64
	// NoKeepAlive and HTTP2Responses are the report's (Measured).
	NoKeepAlive    bool
	HTTP2Responses int64
	Codes          map[int]int64 // HTTP status -> count; -1 = connection or socket error
	// Latency holds the 2xx requests' service times, ErrorLatency the others' (see Latencies).
	Latency, ErrorLatency *Histogram
	// Response is the same requests' response times (due -> done); nil at max speed (Measured.ResponseLatency).
	Response *Latencies
	Phases   []Phase // every phase of the client, measured included
	// Seconds is the client's per-second record (ClientSpec.PerSecond), nil without one.
	Seconds []results.LoadSecond
}

// Requests is the number of requests the client completed in the measured phase.
func (c ClientResult) Requests() int64 {
	var n int64
	for _, v := range c.Codes {
		n += v
	}
	return n
}

// Parse reads one client's Report (`meshbench-agent load --json`) and checks it: a measured phase, and latency
// histograms that hold exactly the requests the status codes count (2xx in ok, the rest in errors). It is pure.
func Parse(data []byte) (ClientResult, error) {
	var rep Report
	if err := json.Unmarshal(bytes.TrimSpace(data), &rep); err != nil {
		return ClientResult{}, fmt.Errorf("parse load report: %w", err)
	}
	var measured *Phase
	for i, p := range rep.Phases {
		if p.Name == PhaseMeasured {
			measured = &rep.Phases[i]
		}
	}
	m := rep.Measured
	if measured == nil || m == nil {
		return ClientResult{}, errors.New(`parse load report: no measured phase (want a "measured" entry in phases and a "measured" object)`)
	}
	if m.Latency.OK == nil || m.Latency.Errors == nil {
		return ClientResult{}, errors.New("parse load report: measured.latency is missing (the agent image is older than this meshbench: rebuild spec.images.agent)")
	}
	var ok, bad int64
	for code, n := range m.Codes {
		if n < 0 {
			return ClientResult{}, fmt.Errorf("parse load report: codes[%d] = %d is negative", code, n)
		}
		if codeOK(code) {
			ok += n
		} else {
			bad += n
		}
	}
	if got := m.Latency.OK.Count(); got != ok {
		return ClientResult{}, fmt.Errorf("parse load report: latency.ok holds %d requests but codes count %d 2xx responses", got, ok)
	}
	if got := m.Latency.Errors.Count(); got != bad {
		return ClientResult{}, fmt.Errorf("parse load report: latency.errors holds %d requests but codes count %d other responses", got, bad)
	}
	if r := m.ResponseLatency; r != nil && (r.OK.Count() != ok || r.Errors.Count() != bad) {
		return ClientResult{}, fmt.Errorf("parse load report: responseLatency holds %d ok and %d other requests but codes count %d and %d",
			r.OK.Count(), r.Errors.Count(), ok, bad)
	}
	if len(m.Seconds) > 0 {
		var n int64
		for _, sec := range m.Seconds {
			n += sec.Requests
		}
		if n != ok+bad {
			return ClientResult{}, fmt.Errorf("parse load report: seconds hold %d requests but codes count %d", n, ok+bad)
		}
	}
	return ClientResult{
		Client: rep.Client, Target: rep.Target, Protocol: rep.Protocol, Start: measured.Start.UTC(), End: measured.End.UTC(), RequestedQPS: m.RequestedQPS,
		ActualQPS: measured.ActualQPS, Connections: m.Connections, Sockets: m.Sockets, Codes: m.Codes,
		NoKeepAlive: m.NoKeepAlive, HTTP2Responses: m.HTTP2Responses,
		Latency: m.Latency.OK, ErrorLatency: m.Latency.Errors, Response: m.ResponseLatency, Phases: rep.Phases,
		Seconds: m.Seconds,
	}, nil
}

// Result is the merged outcome of every client of a load run.
type Result struct {
	Clients []ClientResult
	// Start and End are the part of the measured phase that every client was in (latest start, earliest end). When
	// the clients' phases do not overlap they are the earliest start and the latest end, and Notes says so.
	Start, End   time.Time
	RequestedQPS float64 // total; MaxQPS for max
	ActualQPS    float64 // sum over clients
	Requests     int64
	Errors       int64 // non-2xx responses and connection errors (code -1)
	Codes        map[int]int64
	Connections  int   // sum of fortio threads
	Sockets      int64 // sockets opened (== Connections with perfect keep-alive)
	// Latency (2xx) and ErrorLatency (the rest) are the clients' service-time histograms merged exactly; percentiles
	// come from the merged buckets, never from an average of per-client percentiles.
	Latency, ErrorLatency *Histogram
	// ResponseLatency and ErrorResponseLatency are the response times (due -> done), merged the same way; nil unless
	// every client recorded them (a run at a fixed rate).
	ResponseLatency, ErrorResponseLatency *Histogram
	Notes                                 []string
	// Targets is each target's own merge (its clients only), in spec order, when the run had more than one target.
	Targets []LoadTargetResult
}

// LoadTargetResult is one target's part of a run.
type LoadTargetResult struct {
	Name, Protocol string
	Weight         int
	Result
}

// Seconds is the per-second record of every client merged (results.MergeSeconds); nil when no client kept one.
func (r Result) Seconds() []results.LoadSecond {
	var all [][]results.LoadSecond
	for _, c := range r.Clients {
		all = append(all, c.Seconds)
	}
	return results.MergeSeconds(all...)
}

// Shortfall is the run's requested and achieved rates when it achieved less than it asked for by more than
// results.LoadShortfallPct (nil at max speed, or when it kept up).
func (r Result) Shortfall() *results.LoadShortfall {
	return results.ShortOf(r.RequestedQPS, r.ActualQPS)
}

// ErrorRate is Errors/Requests in percent.
func (r Result) ErrorRate() float64 {
	if r.Requests == 0 {
		return 0
	}
	return 100 * float64(r.Errors) / float64(r.Requests)
}

// merge combines the clients of one load run. requestedQPS is the spec's total (<= 0 for max). It is pure.
func merge(requestedQPS float64, clients []ClientResult) (Result, error) {
	if len(clients) == 0 {
		return Result{}, errors.New("merge load results: no clients")
	}
	r := Result{Clients: clients, RequestedQPS: requestedQPS, Codes: map[int]int64{}}
	if requestedQPS <= 0 {
		r.RequestedQPS = MaxQPS
	}
	var oks, errs, respOKs, respErrs []*Histogram
	first, last := clients[0].Start, clients[0].End
	r.Start, r.End = clients[0].Start, clients[0].End
	for _, c := range clients {
		r.ActualQPS += c.ActualQPS
		r.Connections += c.Connections
		r.Sockets += c.Sockets
		for code, n := range c.Codes {
			r.Codes[code] += n
			r.Requests += n
			if !codeOK(code) {
				r.Errors += n
			}
		}
		oks, errs = append(oks, c.Latency), append(errs, c.ErrorLatency)
		if c.Response != nil {
			respOKs, respErrs = append(respOKs, c.Response.OK), append(respErrs, c.Response.Errors)
		}
		if c.Start.After(r.Start) {
			r.Start = c.Start
		}
		if c.End.Before(r.End) {
			r.End = c.End
		}
		if c.Start.Before(first) {
			first = c.Start
		}
		if c.End.After(last) {
			last = c.End
		}
	}
	if !r.End.After(r.Start) {
		r.Notes = append(r.Notes, fmt.Sprintf("the %d load clients' measured phases do not overlap; the window spans all of them (%s to %s)",
			len(clients), first.Format(time.RFC3339Nano), last.Format(time.RFC3339Nano)))
		r.Start, r.End = first, last
	} else if skew := r.Start.Sub(first) + last.Sub(r.End); skew > time.Second {
		r.Notes = append(r.Notes, fmt.Sprintf("load clients started or ended up to %s apart; the window is the part all of them covered", skew.Round(time.Millisecond)))
	}
	r.Latency, r.ErrorLatency = mergeHistograms(oks...), mergeHistograms(errs...)
	if len(respOKs) == len(clients) {
		r.ResponseLatency, r.ErrorResponseLatency = mergeHistograms(respOKs...), mergeHistograms(respErrs...)
	}
	if r.Sockets > int64(r.Connections) && !slices.ContainsFunc(clients, func(c ClientResult) bool { return c.NoKeepAlive }) {
		r.Notes = append(r.Notes, fmt.Sprintf("%d sockets for %d connections: connections were not kept alive (server closes, or errors)", r.Sockets, r.Connections))
	}
	return r, nil
}

// mergeTargets merges the clients of a run of spec s (every client's report for every target): over all targets as
// merge does (latency histograms merged exactly, never percentiles averaged; QPS, requests and errors summed), and,
// with more than one target, each target on its own into Result.Targets. It is pure.
func mergeTargets(s Spec, clients []ClientResult) (Result, error) {
	r, err := merge(s.QPS, clients)
	if err != nil || len(s.Targets) < 2 {
		return r, err
	}
	tq := s.TargetQPS()
	for i, t := range s.Targets {
		var mine []ClientResult
		for _, c := range clients {
			if c.Target == t.Name {
				mine = append(mine, c)
			}
		}
		tr, err := merge(tq[i], mine)
		if err != nil {
			return Result{}, fmt.Errorf("merge load results of target %s: %w", t.Name, err)
		}
		proto := t.Protocol
		if proto == "" {
			proto = ProtocolHTTP
		}
		tr.Notes = nil // the run's notes already cover every client
		r.Targets = append(r.Targets, LoadTargetResult{Name: t.Name, Protocol: proto, Weight: t.Weight, Result: tr})
	}
	return r, nil
}

// sortedCodes lists the codes in ascending order.
func sortedCodes(m map[int]int64) []int { return slices.Sorted(maps.Keys(m)) }

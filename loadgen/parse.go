package loadgen

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"fortio.org/fortio/stats"
)

// ClientResult is one client's measured phase, parsed from its Report or from a plain fortio JSON result.
type ClientResult struct {
	Client       string
	Start, End   time.Time // exact measured phase
	RequestedQPS float64   // MaxQPS for max
	ActualQPS    float64
	Connections  int
	Sockets      int64
	Codes        map[int]int64 // HTTP status -> count; -1 = connection or socket error
	Latency      *stats.HistogramData
	Phases       []Phase // every phase of the client, measured included (empty for plain fortio JSON)
}

// Requests is the number of requests the client completed in the measured phase.
func (c ClientResult) Requests() int64 {
	var n int64
	for _, v := range c.Codes {
		n += v
	}
	return n
}

// fortioResult is the part of fortio's HTTPRunnerResults JSON that meshbench reads. It is decoded into this local
// shape (not fhttp's type) so that JSON written by any fortio version, including the fortio CLI's `-json` files,
// parses the same way.
type fortioResult struct {
	RunType           string
	StartTime         time.Time
	RequestedQPS      string
	RequestedDuration string
	ActualQPS         float64
	ActualDuration    time.Duration
	NumThreads        int
	DurationHistogram *stats.HistogramData
	RetCodes          map[string]int64
	SocketCount       int64
	URL               string
	Error             bool   `json:"error"`
	Message           string `json:"message"`
	Exception         string `json:"exception"`
}

// Parse reads one client's output: a Report (`meshbench-agent load --json`) or fortio's own JSON result. It is pure.
func Parse(data []byte) (ClientResult, error) {
	data = bytes.TrimSpace(data)
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(data, &probe); err != nil {
		return ClientResult{}, fmt.Errorf("parse load report: %w", err)
	}
	var cr ClientResult
	raw := data
	if _, ok := probe["phases"]; ok {
		var rep Report
		if err := json.Unmarshal(data, &rep); err != nil {
			return ClientResult{}, fmt.Errorf("parse load report: %w", err)
		}
		if len(rep.Fortio) == 0 || string(rep.Fortio) == "null" {
			return ClientResult{}, errors.New("parse load report: no measured phase in the report")
		}
		cr.Client, cr.Phases, raw = rep.Client, rep.Phases, rep.Fortio
	}
	var fr fortioResult
	if err := json.Unmarshal(raw, &fr); err != nil {
		return ClientResult{}, fmt.Errorf("parse fortio result: %w", err)
	}
	if fr.Error {
		return ClientResult{}, fmt.Errorf("fortio run failed: %s %s", fr.Message, fr.Exception)
	}
	if fr.RunType != "" && fr.RunType != "HTTP" {
		return ClientResult{}, fmt.Errorf("parse fortio result: run type %q, want HTTP", fr.RunType)
	}
	if fr.DurationHistogram == nil {
		return ClientResult{}, errors.New("parse fortio result: no DurationHistogram")
	}
	cr.Start = fr.StartTime.UTC()
	cr.End = fr.StartTime.Add(fr.ActualDuration).UTC()
	for _, p := range cr.Phases {
		if p.Name == PhaseMeasured {
			cr.Start, cr.End = p.Start.UTC(), p.End.UTC()
		}
	}
	cr.ActualQPS = fr.ActualQPS
	cr.Connections = fr.NumThreads
	cr.Sockets = fr.SocketCount
	cr.Latency = fr.DurationHistogram
	cr.RequestedQPS = MaxQPS
	if fr.RequestedQPS != "" && fr.RequestedQPS != "max" {
		q, err := strconv.ParseFloat(fr.RequestedQPS, 64)
		if err != nil {
			return ClientResult{}, fmt.Errorf("parse fortio result: RequestedQPS %q: %w", fr.RequestedQPS, err)
		}
		cr.RequestedQPS = q
	}
	cr.Codes = make(map[int]int64, len(fr.RetCodes))
	for k, v := range fr.RetCodes {
		code, err := strconv.Atoi(k)
		if err != nil {
			return ClientResult{}, fmt.Errorf("parse fortio result: status code %q: %w", k, err)
		}
		cr.Codes[code] += v
	}
	return cr, nil
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
	// Latency is the clients' latency histograms merged bucket by bucket, in seconds, with Percentiles computed
	// from the merged buckets (never an average of per-client percentiles).
	Latency *stats.HistogramData
	Notes   []string
}

// ErrorRate is Errors/Requests in percent.
func (r Result) ErrorRate() float64 {
	if r.Requests == 0 {
		return 0
	}
	return 100 * float64(r.Errors) / float64(r.Requests)
}

// Merge combines the clients of one load run. requestedQPS is the spec's total (<= 0 for max). It is pure.
func Merge(requestedQPS float64, clients []ClientResult) (Result, error) {
	if len(clients) == 0 {
		return Result{}, errors.New("merge load results: no clients")
	}
	r := Result{Clients: clients, RequestedQPS: requestedQPS, Codes: map[int]int64{}}
	if requestedQPS <= 0 {
		r.RequestedQPS = MaxQPS
	}
	var hs []*stats.HistogramData
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
		hs = append(hs, c.Latency)
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
	h, err := MergeHistograms(hs, Percentiles())
	if err != nil {
		return Result{}, fmt.Errorf("merge load results: %w", err)
	}
	r.Latency = h
	if r.Sockets > int64(r.Connections) {
		r.Notes = append(r.Notes, fmt.Sprintf("%d sockets for %d connections: connections were not kept alive (server closes, or errors)", r.Sockets, r.Connections))
	}
	return r, nil
}

// MergeHistograms merges fortio histograms recorded with the same resolution (every histogram of this package uses
// Resolution and offset 0) bucket by bucket, and computes the percentiles from the merged buckets. Count, Min, Max,
// Sum, Avg and StdDev are exact; percentiles carry fortio's usual in-bucket interpolation.
func MergeHistograms(hs []*stats.HistogramData, percentiles []float64) (*stats.HistogramData, error) {
	h := stats.NewHistogram(0, Resolution)
	var count int64
	var sum, sumSq float64
	minV, maxV := math.Inf(1), math.Inf(-1)
	for i, d := range hs {
		if d == nil || d.Count == 0 {
			continue
		}
		var n int64
		for _, b := range d.Data {
			if b.Count <= 0 {
				continue
			}
			if b.End < b.Start {
				return nil, fmt.Errorf("histogram %d: bucket [%g, %g] is inverted", i, b.Start, b.End)
			}
			// Every exported bucket lies inside one of fortio's fixed buckets (only the first starts at Min and the
			// last ends at Max), so its midpoint lands in the same bucket of the merged histogram.
			h.RecordN((b.Start+b.End)/2, int(b.Count))
			n += b.Count
		}
		if n != d.Count {
			return nil, fmt.Errorf("histogram %d: buckets hold %d values but Count is %d", i, n, d.Count)
		}
		count += d.Count
		sum += d.Sum
		// Var = E[x²] - mean², per histogram; recombined exactly.
		sumSq += float64(d.Count) * (d.StdDev*d.StdDev + d.Avg*d.Avg)
		minV, maxV = math.Min(minV, d.Min), math.Max(maxV, d.Max)
	}
	if count == 0 {
		return &stats.HistogramData{}, nil
	}
	// The bucket counts are exact; the counter fields come from the inputs rather than from the midpoints.
	h.Counter.Count, h.Counter.Min, h.Counter.Max, h.Counter.Sum = count, minV, maxV, sum
	out := h.Export()
	out.Avg = sum / float64(count)
	out.StdDev = math.Sqrt(math.Max(0, sumSq/float64(count)-out.Avg*out.Avg))
	return out.CalcPercentiles(slices.Clone(percentiles)), nil
}

// Percentile returns the value of percentile p (in percent) of h, in seconds, and whether h has it.
func Percentile(h *stats.HistogramData, p float64) (float64, bool) {
	if h == nil {
		return 0, false
	}
	for _, q := range h.Percentiles {
		if q.Percentile == p {
			return q.Value, true
		}
	}
	return 0, false
}

// sortedCodes lists the codes in ascending order.
func sortedCodes(m map[int]int64) []int { return slices.Sorted(maps.Keys(m)) }

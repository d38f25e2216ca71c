package spansink

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
)

const (
	// Port is Zipkin's conventional collector port, the one Istio's zipkin provider examples point at.
	Port = 9411
	// SpansPath is where Envoy POSTs its spans: Istio's zipkin provider (istio/istio 1.24.0
	// pilot/pkg/networking/core/tracing.go zipkinConfig) sets CollectorEndpoint "/api/v2/spans" with
	// CollectorEndpointVersion HTTP_JSON, so each report is a JSON array of Zipkin v2 spans.
	SpansPath = "/api/v2/spans"
	// CountsPath answers GET with the Counts as JSON; ParseCounts decodes it.
	CountsPath = "/meshbench/spans"

	// maxBody bounds a report, both as received and after gzip decompression: Envoy flushes its buffer every few
	// hundred spans, far below this, so a larger body is a fault (or a gzip bomb), refused with 413.
	maxBody = 16 << 20
)

// Counts is what the sink has received since it started.
type Counts struct {
	Spans int64 `json:"spans"` // spans accepted
	// Roots are the spans without a parentId: each starts a trace. Counting them instead of distinct trace IDs
	// keeps memory constant.
	Roots    int64 `json:"roots"`
	Reports  int64 `json:"reports"`  // POSTs accepted (202)
	Rejected int64 `json:"rejected"` // POSTs refused (bad body, too large, unknown encoding); none of their spans count
}

// Sink counts the Zipkin spans POSTed to its Handler. The zero value is not usable: call New. Safe for concurrent
// use.
type Sink struct {
	mu     sync.Mutex // one lock, so Counts is a consistent snapshot of a whole number of reports
	counts Counts
}

// New returns a Sink with every count at zero.
func New() *Sink { return &Sink{} }

// Counts returns a snapshot of the counts.
func (s *Sink) Counts() Counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts
}

// Handler serves POST SpansPath (202 Accepted and no body on success, since Envoy's zipkin reporter counts any
// non-2xx as a failed report; 400 for a body that is not an array of spans each with traceId and id) and GET
// CountsPath. Other paths are 404, other methods on those paths 405.
func (s *Sink) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+SpansPath, s.postSpans)
	mux.HandleFunc("GET "+CountsPath, s.getCounts)
	return mux
}

// span holds the only Zipkin v2 fields the sink reads; the rest (name, timestamp, tags, ...) are skipped unparsed,
// so their types do not matter (Envoy has written uint64 fields as JSON strings).
type span struct {
	TraceID  string `json:"traceId"`
	ID       string `json:"id"`
	ParentID string `json:"parentId"` // absent, null or "" = a root span
}

// httpError is a refused report: its status and why.
type httpError struct {
	status int
	msg    string
}

func (e *httpError) Error() string { return e.msg }

func (s *Sink) postSpans(w http.ResponseWriter, r *http.Request) {
	spans, roots, err := readSpans(w, r)
	s.mu.Lock()
	if err != nil {
		s.counts.Rejected++
	} else {
		s.counts.Spans += spans
		s.counts.Roots += roots
		s.counts.Reports++
	}
	s.mu.Unlock()
	if err != nil {
		status := http.StatusBadRequest
		var he *httpError
		if errors.As(err, &he) {
			status = he.status
		}
		http.Error(w, err.Error(), status)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// readSpans decodes one report and returns how many spans and root spans it holds; nothing is counted on error.
func readSpans(w http.ResponseWriter, r *http.Request) (spans, roots int64, err error) {
	body, err := readBody(w, r)
	if err != nil {
		return 0, 0, err
	}
	if t := bytes.TrimLeft(body, " \t\r\n"); len(t) == 0 || t[0] != '[' {
		return 0, 0, errors.New("body is not a JSON array of Zipkin v2 spans")
	}
	var list []span
	if err := json.Unmarshal(body, &list); err != nil {
		return 0, 0, fmt.Errorf("decode Zipkin v2 spans: %w", err)
	}
	for i, sp := range list {
		if sp.TraceID == "" || sp.ID == "" {
			return 0, 0, fmt.Errorf("span %d: traceId and id are required", i)
		}
		if sp.ParentID == "" {
			roots++
		}
	}
	return int64(len(list)), roots, nil
}

// readBody reads the request body, decompressing gzip, bounded by maxBody on both sides of the decompression.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	var rd io.Reader = http.MaxBytesReader(w, r.Body, maxBody)
	switch enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(rd)
		if err != nil {
			return nil, bodyError(fmt.Errorf("gzip body: %w", err))
		}
		defer zr.Close()
		rd = zr
	default:
		return nil, &httpError{http.StatusUnsupportedMediaType, fmt.Sprintf("Content-Encoding %q: only gzip is supported", enc)}
	}
	body, err := io.ReadAll(io.LimitReader(rd, maxBody+1))
	if err != nil {
		return nil, bodyError(fmt.Errorf("read body: %w", err))
	}
	if len(body) > maxBody {
		return nil, &httpError{http.StatusRequestEntityTooLarge, fmt.Sprintf("body decompresses to more than %d bytes", maxBody)}
	}
	return body, nil
}

// bodyError turns MaxBytesReader's error into a 413; any other read error stays a 400.
func bodyError(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return &httpError{http.StatusRequestEntityTooLarge, err.Error()}
	}
	return err
}

func (s *Sink) getCounts(w http.ResponseWriter, _ *http.Request) {
	b, err := json.Marshal(s.Counts())
	if err != nil { // four int64s cannot fail to encode
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(b, '\n'))
}

// ParseCounts decodes a CountsPath answer. It is strict, since a mismatch means the sink and its reader are from
// different builds: every field must be present, no other field, no negative count, no more roots than spans.
func ParseCounts(b []byte) (Counts, error) {
	var raw struct {
		Spans    *int64 `json:"spans"`
		Roots    *int64 `json:"roots"`
		Reports  *int64 `json:"reports"`
		Rejected *int64 `json:"rejected"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return Counts{}, fmt.Errorf("span counts: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Counts{}, errors.New("span counts: trailing data after the JSON object")
	}
	var c Counts
	for _, f := range []struct {
		name string
		src  *int64
		dst  *int64
	}{
		{"spans", raw.Spans, &c.Spans},
		{"roots", raw.Roots, &c.Roots},
		{"reports", raw.Reports, &c.Reports},
		{"rejected", raw.Rejected, &c.Rejected},
	} {
		if f.src == nil {
			return Counts{}, fmt.Errorf("span counts: field %q missing", f.name)
		}
		if *f.src < 0 {
			return Counts{}, fmt.Errorf("span counts: %s = %d, want >= 0", f.name, *f.src)
		}
		*f.dst = *f.src
	}
	if c.Roots > c.Spans {
		return Counts{}, fmt.Errorf("span counts: roots %d > spans %d", c.Roots, c.Spans)
	}
	return c, nil
}

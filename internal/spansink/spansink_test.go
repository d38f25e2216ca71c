package spansink

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// envoyBody is a report as Envoy's zipkin tracer (HTTP_JSON) writes it: a root SERVER span at the ingress gateway
// and a CLIENT span under it; "shared" is omitted, as Envoy does.
const envoyBody = `[
 {"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","id":"00f067aa0ba902b7","name":"productpage.default.svc.cluster.local:9080/*",
  "timestamp":1718000000123456,"duration":2345,"kind":"SERVER",
  "localEndpoint":{"serviceName":"istio-ingressgateway.istio-system","ipv4":"10.244.0.12","port":0},
  "tags":{"component":"proxy","http.method":"GET","http.status_code":"200","istio.mesh_id":"cluster.local",
   "node_id":"router~10.244.0.12~istio-ingressgateway-5c9d6b7f8-x2x7k.istio-system~istio-system.svc.cluster.local",
   "request_size":"0","response_flags":"-","response_size":"1683","upstream_cluster":"outbound|9080||productpage.default.svc.cluster.local"}},
 {"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","parentId":"00f067aa0ba902b7","id":"53995c3f42cd8ad8",
  "name":"reviews.default.svc.cluster.local:9080/*","timestamp":1718000000124001,"duration":1210,"kind":"CLIENT",
  "localEndpoint":{"serviceName":"productpage.default","ipv4":"10.244.1.7","port":0},
  "tags":{"component":"proxy","http.method":"GET","http.url":"http://reviews:9080/reviews/0","peer.address":"10.244.1.7",
   "upstream_cluster":"outbound|9080||reviews.default.svc.cluster.local"}}
]`

// stringNumbers has uint64 fields written as JSON strings, as protobuf JSON encodes them, and a null parentId.
const stringNumbers = `[{"traceId":"a3ce929d0e0e4736","id":"6e0c63257de34c92","parentId":null,"name":"x","timestamp":"1718000000123456",
 "duration":"17","kind":"SERVER","localEndpoint":{"serviceName":"a","ipv4":"10.0.0.1","port":"8080"},"tags":{"n":1}}]`

func gz(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := io.WriteString(zw, s); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestHandler(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		method   string
		path     string
		encoding string // Content-Encoding
		body     []byte
		want     int // status
		counts   Counts
	}{
		{"envoy report", http.MethodPost, SpansPath, "", []byte(envoyBody), http.StatusAccepted, Counts{Spans: 2, Roots: 1, Reports: 1}},
		{"gzip", http.MethodPost, SpansPath, "gzip", gz(t, envoyBody), http.StatusAccepted, Counts{Spans: 2, Roots: 1, Reports: 1}},
		{"all children", http.MethodPost, SpansPath, "", []byte(`[{"traceId":"a","id":"b","parentId":"c"},{"traceId":"a","id":"d","parentId":"b"}]`), http.StatusAccepted, Counts{Spans: 2, Reports: 1}},
		{"numbers as strings, null parentId", http.MethodPost, SpansPath, "", []byte(stringNumbers), http.StatusAccepted, Counts{Spans: 1, Roots: 1, Reports: 1}},
		{"empty array", http.MethodPost, SpansPath, "", []byte(" [ ] \n"), http.StatusAccepted, Counts{Reports: 1}},
		{"bad JSON", http.MethodPost, SpansPath, "", []byte(`[{"traceId":"a","id":"b"`), http.StatusBadRequest, Counts{Rejected: 1}},
		{"trailing data", http.MethodPost, SpansPath, "", []byte(`[{"traceId":"a","id":"b"}] []`), http.StatusBadRequest, Counts{Rejected: 1}},
		{"object, not array", http.MethodPost, SpansPath, "", []byte(`{"traceId":"a","id":"b"}`), http.StatusBadRequest, Counts{Rejected: 1}},
		{"null", http.MethodPost, SpansPath, "", []byte(`null`), http.StatusBadRequest, Counts{Rejected: 1}},
		{"empty body", http.MethodPost, SpansPath, "", nil, http.StatusBadRequest, Counts{Rejected: 1}},
		{"span missing id", http.MethodPost, SpansPath, "", []byte(`[{"traceId":"a","id":"b"},{"traceId":"a","parentId":"b"}]`), http.StatusBadRequest, Counts{Rejected: 1}},
		{"span missing traceId", http.MethodPost, SpansPath, "", []byte(`[{"id":"b"}]`), http.StatusBadRequest, Counts{Rejected: 1}},
		{"null span", http.MethodPost, SpansPath, "", []byte(`[null]`), http.StatusBadRequest, Counts{Rejected: 1}},
		{"numeric traceId", http.MethodPost, SpansPath, "", []byte(`[{"traceId":12,"id":"b"}]`), http.StatusBadRequest, Counts{Rejected: 1}},
		{"gzip header, plain body", http.MethodPost, SpansPath, "gzip", []byte(envoyBody), http.StatusBadRequest, Counts{Rejected: 1}},
		{"unknown encoding", http.MethodPost, SpansPath, "br", []byte(envoyBody), http.StatusUnsupportedMediaType, Counts{Rejected: 1}},
		{"too large", http.MethodPost, SpansPath, "", bytes.Repeat([]byte{' '}, maxBody+1), http.StatusRequestEntityTooLarge, Counts{Rejected: 1}},
		{"gzip bomb", http.MethodPost, SpansPath, "gzip", gz(t, strings.Repeat(" ", maxBody+1)), http.StatusRequestEntityTooLarge, Counts{Rejected: 1}},
		{"GET spans", http.MethodGet, SpansPath, "", nil, http.StatusMethodNotAllowed, Counts{}},
		{"POST counts", http.MethodPost, CountsPath, "", []byte(envoyBody), http.StatusMethodNotAllowed, Counts{}},
		{"other path", http.MethodPost, "/api/v1/spans", "", []byte(envoyBody), http.StatusNotFound, Counts{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := New()
			srv := httptest.NewServer(s.Handler())
			defer srv.Close()
			req, err := http.NewRequestWithContext(t.Context(), tt.method, srv.URL+tt.path, bytes.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			if tt.encoding != "" {
				req.Header.Set("Content-Encoding", tt.encoding)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Fatalf("status = %d (%s), want %d", resp.StatusCode, body, tt.want)
			}
			if tt.want == http.StatusAccepted && len(body) != 0 {
				t.Errorf("202 body = %q, want none", body)
			}
			if got := getCounts(t, srv); got != tt.counts {
				t.Errorf("counts = %+v, want %+v", got, tt.counts)
			}
			if got := s.Counts(); got != tt.counts {
				t.Errorf("Counts() = %+v, want %+v", got, tt.counts)
			}
		})
	}
}

// getCounts reads CountsPath the way meshbench does: GET, then ParseCounts.
func getCounts(t *testing.T, srv *httptest.Server) Counts {
	t.Helper()
	resp, err := srv.Client().Get(srv.URL + CountsPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: status %d", CountsPath, resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseCounts(b)
	if err != nil {
		t.Fatalf("ParseCounts(%s): %v", b, err)
	}
	return c
}

func TestCountsAccumulate(t *testing.T) {
	t.Parallel()
	s := New()
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	for _, b := range []string{envoyBody, envoyBody, `[{"id":"x"}]`, stringNumbers} {
		resp, err := srv.Client().Post(srv.URL+SpansPath, "application/json", strings.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	want := Counts{Spans: 5, Roots: 3, Reports: 3, Rejected: 1}
	if got := getCounts(t, srv); got != want {
		t.Errorf("counts = %+v, want %+v", got, want)
	}
}

func TestParseCounts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		want    Counts
		wantErr string // substring; "" = no error
	}{
		{"ok", `{"spans":5,"roots":2,"reports":3,"rejected":1}` + "\n", Counts{5, 2, 3, 1}, ""},
		{"zero", `{"spans":0,"roots":0,"reports":0,"rejected":0}`, Counts{}, ""},
		{"missing field", `{"spans":5,"roots":2,"reports":3}`, Counts{}, `"rejected" missing`},
		{"unknown field", `{"spans":5,"roots":2,"reports":3,"rejected":1,"traces":2}`, Counts{}, `unknown field "traces"`},
		{"negative", `{"spans":5,"roots":2,"reports":-3,"rejected":1}`, Counts{}, "reports = -3"},
		{"roots over spans", `{"spans":1,"roots":2,"reports":3,"rejected":1}`, Counts{}, "roots 2 > spans 1"},
		{"string count", `{"spans":"5","roots":2,"reports":3,"rejected":1}`, Counts{}, "spans"},
		{"trailing data", `{"spans":0,"roots":0,"reports":0,"rejected":0} {}`, Counts{}, "trailing data"},
		{"not JSON", `404 page not found`, Counts{}, "span counts"},
		{"empty", ``, Counts{}, "span counts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseCounts([]byte(tt.in))
			if tt.wantErr == "" {
				if err != nil || got != tt.want {
					t.Fatalf("ParseCounts = %+v, %v; want %+v", got, err, tt.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("ParseCounts error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

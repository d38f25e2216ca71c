package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
)

func TestParseCurlFlags(t *testing.T) {
	t.Parallel()
	def := 10 * time.Second
	for _, tc := range []struct {
		name string
		args []string
		want curlFlags
		err  string // substring of the error; "" = success
	}{
		{"url only", []string{"http://a:8080/x"}, curlFlags{url: "http://a:8080/x", timeout: def}, ""},
		{"every flag", []string{"-H", "Cookie: token=a:b", "-H", "X-A:1", "-X", "PUT", "-d", "k=v", "--timeout", "2s", "--json", "--fail", "https://h/"},
			curlFlags{url: "https://h/", method: "PUT", headers: []string{"Cookie: token=a:b", "X-A:1"}, data: "k=v", hasData: true, timeout: 2 * time.Second, jsonOut: true, fail: true}, ""},
		{"long names", []string{"--header", "Host: frontend", "--request", "DELETE", "--data", "", "-f", "http://h/"},
			curlFlags{url: "http://h/", method: "DELETE", headers: []string{"Host: frontend"}, hasData: true, timeout: def, fail: true}, ""},
		{"flags after the url", []string{"http://h/login?u=a&p=b", "--json", "-H", "A: b"},
			curlFlags{url: "http://h/login?u=a&p=b", headers: []string{"A: b"}, timeout: def, jsonOut: true}, ""},
		{"no url", []string{"--json"}, curlFlags{}, "exactly one URL"},
		{"two urls", []string{"http://a/", "http://b/"}, curlFlags{}, "exactly one URL"},
		{"not http", []string{"ftp://a/"}, curlFlags{}, "want http://"},
		{"no host", []string{"http:///x"}, curlFlags{}, "want http://"},
		{"header without colon", []string{"-H", "Cookie", "http://a/"}, curlFlags{}, "Name: value"},
		{"header bad name", []string{"-H", "Bad Name: v", "http://a/"}, curlFlags{}, "valid header name"},
		{"bad method", []string{"-X", "GE T", "http://a/"}, curlFlags{}, "not a valid method"},
		{"zero timeout", []string{"--timeout", "0s", "http://a/"}, curlFlags{}, "--timeout"},
		{"unknown flag", []string{"--insecure", "http://a/"}, curlFlags{}, "not defined"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseCurlFlags(tc.args, io.Discard)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// echoHTTP answers with what it received: method, host, sorted headers and body; /status/N answers N; /redirect
// answers 302; /slow waits.
func echoHTTP(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/status/"):
			var code int
			_, _ = fmt.Sscanf(r.URL.Path, "/status/%d", &code)
			w.WriteHeader(code)
			_, _ = io.WriteString(w, "status body")
			return
		case r.URL.Path == "/redirect":
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
			return
		case r.URL.Path == "/slow":
			time.Sleep(2 * time.Second)
		case r.URL.Path == "/binary": // like fortio's ?size= payload: not UTF-8
			_, _ = w.Write([]byte{0xff, 0xfe, 0x00, 'a', 0x80})
			return
		}
		b, _ := io.ReadAll(r.Body)
		var hs []string
		for k, v := range r.Header {
			if k != "User-Agent" && k != "Accept-Encoding" {
				hs = append(hs, k+"="+strings.Join(v, ","))
			}
		}
		sort.Strings(hs)
		w.Header().Set("X-Echo", "1")
		w.Header().Add("X-Multi", "a")
		w.Header().Add("X-Multi", "b")
		fmt.Fprintf(w, "%s %s %s host=%s [%s] body=%q", r.Method, r.URL.Path, r.URL.RawQuery, r.Host, strings.Join(hs, " "), b)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestCurlAgainstServer(t *testing.T) {
	t.Parallel()
	srv := echoHTTP(t)
	host := strings.TrimPrefix(srv.URL, "http://")
	for _, tc := range []struct {
		name    string
		args    []string
		status  int    // --json status; 0 = text output
		body    string // the body, or a substring of the text output
		wantErr bool
	}{
		{"get", []string{"--json", srv.URL + "/login?username=testuser&password=bankofanthos"}, 200,
			`GET /login username=testuser&password=bankofanthos host=` + host + ` [] body=""`, false},
		{"headers and host", []string{"--json", "-H", "Cookie: token=a.b.c", "-H", "Host: frontend.mb", "-H", "X-A: 1", "-H", "X-A: 2", srv.URL + "/home"}, 200,
			`GET /home  host=frontend.mb [Cookie=token=a.b.c X-A=1,2] body=""`, false},
		{"post data", []string{"--json", "-d", "a=1&b=2", srv.URL + "/f"}, 200,
			`POST /f  host=` + host + ` [Content-Length=7 Content-Type=application/x-www-form-urlencoded] body="a=1&b=2"`, false},
		{"put with content type", []string{"--json", "-X", "PUT", "-H", "Content-Type: application/json", "-d", `{"x":1}`, srv.URL + "/j"}, 200,
			`PUT /j  host=` + host + ` [Content-Length=7 Content-Type=application/json] body="{\"x\":1}"`, false},
		{"503 is printed, exit 0", []string{"--json", srv.URL + "/status/503"}, 503, "status body", false},
		{"503 with --fail", []string{"--json", "--fail", srv.URL + "/status/503"}, 503, "status body", true},
		{"404 with --fail", []string{"-f", "--json", srv.URL + "/status/404"}, 404, "status body", true},
		{"redirect not followed", []string{"--json", srv.URL + "/redirect"}, 302, "", false},
		{"text", []string{srv.URL + "/t?q=1"}, 0, "HTTP/1.1 200 OK\nContent-Length: ", false},
		{"timeout", []string{"--timeout", "200ms", srv.URL + "/slow"}, 0, "", true},
		{"connection refused", []string{"--json", "http://127.0.0.1:1/"}, 0, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			err := curlMain(context.Background(), tc.args, &out, io.Discard)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, want error %v (output %q)", err, tc.wantErr, out.String())
			}
			switch {
			case tc.status == 0 && tc.body == "":
				if out.Len() != 0 {
					t.Errorf("a transport error printed %q", out.String())
				}
			case tc.status == 0:
				if !strings.HasPrefix(out.String(), tc.body) || !strings.Contains(out.String(), "\nX-Echo: 1\nX-Multi: a\nX-Multi: b\n\nGET /t q=1 ") {
					t.Errorf("text output %q", out.String())
				}
			default:
				var r curlResponse
				if err := json.Unmarshal(out.Bytes(), &r); err != nil {
					t.Fatalf("--json output %q: %v", out.String(), err)
				}
				if r.Status != tc.status || (tc.body != "" && !strings.Contains(r.Body, tc.body)) || r.DurationSeconds <= 0 || r.DurationSeconds > 5 {
					t.Errorf("got status %d body %q in %gs, want %d and %q", r.Status, r.Body, r.DurationSeconds, tc.status, tc.body)
				}
				if tc.status == 302 && r.Headers.Get("Location") != "/elsewhere" {
					t.Errorf("redirect headers %v", r.Headers)
				}
				if tc.status == 200 && (r.Body != tc.body || r.Headers.Get("X-Echo") != "1") {
					t.Errorf("body %q headers %v, want body exactly %q", r.Body, r.Headers, tc.body)
				}
			}
		})
	}
}

// A binary body comes back byte for byte under --json (base64), not with every invalid byte replaced by U+FFFD.
func TestCurlBinaryBodyJSON(t *testing.T) {
	t.Parallel()
	srv := echoHTTP(t)
	var out bytes.Buffer
	if err := curlMain(context.Background(), []string{"--json", srv.URL + "/binary"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var r curlResponse
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if want := []byte{0xff, 0xfe, 0x00, 'a', 0x80}; !bytes.Equal(r.BodyBase64, want) || r.Body != "" || r.BodyBytes != len(want) {
		t.Errorf("body %q base64 %v (%d bytes), want %v", r.Body, r.BodyBase64, r.BodyBytes, want)
	}
}

// The subcommand is listed, so `meshbench-agent curl` reaches curlMain.
func TestCurlIsASubcommand(t *testing.T) {
	t.Parallel()
	if c, ok := subcommands()["curl"]; !ok || c.help == "" {
		t.Error("curl is not in the subcommand table")
	}
}

// TestCurlVerifiesTLS: the agent's requests to targets verify TLS and have no way to turn it off (issue 15 section
// 3): a target behind a self-signed certificate is refused, the same request over plain HTTP succeeds.
func TestCurlVerifiesTLS(t *testing.T) {
	t.Parallel()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
	tlsSrv := httptest.NewUnstartedServer(h)
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake is expected
	tlsSrv.StartTLS()
	t.Cleanup(tlsSrv.Close)
	plain := httptest.NewServer(h)
	t.Cleanup(plain.Close)
	var out, errOut bytes.Buffer
	err := curlMain(context.Background(), []string{"--json", tlsSrv.URL + "/"}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("self-signed target: %v, want a certificate error", err)
	}
	if err := curlMain(context.Background(), []string{"--json", plain.URL + "/"}, &out, &errOut); err != nil {
		t.Errorf("plain HTTP target: %v", err)
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/scenario"
	"github.com/meshbench/meshbench/workloads"
)

// loginServer is a login endpoint of each kind workloads.Login captures from: a form POST answered with a redirect
// that sets cookies, a response header, and a nested JSON field. A wrong request gets 400 with what was wrong.
func loginServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/session":
			b, _ := io.ReadAll(r.Body)
			if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" || string(b) != "user=a&pass=b%26c" || r.Header.Get("X-Tenant") != "t1" {
				http.Error(w, "bad login request: "+r.Method+" "+r.Header.Get("Content-Type")+" "+string(b), http.StatusBadRequest)
				return
			}
			http.SetCookie(w, &http.Cookie{Name: "theme", Value: "dark", Path: "/"})
			http.SetCookie(w, &http.Cookie{Name: "sid", Value: "s3cr3t", Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode})
			w.Header().Set("X-Auth-Token", "hdr-tok")
			http.Redirect(w, r, "/home", http.StatusSeeOther)
		case "/api/login":
			if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
				http.Error(w, "want a JSON POST", http.StatusBadRequest)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"data": {"token": "json-tok"}, "ok": true}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// The agent's curl sends a POST with its body and headers, and its --json output carries every Set-Cookie and
// response header: what workloads.Login reads, checked against the reader itself.
func TestCurlLoginPostAndSetCookie(t *testing.T) {
	t.Parallel()
	srv := loginServer(t)
	var out bytes.Buffer
	args := []string{"--json", "-X", "POST", "-H", "X-Tenant: t1", "-d", "user=a&pass=b%26c", srv.URL + "/session"}
	if err := curlMain(context.Background(), args, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var r curlResponse
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if r.Status != http.StatusSeeOther || r.Headers.Get("Location") != "/home" || len(r.Headers.Values("Set-Cookie")) != 2 || r.Headers.Get("X-Auth-Token") != "hdr-tok" {
		t.Fatalf("status %d headers %v body %q", r.Status, r.Headers, r.Body)
	}
	for capture, want := range map[string]string{"cookie:sid": "s3cr3t", "cookie:theme": "dark", "header:X-Auth-Token": "hdr-tok"} {
		if got, err := workloads.LoginAnswer(capture, out.Bytes()); err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", capture, got, err, want)
		}
	}
}

// workloads.Login end to end with the agent's curl run in-process as its AgentExec: the request it builds is one the
// agent accepts, and what the agent prints is one Login reads.
func TestLoginThroughAgentCurl(t *testing.T) {
	t.Parallel()
	srv := loginServer(t)
	exec := func(ctx context.Context, args []string) ([]byte, error) {
		if len(args) == 0 || args[0] != "curl" {
			t.Errorf("not a curl command: %q", args)
		}
		var out bytes.Buffer
		err := curlMain(ctx, args[1:], &out, io.Discard)
		return out.Bytes(), err
	}
	target := target.Target{App: scenario.AppManifests, Namespaces: []string{"shop"}, EntryNamespace: "shop"}
	for _, tc := range []struct {
		spec         scenario.Login
		header, want string
	}{
		{scenario.Login{URL: srv.URL + "/session", Method: "POST", Body: "user=a&pass=b%26c", Headers: map[string]string{"X-Tenant": "t1"}, Capture: "cookie:sid"},
			"Cookie", "sid=s3cr3t"},
		{scenario.Login{URL: srv.URL + "/session", Method: "POST", Body: "user=a&pass=b%26c", Headers: map[string]string{"X-Tenant": "t1"}, Capture: "header:x-auth-token",
			SetHeader: "Authorization", Value: "Bearer {value}"}, "Authorization", "Bearer hdr-tok"},
		{scenario.Login{URL: srv.URL + "/api/login", Method: "POST", Body: `{"user": "a"}`, ContentType: "application/json", Capture: "json:data.token", SetHeader: "X-Token"},
			"X-Token", "json-tok"},
	} {
		tc.spec.Timeout = scenario.D(5 * time.Second)
		got, err := workloads.Login(context.Background(), exec, target, tc.spec)
		if err != nil || got.Headers[tc.header] != tc.want {
			t.Errorf("%s: headers %v, %v; want %s: %s", tc.spec.Capture, got.Headers, err, tc.header, tc.want)
		}
	}

	// A 2xx without the field fails at once, naming it, rather than retrying for the whole timeout.
	start := time.Now()
	_, err := workloads.Login(context.Background(), exec, target, scenario.Login{URL: srv.URL + "/api/login", Method: "POST", Body: "{}",
		ContentType: "application/json", Capture: "json:data.jwt", Timeout: scenario.D(time.Minute)})
	if err == nil || !strings.Contains(err.Error(), `field "data.jwt" missing`) || time.Since(start) > 10*time.Second {
		t.Errorf("missing field: %v after %s", err, time.Since(start))
	}
}

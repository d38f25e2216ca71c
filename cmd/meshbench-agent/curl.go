package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

const curlHelp = "one HTTP request, like fortio curl: [-H 'K: V']... [-X METHOD] [-d BODY] [--timeout D] [--json] [--fail] URL; prints the status line, headers and body (--json: {status, headers, body, durationSeconds}); exit 1 on a transport error, and with --fail on a status >= 400"

// curlFlags is one `meshbench-agent curl` command line.
type curlFlags struct {
	url     string
	method  string   // "" = GET, or POST with a body (curl's rule)
	headers []string // "Name: value", in order
	data    string
	hasData bool
	timeout time.Duration
	jsonOut bool
	fail    bool
}

// dataFlag is -d: it records that a body was given (an empty -d is still a body: curl then POSTs nothing).
type dataFlag struct{ f *curlFlags }

func (d dataFlag) String() string {
	if d.f == nil {
		return ""
	}
	return d.f.data
}

func (d dataFlag) Set(v string) error {
	d.f.data, d.f.hasData = v, true
	return nil
}

// curlHeaders is the repeatable -H.
type curlHeaders struct{ f *curlFlags }

func (h curlHeaders) String() string {
	if h.f == nil {
		return ""
	}
	return strings.Join(h.f.headers, ", ")
}

func (h curlHeaders) Set(v string) error {
	name, _, ok := strings.Cut(v, ":")
	if !ok || !validToken(strings.TrimSpace(name)) || strings.TrimSpace(name) != name {
		return fmt.Errorf("header %q: want 'Name: value' with a valid header name", v)
	}
	h.f.headers = append(h.f.headers, v)
	return nil
}

// validToken reports whether s is an HTTP token (RFC 9110 section 5.6.2): a method or header name.
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r > 0x7e || r <= ' ' || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) {
			return false
		}
	}
	return true
}

// parseCurlFlags reads the command line. Flags may come before or after the URL, as with curl.
func parseCurlFlags(args []string, stderr io.Writer) (curlFlags, error) {
	var f curlFlags
	fs := flag.NewFlagSet("curl", flag.ContinueOnError)
	fs.SetOutput(stderr)
	for _, n := range []string{"H", "header"} {
		fs.Var(curlHeaders{&f}, n, "request header 'Name: value' (repeatable; Host: sets the request's host)")
	}
	for _, n := range []string{"X", "request"} {
		fs.StringVar(&f.method, n, "", "request method (default GET, or POST with -d)")
	}
	for _, n := range []string{"d", "data"} {
		fs.Var(dataFlag{&f}, n, "request body (sent as given; Content-Type application/x-www-form-urlencoded unless -H sets one)")
	}
	fs.DurationVar(&f.timeout, "timeout", 10*time.Second, "whole request timeout (connect, send, headers and body)")
	fs.BoolVar(&f.jsonOut, "json", false, "print one JSON object {status, headers, body, durationSeconds} instead of the raw response")
	for _, n := range []string{"f", "fail"} {
		fs.BoolVar(&f.fail, n, false, "exit 1 when the status is >= 400 (the response is still printed)")
	}
	var urls []string
	for {
		if err := fs.Parse(args); err != nil {
			return f, err
		}
		if fs.NArg() == 0 {
			break
		}
		urls = append(urls, fs.Arg(0))
		args = fs.Args()[1:]
	}
	var errs []error
	if len(urls) != 1 {
		errs = append(errs, fmt.Errorf("want exactly one URL, got %d %q", len(urls), urls))
	} else {
		f.url = urls[0]
		if u, err := url.Parse(f.url); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("URL %q: want http://host[:port]/path or https://host/path", f.url))
		}
	}
	if f.method != "" && !validToken(f.method) {
		errs = append(errs, fmt.Errorf("-X %q: not a valid method", f.method))
	}
	if f.timeout <= 0 {
		errs = append(errs, fmt.Errorf("--timeout %s: must be > 0", f.timeout))
	}
	return f, errors.Join(errs...)
}

// curlResponse is the --json output.
type curlResponse struct {
	Status  int         `json:"status"`
	Headers http.Header `json:"headers"`
	// Body is the body as text when it is valid UTF-8; otherwise BodyBase64 holds it (JSON would replace every
	// invalid byte with U+FFFD, so a binary payload, such as fortio's ?size= answer, could not be measured).
	Body            string  `json:"body,omitempty"`
	BodyBase64      []byte  `json:"bodyBase64,omitempty"`
	BodyBytes       int     `json:"bodyBytes"`
	DurationSeconds float64 `json:"durationSeconds"`
}

func runCurl(ctx context.Context, args []string) error {
	return curlMain(ctx, args, os.Stdout, os.Stderr)
}

// curlMain sends the one request. Redirects are not followed and no proxy is used: the answer printed is the one
// the server (through the data plane) gave.
func curlMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := parseCurlFlags(args, stderr)
	if err != nil {
		return err
	}
	method := f.method
	if method == "" {
		method = http.MethodGet
		if f.hasData {
			method = http.MethodPost
		}
	}
	var body io.Reader
	if f.hasData {
		body = strings.NewReader(f.data)
	}
	req, err := http.NewRequestWithContext(ctx, method, f.url, body)
	if err != nil {
		return fmt.Errorf("request %s: %w", f.url, err)
	}
	for _, h := range f.headers {
		name, value, _ := strings.Cut(h, ":")
		value = strings.TrimSpace(value)
		if strings.EqualFold(name, "Host") {
			req.Host = value // net/http ignores a Host entry in Header
			continue
		}
		req.Header.Add(name, value)
	}
	if f.hasData && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	defer tr.CloseIdleConnections()
	client := &http.Client{
		Transport:     tr,
		Timeout:       f.timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, f.url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s %s: read body: %w", method, f.url, err)
	}
	elapsed := time.Since(start)
	if f.jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		out := curlResponse{Status: resp.StatusCode, Headers: resp.Header, BodyBytes: len(b), DurationSeconds: elapsed.Seconds()}
		if utf8.Valid(b) {
			out.Body = string(b)
		} else {
			out.BodyBase64 = b
		}
		err = enc.Encode(out)
	} else {
		err = writeRawResponse(stdout, resp, b)
	}
	if err != nil {
		return err
	}
	if f.fail && resp.StatusCode >= 400 {
		return fmt.Errorf("%s %s: HTTP status %d", method, f.url, resp.StatusCode)
	}
	return nil
}

// writeRawResponse prints the status line, the headers (sorted by name, one line per value), an empty line and the
// body, like curl -i (with plain newlines).
func writeRawResponse(w io.Writer, resp *http.Response, body []byte) error {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s %s\n", resp.Proto, resp.Status)
	for _, k := range slices.Sorted(maps.Keys(resp.Header)) {
		for _, v := range resp.Header[k] {
			fmt.Fprintf(&sb, "%s: %s\n", k, v)
		}
	}
	sb.WriteString("\n")
	if _, err := io.WriteString(w, sb.String()); err != nil {
		return err
	}
	_, err := w.Write(body)
	return err
}

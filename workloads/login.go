package workloads

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/scenario"
)

// agentExec runs `meshbench-agent args...` from inside the mesh (the cmd layer wires it to a load client pod of the
// app's entry namespace, which runs in the case's data-plane mode) and returns its stdout. A non-zero exit is an
// error.
type agentExec func(ctx context.Context, args []string) (stdout []byte, err error)

// Bank of Anthos login facts (v0.6.10): userservice's Service port "http" and the cookie the frontend reads the
// token from (frontend.py TOKEN_NAME); login_test.go cites the upstream files.
const (
	boaUserServicePort = 8080
	boaTokenCookie     = "token"
)

// bankOfAnthosLogin is bank-of-anthos' built-in login: userservice's /login JSON token becomes the Cookie
// token=<JWT> the frontend needs (without it every request redirects to /login). Bank of Anthos' facts as data.
func bankOfAnthosLogin() scenario.Login {
	return scenario.Login{
		Service: boAUserService, Port: boaUserServicePort, Method: http.MethodGet,
		Path:    "/login?" + url.Values{"username": {boAUsername}, "password": {boAPassword}}.Encode(),
		Capture: "json:token", SetHeader: "Cookie", Value: boaTokenCookie + "={value}",
		Timeout: scenario.D(3 * time.Minute),
	}
}

// LoginFor is the login load needs: the scenario's spec.load.login when it sets one, else the app's built-in login
// (bank-of-anthos: bankOfAnthosLogin), else nil (the app needs none).
func LoginFor(app scenario.App, spec *scenario.Login) *scenario.Login {
	switch {
	case spec != nil:
		return spec
	case app == scenario.AppBankOfAnthos:
		lg := bankOfAnthosLogin()
		return &lg
	}
	return nil
}

// loginRequestTimeout bounds one login request (the agent's curl --timeout); loginExecTimeout one exec of the agent
// (the request plus the exec round trip through the API server).
const (
	loginRequestTimeout = 10 * time.Second
	loginExecTimeout    = 30 * time.Second
)

// Login sends spec's request from a load client pod (through the case's data plane, as the load goes), captures the
// credential and returns t with Headers[spec.SetHeader] set; t is not modified. Unsuccessful answers are retried
// until ctx ends or spec.Timeout (backends may still be starting); a 2xx without the captured field fails at once.
func Login(ctx context.Context, agent agentExec, t target.Target, spec scenario.Login) (target.Target, error) {
	return login(ctx, agent, t, spec, 2*time.Second)
}

func login(ctx context.Context, agent agentExec, t target.Target, spec scenario.Login, retry time.Duration) (target.Target, error) {
	spec.SetDefaults()
	if agent == nil {
		return t, fmt.Errorf("log in to %s: no way to run meshbench-agent in a load client pod", t.App)
	}
	capture, err := parseCapture(spec.Capture)
	if err != nil {
		return t, fmt.Errorf("log in to %s: %w", t.App, err)
	}
	req, err := newLoginRequest(t, spec)
	if err != nil {
		return t, fmt.Errorf("log in to %s: %w", t.App, err)
	}
	args := req.agentArgs()
	var (
		value    string
		lastErr  error
		attempts int
	)
	err = kube.Wait{Timeout: spec.Timeout.Duration, Interval: retry}.Until(ctx, func(ctx context.Context) (bool, error) {
		attempts++
		cctx, cancel := context.WithTimeout(ctx, loginExecTimeout)
		out, err := agent(cctx, args)
		cancel()
		if err == nil {
			if value, err = capture.from(out); err == nil {
				return true, nil
			}
			if errors.Is(err, errLoginFinal) {
				return false, err // retrying does not help
			}
		}
		lastErr = err // not up yet, or not answering as it will: retried
		return false, nil
	})
	if err == nil {
		res := t
		res.Headers = kube.MergeLabels(t.Headers, map[string]string{spec.SetHeader: strings.ReplaceAll(spec.Value, "{value}", value)})
		return res, nil
	}
	if errors.Is(err, kube.ErrWaitTimeout) && lastErr != nil {
		err = fmt.Errorf("%w after %s: %w", err, spec.Timeout.Duration, lastErr)
	}
	return t, fmt.Errorf("log in to %s (%s %s from a load client pod, attempts: %d): %w", t.App, req.Method, redactURL(req.URL), attempts, err)
}

// loginRequest is a login request as the agent sends it.
type loginRequest struct {
	Method  string
	URL     string
	Headers map[string]string
	// Body is sent when HasBody (a POST may send none).
	Body    string
	HasBody bool
}

// newLoginRequest resolves spec (unset fields take scenario's defaults) against the deployed target: spec.URL as
// given, or http://<service>.<namespace>.svc.<cluster domain>:<port><path>, where the namespace is the Service's in
// the target (loginNamespace); the content type joins the headers when there is a body or spec names one.
func newLoginRequest(t target.Target, spec scenario.Login) (loginRequest, error) {
	spec.SetDefaults()
	r := loginRequest{Method: strings.ToUpper(spec.Method), Headers: maps.Clone(spec.Headers), Body: spec.Body, HasBody: spec.Body != ""}
	switch {
	case spec.URL != "":
		u, err := url.Parse(spec.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return r, fmt.Errorf("login url %q: want http://host[:port]/path or https://host/path", spec.URL)
		}
		r.URL = spec.URL
	case spec.Service != "":
		ns, err := loginNamespace(t, spec)
		if err != nil {
			return r, err
		}
		domain := t.ClusterDomain
		if domain == "" {
			domain = clusterDomain
		}
		path := spec.Path
		if path == "" {
			path = "/"
		}
		r.URL = "http://" + fqdn(spec.Service, ns, domain) + ":" + strconv.Itoa(spec.Port) + path
	default:
		return r, errors.New("login sets neither service nor url")
	}
	ct := spec.ContentType
	if ct == "" && r.HasBody && headerKey(r.Headers, "Content-Type") == "" {
		ct = "application/x-www-form-urlencoded" // what a browser's form sends
	}
	if ct != "" {
		if r.Headers == nil {
			r.Headers = map[string]string{}
		}
		delete(r.Headers, headerKey(r.Headers, "Content-Type"))
		r.Headers["Content-Type"] = ct
	}
	return r, nil
}

// headerKey is the key of h that names header name (any case), or "".
func headerKey(h map[string]string, name string) string {
	for k := range h {
		if strings.EqualFold(k, name) {
			return k
		}
	}
	return ""
}

// loginNamespace is the login Service's namespace: spec.Namespace, else that of the workload named like the Service,
// else the target's only namespace; else an error, not a guess that would retry on a name that does not resolve.
func loginNamespace(t target.Target, spec scenario.Login) (string, error) {
	if spec.Namespace != "" {
		return spec.Namespace, nil
	}
	for _, w := range t.Workloads {
		if w.Name == spec.Service {
			return w.Namespace, nil
		}
	}
	switch {
	case len(t.Namespaces) > 1:
		return "", fmt.Errorf("login service %q: no workload of that name tells which of the namespaces %v it is in; set login.url to the Service's address (or, app existing, login.namespace)", spec.Service, t.Namespaces)
	case t.EntryNamespace != "":
		return t.EntryNamespace, nil
	case len(t.Namespaces) == 1:
		return t.Namespaces[0], nil
	}
	return "", fmt.Errorf("login service %q: the target has no namespace", spec.Service)
}

// agentArgs is the `meshbench-agent curl` command line of the request: --json (the output Login parses), the
// per-request timeout, -X unless GET, the headers sorted by name, -d with the body, then the URL.
func (r loginRequest) agentArgs() []string {
	args := []string{"curl", "--json", "--timeout", loginRequestTimeout.String()}
	if r.Method != http.MethodGet {
		args = append(args, "-X", r.Method)
	}
	for _, k := range slices.Sorted(maps.Keys(r.Headers)) {
		args = append(args, "-H", k+": "+r.Headers[k])
	}
	if r.HasBody {
		args = append(args, "-d", r.Body)
	}
	// The URL last: the agent's curl reads flags on either side of it, and a body such as "-x" stays -d's value.
	return append(args, r.URL)
}

// redactURL is u without its query and password: login credentials often travel there (Bank of Anthos' do), and
// the error ends up in logs and run files.
func redactURL(u string) string {
	pu, err := url.Parse(u)
	if err != nil {
		return "<unparsable url>"
	}
	q := pu.RawQuery != ""
	pu.RawQuery, pu.ForceQuery = "", false
	s := pu.Redacted()
	if q {
		s += "?..."
	}
	return s
}

// errLoginFinal marks an answer that retrying will not change: a 2xx without the captured field.
var errLoginFinal = errors.New("the login answered without the credential")

// Capture kinds of scenario.Login.Capture.
const (
	captureCookie = "cookie"
	captureHeader = "header"
	captureJSON   = "json"
)

// loginCapture is a parsed scenario.Login.Capture.
type loginCapture struct{ kind, name string }

func parseCapture(s string) (loginCapture, error) {
	kind, name, ok := strings.Cut(s, ":")
	if !ok || name == "" || (kind != captureCookie && kind != captureHeader && kind != captureJSON) {
		return loginCapture{}, fmt.Errorf("capture %q: want cookie:<name>, header:<name> or json:<field>", s)
	}
	return loginCapture{kind, name}, nil
}

func (c loginCapture) String() string { return c.kind + ":" + c.name }

// LoginAnswer reads one `meshbench-agent curl --json` output of a login request and returns the value capture
// ("cookie:<name>", "header:<name>", "json:<field>") names in it; Login's parse, exported so that the agent's tests
// check its output against the reader.
func LoginAnswer(capture string, out []byte) (string, error) {
	c, err := parseCapture(capture)
	if err != nil {
		return "", err
	}
	return c.from(out)
}

// agentCurlOutput is `meshbench-agent curl --json` output (cmd/meshbench-agent curlResponse).
type agentCurlOutput struct {
	Status     int         `json:"status"`
	Headers    http.Header `json:"headers"`
	Body       string      `json:"body"`
	BodyBase64 []byte      `json:"bodyBase64"`
}

// from reads `meshbench-agent curl --json` output and returns the captured value. A 2xx without it is
// errLoginFinal; a 3xx with it succeeds (a form login redirects to the next page and sets the cookie on the way,
// and the agent does not follow redirects); every other status is an error to retry.
func (c loginCapture) from(out []byte) (string, error) {
	var r agentCurlOutput
	if err := json.Unmarshal(out, &r); err != nil {
		return "", fmt.Errorf("decode meshbench-agent curl output %q: %w", truncate(string(out), 200), err)
	}
	if r.Status < 200 || r.Status >= 400 {
		return "", fmt.Errorf("answered %d: %q", r.Status, truncate(r.Body, 200))
	}
	v, err := c.value(r)
	if err == nil && strings.ContainsAny(v, "\r\n\x00") {
		// It becomes a load request header: a line break would split it (a JSON string may hold one).
		err = fmt.Errorf("the captured value %q holds a line break or NUL", truncate(v, 80))
	}
	switch {
	case err == nil:
		return v, nil
	case r.Status >= 300:
		return "", fmt.Errorf("answered %d (Location %q) without %s: %w", r.Status, r.Headers.Get("Location"), c, err)
	}
	return "", fmt.Errorf("%w: answered %d without %s: %w", errLoginFinal, r.Status, c, err)
}

// value picks the captured part of a response.
func (c loginCapture) value(r agentCurlOutput) (string, error) {
	switch c.kind {
	case captureCookie:
		var names []string
		v := ""
		for _, ck := range (&http.Response{Header: r.Headers}).Cookies() {
			names = append(names, ck.Name)
			if ck.Name == c.name && ck.Value != "" {
				v = ck.Value // the last one wins, as in a browser
			}
		}
		if v == "" {
			return "", fmt.Errorf("no Set-Cookie %s with a value (cookies set: %v)", c.name, names)
		}
		return v, nil
	case captureHeader:
		if v := r.Headers.Get(c.name); v != "" {
			return v, nil
		}
		return "", fmt.Errorf("no response header %s (headers: %v)", http.CanonicalHeaderKey(c.name), slices.Sorted(maps.Keys(r.Headers)))
	}
	if r.BodyBase64 != nil {
		return "", errors.New("the body is not text, so not JSON")
	}
	return jsonField([]byte(r.Body), c.name)
}

// jsonField is the string at field of a JSON object body; dots in field descend into nested objects ("data.token").
func jsonField(body []byte, field string) (string, error) {
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return "", fmt.Errorf("body %q is not JSON: %w", truncate(string(body), 200), err)
	}
	path := strings.Split(field, ".")
	for i, k := range path {
		obj, ok := v.(map[string]any)
		if !ok {
			return "", fmt.Errorf("field %q: %s is not an object in %q", field, jsonPathName(path[:i]), truncate(string(body), 200))
		}
		if v, ok = obj[k]; !ok {
			return "", fmt.Errorf("field %q missing (%s has %v) in %q", field, jsonPathName(path[:i]), slices.Sorted(maps.Keys(obj)), truncate(string(body), 200))
		}
	}
	s, ok := v.(string)
	if !ok || s == "" {
		return "", fmt.Errorf("field %q is %s, not a non-empty string", field, truncate(fmt.Sprintf("%#v", v), 80))
	}
	return s, nil
}

func jsonPathName(p []string) string {
	if len(p) == 0 {
		return "the body"
	}
	return strconv.Quote(strings.Join(p, "."))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

package workloads

import (
	"context"
	"errors"
	"maps"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/scenario"
)

// Bank of Anthos facts pinned here, read in GoogleCloudPlatform/bank-of-anthos at tag v0.6.10:
//   - src/accounts/userservice/userservice.py, login(): GET /login with query parameters username and password;
//     200 {"token": <RS256 JWT>} on success, 404 for an unknown user, 401 for a wrong password, 500 when the
//     database fails.
//   - kubernetes-manifests/userservice.yaml: Service userservice, port 8080 named http (targetPort 8080);
//     kubernetes-manifests/config.yaml: demo user testuser, password bankofanthos (demo-data-config).
//   - src/frontend/frontend.py: LOGIN_URI = 'http://{USERSERVICE_API_ADDR}/login', TOKEN_NAME = 'token', and every
//     page reads request.cookies.get(TOKEN_NAME): the load's Cookie header is token=<JWT>.

// fakeAgent answers `meshbench-agent ...` with scripted outputs and records every command.
type fakeAgent struct {
	cmds    [][]string
	answers []func() ([]byte, error)
}

func (f *fakeAgent) exec(_ context.Context, args []string) ([]byte, error) {
	f.cmds = append(f.cmds, args)
	i := min(len(f.cmds), len(f.answers)) - 1
	return f.answers[i]()
}

func answer(out string, err error) func() ([]byte, error) {
	return func() ([]byte, error) { return []byte(out), err }
}

// boaTarget is bank-of-anthos' target in topology i of boaScenario and the namespace of its userservice.
func boaTarget(t *testing.T, y string, i int) (target.Target, string) {
	t.Helper()
	s := mustScenario(t, y)
	_, tg, err := Objects(s, s.Spec.Workload.Topologies[i], "r1")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range tg.Workloads {
		if w.Name == boAUserService {
			return tg, w.Namespace
		}
	}
	t.Fatal("no userservice in the target")
	return tg, ""
}

// The built-in bank-of-anthos login is the general one with Bank of Anthos' facts: the agent command is exactly the
// one of the BoA-only code it replaced (pinned literally, so a change of the general path shows here), against
// userservice's FQDN in the namespace it was placed in, in the target's cluster domain.
func TestBankOfAnthosLoginArgsPinned(t *testing.T) {
	t.Parallel()
	single, singleNS := boaTarget(t, boaScenario, 0)
	multi, multiNS := boaTarget(t, boaScenario, 1)
	if multiNS == multi.EntryNamespace {
		t.Fatalf("userservice in the entry namespace %q: the test wants a multi-namespace topology", multiNS)
	}
	custom, customNS := boaTarget(t, strings.Replace(boaScenario, "    replicas: 2\n", "    replicas: 2\n    clusterDomain: corp.internal\n", 1), 0)
	lg := LoginFor(scenario.AppBankOfAnthos, nil)
	if lg == nil {
		t.Fatal("bank-of-anthos without spec.load.login has no login")
	}
	for _, tc := range []struct {
		tg   target.Target
		want string
	}{
		{single, "curl --json --timeout 10s http://userservice." + singleNS + ".svc.cluster.local:8080/login?password=bankofanthos&username=testuser"},
		{multi, "curl --json --timeout 10s http://userservice." + multiNS + ".svc.cluster.local:8080/login?password=bankofanthos&username=testuser"},
		{custom, "curl --json --timeout 10s http://userservice." + customNS + ".svc.corp.internal:8080/login?password=bankofanthos&username=testuser"},
	} {
		r, err := newLoginRequest(tc.tg, *lg)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(r.agentArgs(), " "); got != tc.want {
			t.Errorf("args %q\nwant %q", got, tc.want)
		}
	}
	// What the old code set: Cookie token=<JWT>, read from the JSON field token, within 3 minutes.
	if lg.Capture != "json:token" || lg.SetHeader != "Cookie" || lg.Value != "token={value}" || lg.Timeout.Duration != 3*time.Minute {
		t.Errorf("built-in login %+v", *lg)
	}
	// Defaulting changes nothing: the built-in is complete.
	d := *lg
	d.SetDefaults()
	if !reflect.DeepEqual(d, *lg) {
		t.Errorf("defaults changed the built-in login: %+v", d)
	}
}

func TestLoginFor(t *testing.T) {
	t.Parallel()
	own := &scenario.Login{Service: "auth", Capture: "cookie:sid"}
	if got := LoginFor(scenario.AppBankOfAnthos, own); got != own {
		t.Errorf("spec.load.login must win over the built-in: %+v", got)
	}
	if got := LoginFor(scenario.AppExisting, own); got != own {
		t.Errorf("existing: %+v", got)
	}
	for _, app := range []scenario.App{scenario.AppFortioChain, scenario.AppBookinfo, scenario.AppManifests, scenario.AppExisting} {
		if got := LoginFor(app, nil); got != nil {
			t.Errorf("%s has a login of its own: %+v", app, got)
		}
	}
}

func TestNewLoginRequest(t *testing.T) {
	t.Parallel()
	one := target.Target{App: scenario.AppManifests, Namespaces: []string{"shop"}, EntryNamespace: "shop", ClusterDomain: "cluster.local",
		Workloads: []workloadRef{{Kind: "Deployment", Namespace: "shop", Name: "web"}}}
	multi := target.Target{App: scenario.AppExisting, Namespaces: []string{"shop", "auth"}, EntryNamespace: "shop",
		Workloads: []workloadRef{{Kind: "Deployment", Namespace: "shop", Name: "web"}, {Kind: "Deployment", Namespace: "auth", Name: "sso"}}}
	for _, tc := range []struct {
		name string
		tg   target.Target
		spec scenario.Login
		args string // AgentArgs joined by spaces
		err  string
	}{
		{"defaults (an undefaulted spec: port 80, GET)", one, scenario.Login{Service: "web"},
			"curl --json --timeout 10s http://web.shop.svc.cluster.local:80/", ""},
		{"service without a workload of its name, one namespace", one, scenario.Login{Service: "auth", Port: 8080, Path: "/login?u=a"},
			"curl --json --timeout 10s http://auth.shop.svc.cluster.local:8080/login?u=a", ""},
		{"namespace of the workload named like the service; default domain", multi, scenario.Login{Service: "sso", Port: 9000, Path: "/token"},
			"curl --json --timeout 10s http://sso.auth.svc.cluster.local:9000/token", ""},
		{"explicit namespace", multi, scenario.Login{Service: "idp", Namespace: "auth", Port: 80, Path: "/x"},
			"curl --json --timeout 10s http://idp.auth.svc.cluster.local:80/x", ""},
		{"several namespaces, no workload of the name", multi, scenario.Login{Service: "idp"}, "", `which of the namespaces [shop auth]`},
		{"post form with headers sorted", one, scenario.Login{URL: "https://login.example:8443/session", Method: "post", Body: "user=a&pass=-b",
			Headers: map[string]string{"X-Tenant": "t1", "Accept": "application/json"}},
			"curl --json --timeout 10s -X POST -H Accept: application/json -H Content-Type: application/x-www-form-urlencoded -H X-Tenant: t1 -d user=a&pass=-b https://login.example:8443/session", ""},
		{"content type field wins over a header of any case", one, scenario.Login{Service: "web", Method: "POST", Body: `{"u":"a"}`, ContentType: "application/json",
			Headers: map[string]string{"content-type": "text/plain"}},
			`curl --json --timeout 10s -X POST -H Content-Type: application/json -d {"u":"a"} http://web.shop.svc.cluster.local:80/`, ""},
		{"content type header kept without the field", one, scenario.Login{Service: "web", Method: "POST", Body: "x", Headers: map[string]string{"content-type": "text/plain"}},
			"curl --json --timeout 10s -X POST -H content-type: text/plain -d x http://web.shop.svc.cluster.local:80/", ""},
		{"post without a body", one, scenario.Login{Service: "web", Method: "POST", Path: "/anon"},
			"curl --json --timeout 10s -X POST http://web.shop.svc.cluster.local:80/anon", ""},
		{"not an http url", one, scenario.Login{URL: "grpc://a:1"}, "", "want http://"},
		{"neither service nor url", one, scenario.Login{}, "", "neither service nor url"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			headers := maps.Clone(tc.spec.Headers)
			r, err := newLoginRequest(tc.tg, tc.spec)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(r.agentArgs(), " "); got != tc.args {
				t.Errorf("args %q\nwant %q", got, tc.args)
			}
			if !maps.Equal(headers, tc.spec.Headers) {
				t.Errorf("the spec's headers were modified: %v", tc.spec.Headers)
			}
		})
	}
}

func TestLoginAnswer(t *testing.T) {
	t.Parallel()
	const cookies = `{"status": 200, "headers": {"Set-Cookie": ["theme=dark; Path=/", "sid=s3cr3t; Path=/; HttpOnly; SameSite=Lax", "empty=; Max-Age=0"], "X-Auth-Token": ["tok-1"], "Content-Type": ["application/json"]},` +
		` "body": "{\"token\": \"top\", \"data\": {\"session\": {\"jwt\": \"deep\"}, \"n\": 5}, \"list\": [1]}", "bodyBytes": 70, "durationSeconds": 0.01}`
	for _, tc := range []struct {
		name, capture, out string
		want               string
		err                string // "" = success
		final              bool   // the error is one retrying does not fix
	}{
		{"cookie among several", "cookie:sid", cookies, "s3cr3t", "", false},
		{"header, any case", "header:x-auth-token", cookies, "tok-1", "", false},
		{"json top level", "json:token", cookies, "top", "", false},
		{"json nested", "json:data.session.jwt", cookies, "deep", "", false},
		{"missing cookie", "cookie:session", cookies, "", "no Set-Cookie session with a value (cookies set: [theme sid empty])", true},
		{"cookie without a value", "cookie:empty", cookies, "", "no Set-Cookie empty", true},
		{"missing header", "header:Authorization", cookies, "", "no response header Authorization (headers: [Content-Type Set-Cookie X-Auth-Token])", true},
		{"missing json field", "json:jwt", cookies, "", `field "jwt" missing (the body has [data list token])`, true},
		{"missing nested json field", "json:data.session.token", cookies, "", `field "data.session.token" missing ("data.session" has [jwt])`, true},
		{"json field not a string", "json:data.n", cookies, "", `field "data.n" is 5`, true},
		{"line break in the value", "json:token", `{"status": 200, "headers": {}, "body": "{\"token\": \"a\\r\\nX-Evil: 1\"}"}`, "", "holds a line break", true},
		{"descend into a non-object", "json:list.x", cookies, "", `"list" is not an object`, true},
		{"body not json", "json:token", `{"status": 200, "headers": {}, "body": "<html>login</html>"}`, "", "is not JSON", true},
		{"binary body", "json:token", `{"status": 200, "headers": {}, "bodyBase64": "//4="}`, "", "not text", true},
		// A form login redirects to its next page and sets the cookie on the way.
		{"303 with the cookie", "cookie:sid", `{"status": 303, "headers": {"Location": ["/home"], "Set-Cookie": ["sid=abc"]}, "body": ""}`, "abc", "", false},
		// A redirect without it (back to the login page, a proxy not ready): retried.
		{"302 without the cookie", "cookie:sid", `{"status": 302, "headers": {"Location": ["/login"]}, "body": ""}`, "", `answered 302 (Location "/login") without cookie:sid`, false},
		{"500", "json:token", `{"status": 500, "headers": {}, "body": "failed to retrieve user information"}`, "", `answered 500: "failed to retrieve user information"`, false},
		{"401", "json:token", `{"status": 401, "headers": {}, "body": "invalid login"}`, "", `answered 401: "invalid login"`, false},
		{"not curl output", "json:token", "meshbench-agent: usage", "", "decode meshbench-agent curl output", false},
		{"bad capture", "body:x", cookies, "", "want cookie:<name>", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := LoginAnswer(tc.capture, []byte(tc.out))
			if tc.err == "" {
				if err != nil || got != tc.want {
					t.Errorf("got %q, %v; want %q", got, err, tc.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("err %v, want one containing %q", err, tc.err)
			}
			if errors.Is(err, errLoginFinal) != tc.final {
				t.Errorf("final %v, want %v (%v)", errors.Is(err, errLoginFinal), tc.final, err)
			}
		})
	}
}

// Login runs the agent's curl in a load client pod and retries while the service is unreachable or not ready; the
// captured value goes into the load headers through the value template.
func TestLoginRetriesUntilSuccess(t *testing.T) {
	t.Parallel()
	tg, ns := boaTarget(t, boaScenario, 1)
	fa := &fakeAgent{answers: []func() ([]byte, error){
		answer("", errors.New("command terminated with exit code 1 (stderr: connection refused)")),
		answer(`{"status": 500, "headers": {}, "body": "failed to retrieve user information", "durationSeconds": 0.01}`, nil),
		answer(`{"status": 200, "headers": {"Content-Type": ["application/json"]}, "body": "{\"token\": \"eyJhbGciOiJSUzI1NiJ9.e30.sig\"}\n", "durationSeconds": 0.02}`, nil),
	}}
	out, err := login(context.Background(), fa.exec, tg, *LoginFor(tg.App, nil), time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if out.Headers["Cookie"] != "token=eyJhbGciOiJSUzI1NiJ9.e30.sig" || len(out.Headers) != 1 || len(fa.cmds) != 3 {
		t.Errorf("headers %v after %d calls", out.Headers, len(fa.cmds))
	}
	want := "curl --json --timeout 10s http://userservice." + ns + ".svc.cluster.local:8080/login?password=bankofanthos&username=testuser"
	for i, c := range fa.cmds {
		if got := strings.Join(c, " "); got != want {
			t.Errorf("command %d: %q\nwant %q", i, got, want)
		}
	}
	if tg.Headers != nil {
		t.Error("Login must not modify its argument")
	}

	// A scenario's login, not defaulted (Login applies scenario's defaults): a cookie capture sent back as that
	// cookie; a header capture into another header through the template; existing headers kept.
	app := target.Target{App: scenario.AppManifests, Namespaces: []string{"shop"}, EntryNamespace: "shop", ClusterDomain: "cluster.local",
		Headers: map[string]string{"X-Load": "1"}}
	for _, tc := range []struct {
		spec   scenario.Login
		answer string
		header string
		want   string
	}{
		{scenario.Login{Service: "web", Method: "POST", Body: "u=a", Capture: "cookie:sid", Timeout: scenario.D(time.Second)},
			`{"status": 302, "headers": {"Location": ["/"], "Set-Cookie": ["sid=abc; HttpOnly"]}}`, "Cookie", "sid=abc"},
		{scenario.Login{Service: "web", Capture: "header:X-Token", SetHeader: "Authorization", Value: "Bearer {value}", Timeout: scenario.D(time.Second)},
			`{"status": 200, "headers": {"X-Token": ["t0k"]}}`, "Authorization", "Bearer t0k"},
		{scenario.Login{Service: "web", Capture: "json:auth.jwt", SetHeader: "X-Jwt", Timeout: scenario.D(time.Second)},
			`{"status": 201, "headers": {}, "body": "{\"auth\": {\"jwt\": \"j\"}}"}`, "X-Jwt", "j"},
	} {
		fa := &fakeAgent{answers: []func() ([]byte, error){answer(`{"status": 503, "headers": {}, "body": "upstream connect error"}`, nil), answer(tc.answer, nil)}}
		got, err := login(context.Background(), fa.exec, app, tc.spec, time.Millisecond)
		if err != nil || got.Headers[tc.header] != tc.want || got.Headers["X-Load"] != "1" || len(got.Headers) != 2 || len(fa.cmds) != 2 {
			t.Errorf("%s: headers %v, %v after %d calls; want %s: %s", tc.spec.Capture, got.Headers, err, len(fa.cmds), tc.header, tc.want)
		}
	}
}

func TestLoginFailures(t *testing.T) {
	t.Parallel()
	tg, _ := boaTarget(t, boaScenario, 0)
	boa := *LoginFor(tg.App, nil)
	boa.Timeout = scenario.D(50 * time.Millisecond)
	for _, tc := range []struct {
		name    string
		answer  func() ([]byte, error)
		calls   func(int) bool
		errText []string
	}{
		// A 200 without the captured field will not get better: no retry, and the field is named.
		{"200 without the field", answer(`{"status": 200, "body": "{\"msg\": \"welcome\"}"}`, nil), func(n int) bool { return n == 1 },
			[]string{"log in to bank-of-anthos (GET http://userservice.", ":8080/login?... from a load client pod, attempts: 1)", `answered 200 without json:token: field "token" missing`}},
		// A status that persists: retried until the budget is spent, then named with the last answer.
		{"401 until the deadline", answer(`{"status": 401, "body": "invalid login"}`, nil), func(n int) bool { return n > 1 },
			[]string{"timed out after 50ms", `answered 401: "invalid login"`}},
		{"exec fails until the deadline", answer("", errors.New(`unknown subcommand "curl"`)), func(n int) bool { return n > 1 },
			[]string{"timed out after 50ms", `unknown subcommand "curl"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fa := &fakeAgent{answers: []func() ([]byte, error){tc.answer}}
			_, err := login(context.Background(), fa.exec, tg, boa, 5*time.Millisecond)
			if err == nil || !tc.calls(len(fa.cmds)) {
				t.Fatalf("err %v after %d calls", err, len(fa.cmds))
			}
			for _, s := range tc.errText {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("err %q, want it to contain %q", err, s)
				}
			}
			if strings.Contains(err.Error(), "bankofanthos") {
				t.Errorf("the password is in the error: %v", err)
			}
		})
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	fa := &fakeAgent{answers: []func() ([]byte, error){answer("", context.Canceled)}}
	if _, err := login(ctx, fa.exec, tg, boa, time.Minute); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	if _, err := Login(context.Background(), nil, tg, boa); err == nil {
		t.Error("no agent exec must be an error")
	}
	none := &fakeAgent{}
	if _, err := Login(context.Background(), none.exec, tg, scenario.Login{Service: "web", Capture: "query:x"}); err == nil || len(none.cmds) != 0 {
		t.Errorf("bad capture: %v after %d commands", err, len(none.cmds))
	}
}

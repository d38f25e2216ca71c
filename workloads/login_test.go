package workloads

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

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

// Login runs `meshbench-agent curl --json` in a load client pod against userservice's FQDN (multi topology: the
// userservice is in another namespace than the entry) and retries while userservice is unreachable or not ready.
func TestLoginFromInsideTheMesh(t *testing.T) {
	t.Parallel()
	s := mustScenario(t, boaScenario)
	_, target, err := Objects(s, s.Spec.Workload.Topologies[1], "r1")
	if err != nil {
		t.Fatal(err)
	}
	ns := ""
	for _, w := range target.Workloads {
		if w.Name == BoAUserService {
			ns = w.Namespace
		}
	}
	if ns == "" || ns == target.EntryNamespace {
		t.Fatalf("userservice in %q, entry in %q: the test wants a multi-namespace topology", ns, target.EntryNamespace)
	}
	fa := &fakeAgent{answers: []func() ([]byte, error){
		answer("", errors.New("command terminated with exit code 1 (stderr: connection refused)")),
		answer(`{"status": 500, "headers": {}, "body": "failed to retrieve user information", "durationSeconds": 0.01}`, nil),
		answer(`{"status": 200, "headers": {"Content-Type": ["application/json"]}, "body": "{\"token\": \"eyJhbGciOiJSUzI1NiJ9.e30.sig\"}\n", "durationSeconds": 0.02}`, nil),
	}}
	out, err := login(context.Background(), fa.exec, target, 30*time.Second, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if out.Headers["Cookie"] != "token=eyJhbGciOiJSUzI1NiJ9.e30.sig" || len(fa.cmds) != 3 {
		t.Errorf("headers %v after %d calls", out.Headers, len(fa.cmds))
	}
	want := "curl --json --timeout 10s http://userservice." + ns + ".svc.cluster.local:8080/login?password=bankofanthos&username=testuser"
	for i, c := range fa.cmds {
		if got := strings.Join(c, " "); got != want {
			t.Errorf("command %d: %q\nwant %q", i, got, want)
		}
	}
	if target.Headers != nil {
		t.Error("Login must not modify its argument")
	}

	// Another cluster DNS domain: userservice's FQDN uses the target's domain (spec.workload.clusterDomain).
	custom := mustScenario(t, strings.Replace(boaScenario, "    replicas: 2\n", "    replicas: 2\n    clusterDomain: corp.internal\n", 1))
	_, ct, err := Objects(custom, custom.Spec.Workload.Topologies[0], "r1")
	if err != nil {
		t.Fatal(err)
	}
	u, err := loginURL(ct)
	if want := "http://userservice." + ct.EntryNamespace + ".svc.corp.internal:8080/login?password=bankofanthos&username=testuser"; err != nil || u.String() != want {
		t.Errorf("login URL %v, %v; want %s", u, err, want)
	}
	if ct.ClusterDomain != "corp.internal" {
		t.Errorf("target cluster domain %q", ct.ClusterDomain)
	}
}

func TestLoginFailures(t *testing.T) {
	t.Parallel()
	s := mustScenario(t, boaScenario)
	_, target, err := Objects(s, s.Spec.Workload.Topologies[0], "r1")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		answer  func() ([]byte, error)
		calls   func(int) bool
		errText string
	}{
		// A 200 without a token will not get better: no retry.
		{"200 without token", answer(`{"status": 200, "body": "<html>login</html>"}`, nil), func(n int) bool { return n == 1 }, "without a token"},
		// Wrong password or a status that persists: retried until the budget is spent, then named.
		{"401 until the deadline", answer(`{"status": 401, "body": "invalid login"}`, nil), func(n int) bool { return n > 1 }, `answered 401: "invalid login"`},
		{"exec fails until the deadline", answer("", errors.New(`unknown subcommand "curl"`)), func(n int) bool { return n > 1 }, `unknown subcommand "curl"`},
		{"not curl output", answer("meshbench-agent: usage", nil), func(n int) bool { return n > 1 }, "decode meshbench-agent curl output"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fa := &fakeAgent{answers: []func() ([]byte, error){tc.answer}}
			_, err := login(context.Background(), fa.exec, target, 50*time.Millisecond, 5*time.Millisecond)
			if err == nil || !strings.Contains(err.Error(), tc.errText) || !tc.calls(len(fa.cmds)) {
				t.Errorf("err %v after %d calls, want one containing %q", err, len(fa.cmds), tc.errText)
			}
		})
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	fa := &fakeAgent{answers: []func() ([]byte, error){answer("", context.Canceled)}}
	if _, err := login(ctx, fa.exec, target, time.Minute, time.Minute); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	if _, err := Login(context.Background(), nil, target, time.Second); err == nil {
		t.Error("no agent exec must be an error for bank-of-anthos")
	}

	// fortio-chain needs no login and runs nothing.
	chain := mustScenario(t, chainScenario)
	_, ct, _ := Objects(chain, chain.Spec.Workload.Topologies[0], "r1")
	none := &fakeAgent{}
	if got, err := Login(context.Background(), none.exec, ct, time.Second); err != nil || got.Headers != nil || ct.App != scenario.AppFortioChain || len(none.cmds) != 0 {
		t.Errorf("chain login: %v %v, %d commands", got.Headers, err, len(none.cmds))
	}
}

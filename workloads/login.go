package workloads

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/scenario"
)

// AgentExec runs `meshbench-agent args...` from inside the mesh (the cmd layer wires it to a load client pod of the
// app's entry namespace, which runs in the case's data-plane mode) and returns its stdout. A non-zero exit is an
// error.
type AgentExec func(ctx context.Context, args []string) (stdout []byte, err error)

// Bank of Anthos login facts (v0.6.10): userservice's Service port "http" and the cookie the frontend reads the
// token from (frontend.py TOKEN_NAME).
const (
	boaUserServicePort = 8080
	boaTokenCookie     = "token"
)

// Login prepares the load headers of the target. For bank-of-anthos it logs the demo user in from inside the mesh
// (agent runs `meshbench-agent curl --json` in a load client pod: GET http://userservice.<ns>.svc.cluster.local:8080
// /login?username=testuser&password=bankofanthos, so the request passes the data plane like the load does, and is
// accepted under STRICT mTLS) and returns the target with Headers {"Cookie": "token=<JWT>"}, which the frontend
// reads on /home. For other apps it returns the target unchanged. Userservice answers 500 or is unreachable until its
// database is up, so Login retries until ctx ends or timeout passes.
func Login(ctx context.Context, agent AgentExec, t Target, timeout time.Duration) (Target, error) {
	return login(ctx, agent, t, timeout, 2*time.Second)
}

func login(ctx context.Context, agent AgentExec, t Target, timeout, retry time.Duration) (Target, error) {
	if t.App != scenario.AppBankOfAnthos {
		return t, nil
	}
	if agent == nil {
		return t, errors.New("log in to bank-of-anthos: no way to run meshbench-agent in a load client pod")
	}
	u, err := loginURL(t)
	if err != nil {
		return t, fmt.Errorf("log in to bank-of-anthos: %w", err)
	}
	args := []string{"curl", "--json", "--timeout", "10s", u.String()}
	var (
		res      Target
		lastErr  error
		attempts int
	)
	err = kube.Wait{Timeout: timeout, Interval: retry}.Until(ctx, func(ctx context.Context) (bool, error) {
		attempts++
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		out, err := agent(cctx, args)
		cancel()
		if err == nil {
			var token string
			if token, err = loginToken(out); err == nil {
				res = t
				res.Headers = kube.MergeLabels(t.Headers, map[string]string{"Cookie": boaTokenCookie + "=" + token})
				return true, nil
			}
			if errors.Is(err, errBadLoginBody) {
				return false, err // retrying does not help
			}
		}
		lastErr = err // userservice not up yet: retried
		return false, nil
	})
	switch {
	case err == nil:
		return res, nil
	case errors.Is(err, errBadLoginBody):
		return t, fmt.Errorf("log in to bank-of-anthos as %s: %w", BoAUsername, err)
	case errors.Is(err, kube.ErrWaitTimeout) && lastErr != nil:
		err = fmt.Errorf("%w after %s: %w", err, timeout, lastErr)
	}
	return t, fmt.Errorf("log in to bank-of-anthos as %s (GET %s from a load client pod, %d attempts): %w", BoAUsername, u.Redacted(), attempts, err)
}

// loginURL is userservice's /login URL with the demo user's credentials. The host is userservice's FQDN in the
// target's cluster DNS domain.
func loginURL(t Target) (*url.URL, error) {
	ns := ""
	for _, w := range t.Workloads {
		if w.Name == BoAUserService {
			ns = w.Namespace
		}
	}
	if ns == "" {
		return nil, fmt.Errorf("no %s in the target", BoAUserService)
	}
	domain := t.ClusterDomain
	if domain == "" {
		domain = ClusterDomain
	}
	return &url.URL{Scheme: "http", Host: FQDN(BoAUserService, ns, domain) + ":" + strconv.Itoa(boaUserServicePort), Path: "/login",
		RawQuery: url.Values{"username": {BoAUsername}, "password": {BoAPassword}}.Encode()}, nil
}

// errBadLoginBody marks a 200 answer without a token: retrying does not help.
var errBadLoginBody = errors.New("userservice answered 200 without a token")

// loginToken reads `meshbench-agent curl --json` output ({status, headers, body, durationSeconds}) of the /login
// request and returns the token. A status other than 200 is an error to retry.
func loginToken(out []byte) (string, error) {
	var r struct {
		Status int    `json:"status"`
		Body   string `json:"body"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		return "", fmt.Errorf("decode meshbench-agent curl output %q: %w", truncate(string(out), 200), err)
	}
	if r.Status != 200 {
		return "", fmt.Errorf("userservice answered %d: %q", r.Status, truncate(r.Body, 200))
	}
	token, err := ParseLoginResponse([]byte(r.Body))
	if err != nil {
		return "", fmt.Errorf("%w: %w", errBadLoginBody, err)
	}
	return token, nil
}

// ParseLoginResponse extracts the JWT from userservice's /login answer ({"token": "<jwt>"}).
func ParseLoginResponse(body []byte) (string, error) {
	var r struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return "", fmt.Errorf("decode /login response %q: %w", truncate(string(body), 200), err)
	}
	if r.Token == "" {
		return "", fmt.Errorf("/login response has no token: %q", truncate(string(body), 200))
	}
	return r.Token, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// Login is the package Login with a 3-minute budget.
func (d *Deployer) Login(ctx context.Context, t Target, agent AgentExec) (Target, error) {
	return Login(ctx, agent, t, 3*time.Minute)
}

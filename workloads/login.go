package workloads

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/scenario"
)

// Login prepares the load headers of the target. For bank-of-anthos it logs the demo user in: GET
// userservice /login?username=testuser&password=bankofanthos through the API server's services/proxy subresource
// (no port-forward), and returns the target with Headers {"Cookie": "token=<JWT>"}, which the frontend reads on
// /home. For other apps it returns the target unchanged. Userservice answers 503 until its database is seeded, so
// Login retries until ctx ends or timeout passes.
func Login(ctx context.Context, kc kubernetes.Interface, t Target, timeout time.Duration) (Target, error) {
	if t.App != scenario.AppBankOfAnthos {
		return t, nil
	}
	ns := ""
	for _, w := range t.Workloads {
		if w.Name == BoAUserService {
			ns = w.Namespace
		}
	}
	if ns == "" {
		return t, fmt.Errorf("log in to bank-of-anthos: no %s in the target", BoAUserService)
	}
	params := map[string]string{"username": BoAUsername, "password": BoAPassword}
	deadline := time.Now().Add(timeout)
	for attempt := 1; ; attempt++ {
		cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		body, err := kube.ProxyGet(cctx, kc, "services", ns, BoAUserService+":http", "/login", params)
		cancel()
		if err == nil {
			token, perr := ParseLoginResponse(body)
			if perr != nil {
				return t, fmt.Errorf("log in to bank-of-anthos as %s: %w", BoAUsername, perr)
			}
			out := t
			out.Headers = kube.MergeLabels(t.Headers, map[string]string{"Cookie": "token=" + token})
			return out, nil
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return t, fmt.Errorf("log in to bank-of-anthos as %s (userservice in %s, %d attempts): %w", BoAUsername, ns, attempt, err)
		}
		select {
		case <-ctx.Done():
			return t, ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
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

// Login is the package Login with the Deployer's clients and a 3-minute budget.
func (d *Deployer) Login(ctx context.Context, t Target) (Target, error) {
	if d.Clients == nil {
		return t, fmt.Errorf("log in: no Kubernetes clients")
	}
	return Login(ctx, d.Clients.Kube, t, 3*time.Minute)
}

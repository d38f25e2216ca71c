package orchestrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/internal/target"
	"github.com/meshbench/meshbench/loadgen"
	"github.com/meshbench/meshbench/mesh"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

// ApplyVariant puts variant name on t in mode and verifies it (runner.VariantApplier): the proxies it configures took
// it, and an mTLS setting is the namespaces' effective mode.
func (a *meshAdapter) ApplyVariant(ctx context.Context, t target.Target, mode scenario.Mode, name string) (map[results.FactKey]string, error) {
	v := a.spec.VariantNamed(name)
	if v == nil {
		return nil, fmt.Errorf("no variant %q in spec.variants", name)
	}
	facts := map[results.FactKey]string{results.FactVariant: v.Describe()}
	if !v.MeshFeatures() {
		// Load settings only: nothing to put on the mesh; the load's own record proves them (checkLoadShape).
		return facts, nil
	}
	if v.Tracing != nil {
		if err := a.prepareTracing(ctx, t); err != nil {
			return facts, err
		}
	}
	proof, err := a.sw.ApplyVariant(ctx, t, mode, *v, a.wp)
	a.variantProxies = proof.Proxies
	var said []string
	if len(proof.Proxies) > 0 {
		said = append(said, fmt.Sprintf("%d proxies took a listener update within %s, none rejected it", len(proof.Proxies), proof.Elapsed.Round(time.Millisecond)))
	} else {
		said = append(said, fmt.Sprintf("%d objects created; no Envoy proxy enforces it in mode %s (ztunnel), whose receipt is not read", proof.Objects, mode))
	}
	if len(proof.Accepted) > 0 {
		said = append(said, "istiod: "+strings.Join(proof.Accepted, ", "))
	}
	if err == nil && v.Authorization != nil && v.Authorization.Layer == scenario.AuthzL7 && a.probe != nil {
		var refused string
		if refused, err = denyProbe(ctx, a.probe, t, mode, probeWait); refused != "" {
			said = append(said, refused)
		}
	}
	if err == nil && v.Tracing != nil {
		var traced string
		if traced, err = a.proveTracing(ctx, t, mode); traced != "" {
			said = append(said, traced)
		}
		if err == nil {
			a.tracing = v.Tracing
		}
	}
	if err == nil && v.MTLS != "" {
		ms, derr := a.detectMTLS(ctx, t.Namespaces, mode)
		if err = derr; err == nil {
			err = mesh.CheckMTLS(ms, v.MTLS)
			said = append(said, "mTLS "+mesh.SummarizeMTLS(ms))
		}
	}
	facts[results.FactVariantProof] = strings.Join(said, "; ")
	return facts, err
}

// RemoveVariant deletes every variant object from t and waits until the proxies the variant reached took the change.
// The proxies are forgotten even when that wait fails: the objects are gone, and a second call (the runner retries at
// the next switch) finds nothing to delete and does not wait again.
func (a *meshAdapter) RemoveVariant(ctx context.Context, t target.Target) error {
	err := a.sw.RemoveVariant(ctx, t, a.variantProxies)
	a.variantProxies, a.tracing = nil, nil
	return err
}

// variantLoad is the load settings of the variant named name in spec s (nil for the plain mode or a variant without
// any).
func variantLoad(s *scenario.Spec, name string) *scenario.VariantLoad {
	if v := s.VariantNamed(name); v != nil {
		return v.Load
	}
	return nil
}

// checkLoadShape proves from the load's record that a variant's load settings took effect: without keep-alive at
// least one socket per request of the http clients; with HTTP/2 every answer of theirs (all but connection errors)
// came back as HTTP/2. It says what it saw. It is pure.
func checkLoadShape(vl scenario.VariantLoad, res loadgen.Result) (string, error) {
	var requests, failed, sockets, h2 int64
	for _, c := range res.Clients {
		if c.Protocol != "" && c.Protocol != loadgen.ProtocolHTTP {
			continue
		}
		for code, n := range c.Codes {
			requests += n
			if code < 0 {
				failed += n
			}
		}
		sockets += c.Sockets
		h2 += c.HTTP2Responses
	}
	if requests == 0 {
		return "", errors.New("the load sent no http request to check its settings on")
	}
	var said []string
	if vl.NoKeepAlive() {
		if sockets < requests {
			return "", fmt.Errorf("keepAlive false: %d sockets for %d http requests, want one per request", sockets, requests)
		}
		said = append(said, fmt.Sprintf("%d sockets for %d http requests", sockets, requests))
	}
	if vl.HTTP == scenario.HTTP2 {
		if answered := requests - failed; h2 < answered || answered == 0 {
			return "", fmt.Errorf("http 2: %d of %d answers came back as HTTP/2", h2, answered)
		}
		// The count includes fortio's first call on each connection, which its results leave out.
		said = append(said, fmt.Sprintf("all %d answers HTTP/2 (%d HTTP/2 responses counted, first calls included)", requests-failed, h2))
	}
	if vl.PayloadBytes != nil {
		said = append(said, fmt.Sprintf("every http request carried a %d-byte body", *vl.PayloadBytes))
	}
	return strings.Join(said, "; "), nil
}

// probeFunc sends one GET to url, with headers ("Name: value"), from a load client pod of t in mode and returns the
// answer's status (loadAdapter.probe).
type probeFunc func(ctx context.Context, t target.Target, mode scenario.Mode, url string, headers ...string) (int, error)

// probeWait bounds the deny probe: the proxies already took the policy (waitPushed), so the first answer is
// normally the refusal.
const probeWait = 15 * time.Second

// denyProbe proves that an L7 authorization variant is enforced on the path the load takes: a request to
// mesh.VariantProbePath, the one path its allowing rule leaves out, on the first http load target must be refused
// with 403 (Envoy's RBAC filter) within wait. It says what it saw.
func denyProbe(ctx context.Context, probe probeFunc, t target.Target, mode scenario.Mode, wait time.Duration) (string, error) {
	u, ok := probeURL(t)
	if !ok {
		return "", nil
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var status int
	var last error
	err := kube.Wait{Interval: 500 * time.Millisecond}.Until(wctx, func(ctx context.Context) (bool, error) {
		status, last = probe(ctx, t, mode, u)
		return last == nil && status == http.StatusForbidden, nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return "", err
		}
		return "", fmt.Errorf("the L7 rules are not enforced: GET %s answered %d, want 403 from the proxy's RBAC filter (last error: %v)", u, status, last)
	}
	return fmt.Sprintf("GET %s refused (403)", mesh.VariantProbePath), nil
}

// probeURL is the first http load target's URL with mesh.VariantProbePath as its path and no query; ok is false when
// the load has no http target. It is pure.
func probeURL(t target.Target) (string, bool) {
	for _, lt := range t.LoadTargetsOrEntry() {
		if lt.Protocol != scenario.ProtocolHTTP && lt.Protocol != "" {
			continue
		}
		u, err := url.Parse(lt.URL)
		if err != nil {
			continue
		}
		u.Path, u.RawPath, u.RawQuery, u.Fragment = mesh.VariantProbePath, "", "", ""
		return u.String(), true
	}
	return "", false
}

// probe is probeFunc through a load client pod of t in mode: `meshbench-agent curl --json`, which exits 0 on any
// HTTP answer.
func (a *loadAdapter) probe(ctx context.Context, t target.Target, mode scenario.Mode, u string, headers ...string) (int, error) {
	args := []string{"curl", "--json", "--timeout", probeRequestTimeout.String()}
	for _, h := range headers {
		args = append(args, "-H", h)
	}
	out, err := a.c.ExecAgent(ctx, t.EntryNamespace, mode, append(args, u))
	if err != nil {
		return 0, err
	}
	var r struct {
		Status int `json:"status"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		return 0, fmt.Errorf("decode meshbench-agent curl output: %w", err)
	}
	return r.Status, nil
}

// probeRequestTimeout bounds one probe request.
const probeRequestTimeout = 5 * time.Second

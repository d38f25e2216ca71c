package cni

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/meshbench/meshbench/internal/kube"
	"github.com/meshbench/meshbench/internal/nettool"
	"github.com/meshbench/meshbench/results"
	"github.com/meshbench/meshbench/scenario"
)

// Measurement is what Measure ran for one case.
type Measurement struct {
	// Window is the case's resource window (see caseWindow); zero when no sample succeeded.
	Window results.Window
	// SampleWindows are the samples' own windows (exactly around each exec), recorded with the case.
	SampleWindows []results.Window
	Samples       []results.Sample
	// Facts: the case's labels, client, server, target and backend, raw.<n> (raw output paths).
	Facts map[string]string
	// Warnings are the samples' warnings (results.CaseResult.SampleWarnings).
	Warnings []string
	// Ran and Failed count samples; Partial is why the failed ones failed when others succeeded.
	Ran, Failed int
	Partial     string
}

// Measure runs the samples of one case back to back (one resource window covers them) and keeps their raw output. A
// sample interrupted by ctx is not a measurement. The error says why the case measured nothing (a broken pod, no
// sample ran, every sample failed); the Measurement then still holds what the samples left.
func (r *Bench) Measure(ctx context.Context, pc scenario.Case) (Measurement, error) {
	c, ok := r.caseOf(pc.ID)
	if !ok {
		return Measurement{}, fmt.Errorf("case %s is not in the bench's plan", pc.ID)
	}
	m := Measurement{Facts: c.labels()}
	if err := r.caseBroken(c); err != nil {
		return m, err
	}
	tg := r.target(c)
	maps.Copy(m.Facts, tg.facts())
	r.d.Log.Info("running", "case", c.id(), "tool", c.Tool, "samples", r.cfg.CNI.Samples, "duration", r.cfg.CNI.Duration.Duration)
	start := r.d.Clock.Now()
	var outs []outcome
	for n := 1; n <= r.cfg.CNI.Samples; n++ {
		o, w, raw := r.sample(ctx, c, tg, n)
		if ctx.Err() != nil && o.Err != nil {
			break // an interrupted sample is not a measurement
		}
		outs = append(outs, o)
		m.SampleWindows = append(m.SampleWindows, w)
		if raw != "" {
			m.Facts["raw."+strconv.Itoa(n)] = raw
		}
		if o.Result != nil {
			m.Samples = append(m.Samples, measurementSamples(c, n, w, *o.Result)...)
		} else {
			m.Failed++
		}
	}
	end := r.d.Clock.Now()
	m.Ran = len(outs)
	status, reason, warnings := caseStatus(outs)
	if len(m.Samples) > 0 {
		w, noCPU := r.caseWindow(start, end)
		m.Window = *w
		if noCPU != "" {
			warnings = append(warnings, noCPU)
			r.cpuLeftOut = append(r.cpuLeftOut, c.id())
			r.noCPU[c.id()] = noCPU
		}
	}
	m.Warnings = warnings
	switch status {
	case rowFailed:
		return m, errors.New(reason)
	case rowPartial:
		m.Partial = reason
	}
	return m, nil
}

// caseBroken says why a case cannot run although it was planned (a pod it needs is broken).
func (r *Bench) caseBroken(c pathTest) error {
	var errs []error
	for _, role := range r.rolesOf(c) {
		if err := r.broken[role]; err != nil {
			errs = append(errs, fmt.Errorf("pod %s: %w", role, err))
		} else if r.pods[role] == nil {
			errs = append(errs, fmt.Errorf("pod %s was not deployed", role))
		}
	}
	if c.Path == scenario.CNIPathService && r.service == nil {
		errs = append(errs, errors.New("the Service was not created"))
	}
	if c.Tool == "" {
		errs = append(errs, errors.New("no tool for the test"))
	}
	return errors.Join(errs...)
}

// rolesOf are the pods a case uses: client first, server second.
func (r *Bench) rolesOf(c pathTest) []Role {
	client := RoleClient
	if c.Tool == nettool.ToolBuiltin {
		client = RoleClientAgent
	}
	switch c.Path {
	case scenario.CNIPathSameNode:
		return []Role{client, RoleServerLocal}
	case scenario.CNIPathHost:
		return []Role{RoleHostClient, RoleHostServer}
	default:
		return []Role{client, RoleServerRemote}
	}
}

// target is where a case's client runs and what it connects to.
type target struct {
	client    Role
	container string
	host      string
	ports     ports
	expect    expect
	server    Role
}

func (t target) facts() map[string]string {
	return map[string]string{"client": string(t.client), "server": string(t.server), "target": t.host,
		"backend": t.expect.Backend}
}

func (r *Bench) target(c pathTest) target {
	roles := r.rolesOf(c)
	t := target{client: roles[0], server: roles[1], container: containerNet, ports: podPorts}
	if c.Tool == nettool.ToolBuiltin {
		t.container = containerAgent
	}
	server := r.pods[t.server]
	t.host = server.Status.PodIP
	t.expect = expect{Dialled: server.Status.PodIP, Backend: server.Status.PodIP}
	switch c.Path {
	case scenario.CNIPathService:
		t.host = r.service.Spec.ClusterIP
		t.expect = expect{Dialled: r.service.Spec.ClusterIP, Backend: server.Status.PodIP, Service: true}
	case scenario.CNIPathHost:
		t.ports = hostPorts
	}
	return t
}

// spec is the internal/nettool invocation of one case.
func (r *Bench) spec(c pathTest, t target) nettool.Spec {
	n := r.cfg.CNI
	s := nettool.Spec{Test: c.Test, Tool: c.Tool, Host: t.host, Duration: n.Duration.Duration, Omit: n.Omit.Duration,
		Streams: n.Streams, Bitrate: n.UDPBitrate, PacketBytes: n.UDPPacketBytes, RequestBytes: n.RequestBytes,
		ResponseBytes: n.ResponseBytes, Connections: 1}
	switch c.Tool {
	case nettool.ToolIperf3:
		s.Port, s.ServerOutput = t.ports.Iperf3, true
	case nettool.ToolNetperf:
		s.Port, s.DataPort = t.ports.Netserver, t.ports.NetperfData
	case nettool.ToolBuiltin:
		s.Port = t.ports.Echo
		s.LocalPorts = crrLocalPorts[c.Path]
	}
	return s
}

// crrLocalPorts keep the built-in TCP_CRR client's ports of the cross-node and service paths apart: both reach
// server-remote from the same client pod, and a DNATed connection whose reply tuple equals a direct one still in
// conntrack TIME_WAIT is dropped (insert_failed), which shows up as 1 s SYN retransmits in the Service cell.
var crrLocalPorts = map[scenario.CNIPath]string{
	scenario.CNIPathCrossNode: "33000-48999",
	scenario.CNIPathService:   "49000-64999",
}

// connectRetries is how often a sample whose connection could not even be set up is retried (kube-proxy rules
// still syncing, an iperf3 server finishing the previous test). Nothing was measured, so retrying is safe.
const connectRetries = 3

// sample runs sample n of a case: exec, keep the raw output, parse, check the connection.
func (r *Bench) sample(ctx context.Context, c pathTest, t target, n int) (outcome, results.Window, string) {
	spec := r.spec(c, t)
	if err := spec.Validate(); err != nil {
		return outcome{N: n, Err: err}, results.Window{Kind: results.WindowTest}, ""
	}
	args := nettool.Args(spec)
	var (
		w      results.Window
		stdout []byte
		res    nettool.Result
		raw    string
	)
	// A pause interrupted by ctx ends the retries: another exec would only fail with the context's error and
	// overwrite the raw output of the attempt that really failed.
	retry := kube.Retry{Backoff: kube.Backoff{Initial: 2 * time.Second}, Attempts: connectRetries, Retryable: retryable, Clock: r.d.Clock,
		OnRetry: func(attempt int, err error) {
			r.d.Log.Warn("connection setup failed, retrying", "case", c.id(), "sample", n, "attempt", attempt, "err", err)
		}}
	_, err := retry.Do(ctx, func() error {
		var err error
		w, stdout, err = r.execTest(ctx, t, args, spec)
		raw = r.keepRaw(ctx, c, n, spec.Tool, stdout, err)
		if err == nil {
			res, err = nettool.Parse(spec, stdout)
		}
		return err
	})
	if err != nil {
		return outcome{N: n, Err: err}, w, raw
	}
	if err := checkConnection(res, t.expect); err != nil {
		return outcome{N: n, Err: fmt.Errorf("the connection did not take the %s path: %w", c.Path, err)}, w, raw
	}
	return outcome{N: n, Result: &res}, w, raw
}

// execTest runs the tool and returns the test window (exactly around the exec). Output that parses wins over the
// exec error: iperf3 exits 1 on failures but explains them in its JSON.
func (r *Bench) execTest(ctx context.Context, t target, args []string, spec nettool.Spec) (results.Window, []byte, error) {
	timeout := spec.Duration + spec.Omit + time.Minute
	ectx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := r.d.Clock.Now()
	stdout, stderr, err := r.d.Exec.Exec(ectx, r.cfg.Namespace, string(t.client), t.container, args, nil)
	w := results.Window{Kind: results.WindowTest, Start: start.UTC(), End: r.d.Clock.Now().UTC()}
	if err != nil {
		if _, perr := nettool.Parse(spec, stdout); perr != nil {
			// The tool's own explanation first (iperf3 JSON error, netperf message), then the exec error.
			msg := strings.TrimSpace(string(stderr))
			if len(stdout) > 0 {
				return w, stdout, nettool.ClassifyStderr(spec.Tool, stderr, fmt.Errorf("%w (exec: %v)", perr, err))
			}
			if msg != "" {
				return w, stdout, nettool.ClassifyStderr(spec.Tool, stderr, fmt.Errorf("%s: %w", oneLine(msg, 300), err))
			}
			return w, stdout, err
		}
	}
	return w, stdout, nil
}

// retryable tells connection-setup failures (nothing measured) from measurement failures, on the error's type:
// internal/nettool reads the tool's report once and marks a connection that was never set up as a *SetupError; an
// exec that could not reach its pod (connection refused, no route on the way to the kubelet) measured nothing too.
func retryable(err error) bool {
	return nettool.IsSetupFailure(err) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH)
}

// keepRaw keeps the raw output of a sample's exec under the name that says what it is (rawOutput, rawName) and
// returns its path relative to the run directory ("" when nothing was kept).
func (r *Bench) keepRaw(ctx context.Context, c pathTest, n int, tool nettool.Tool, stdout []byte, execErr error) string {
	if r.cfg.RunDir == "" {
		return ""
	}
	kind, data, keep := rawOutput(tool, stdout, execErr, ctx.Err() != nil)
	if !keep {
		return ""
	}
	rel, err := writeRaw(r.cfg.RunDir, c.Path, c.Test, n, kind, data)
	if err != nil {
		r.d.Log.Warn("keep raw output", "err", err)
	}
	return rel
}

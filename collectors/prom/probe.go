package prom

import (
	"context"
	"fmt"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// CAdvisorQuery is the preflight query: one series per app container, with the pod and container labels meshbench
// attributes resource usage by.
const CAdvisorQuery = `count by (namespace,pod,container)(container_memory_working_set_bytes{container!="",container!="POD"})`

// Probe is what ProbeCAdvisor found.
type Probe struct {
	Address string `json:"address"`
	// Series is the number of (namespace, pod, container) cAdvisor series.
	Series int `json:"series"`
	// Labelled is how many of them carry non-empty pod and container labels.
	Labelled int      `json:"labelled"`
	Warnings []string `json:"warnings,omitempty"`
}

// ProbeCAdvisor runs CAdvisorQuery once with timeout (0 = 30 s), through the collector's own client, without its
// retries: preflight must answer quickly when Prometheus is down. The error says Prometheus could not be queried.
func ProbeCAdvisor(ctx context.Context, c ClientConfig, timeout time.Duration) (Probe, error) {
	addr, err := c.Address()
	if err != nil {
		return Probe{}, err
	}
	out := Probe{Address: addr}
	api, err := NewAPI(c)
	if err != nil {
		return out, err
	}
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	qctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	val, warns, _, err := api.Query(qctx, CAdvisorQuery, time.Now(), promv1.WithTimeout(timeout))
	out.Warnings = append(out.Warnings, warns...)
	if err != nil {
		return out, fmt.Errorf("query Prometheus at %s: %w", addr, err)
	}
	vec, ok := val.(model.Vector)
	if !ok {
		return out, fmt.Errorf("query Prometheus at %s: unexpected result type %s", addr, val.Type())
	}
	out.Series = len(vec)
	for _, s := range vec {
		if s.Metric["pod"] != "" && s.Metric["container"] != "" {
			out.Labelled++
		}
	}
	return out, nil
}

package app

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/meshbench/meshbench/results"
)

// printValue writes v as JSON or YAML, or the human text from table() for -o table.
func printValue(w io.Writer, format string, v any, table func() string) error {
	switch format {
	case "json":
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return fmt.Errorf("encode JSON: %w", err)
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	case "yaml":
		b, err := yaml.Marshal(v)
		if err != nil {
			return fmt.Errorf("encode YAML: %w", err)
		}
		_, err = w.Write(b)
		return err
	case "table", "":
		_, err := io.WriteString(w, table())
		return err
	default:
		return badInput(fmt.Errorf("--output %q: use table, json or yaml", format))
	}
}

// sidecarCostBrief is the end-of-run note of the workloads whose sidecars cost the most CPU in sidecar mode, the top
// n per topology and load level (results.SidecarCosts), with their app CPU and what the mesh changed of their total
// CPU against mode none; "" without per-workload figures. The report's "Per workload" section has them all.
func sidecarCostBrief(sum results.Summary, n int) string {
	var b strings.Builder
	type group struct{ topo, load string }
	shown := map[group]int{}
	for _, c := range results.SidecarCosts(sum) {
		g := group{c.Topology, c.Load}
		if shown[g] == n {
			continue
		}
		if shown[g] == 0 {
			fmt.Fprintf(&b, "top workloads by sidecar CPU in sidecar mode (%s, load %s qps):\n", c.Topology, c.Load)
		}
		shown[g]++
		fmt.Fprintf(&b, "  %s: sidecar %.4g %s", c.Workload, c.SidecarCPU, c.CPUUnit)
		if c.AppCPU != nil {
			fmt.Fprintf(&b, ", app %.4g", *c.AppCPU)
		}
		if d := c.TotalCPUDelta; d != nil && d.Percent != nil {
			fmt.Fprintf(&b, ", total CPU %+.1f %% vs none", *d.Percent)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

package cni

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/meshbench/meshbench/internal/nettool"
	"github.com/meshbench/meshbench/results"
)

// Row statuses.
const (
	RowOK      = results.CNIRowOK
	rowPartial = results.CNIRowPartial // some samples failed
	rowFailed  = results.CNIRowFailed
	rowSkipped = results.CNIRowSkipped
)

// Report is what `meshbench cni` prints (-o table|json|yaml|csv).
type Report struct {
	RunID     string       `json:"runID"`
	RunDir    string       `json:"runDir,omitempty"`
	Namespace string       `json:"namespace"`
	Placement placement    `json:"placement"`
	RRTool    nettool.Tool `json:"rrTool,omitempty"`
	// NetworkImage is the network image the pods ran (the digest its tag resolved to) and its tools' versions.
	NetworkImage *results.NetworkImage `json:"networkImage,omitempty"`
	// Confidence of every interval (0.95).
	Confidence float64       `json:"confidence"`
	Facts      Facts         `json:"facts"`
	Rows       []row         `json:"rows"`
	Resources  []resourceRow `json:"resources,omitempty"`
	// NodeTotals add the node rows' averages of Resources over the nodes they name, each host counted once.
	NodeTotals []nodeTotal    `json:"nodeTotals,omitempty"`
	Pods       []PodPlacement `json:"pods,omitempty"`
	Notes      []string       `json:"notes,omitempty"`
}

// PodPlacement records where a test pod ran (verified after scheduling).
type PodPlacement struct {
	Role        Role   `json:"role"`
	Node        string `json:"node"`
	IP          string `json:"ip"`
	HostNetwork bool   `json:"hostNetwork,omitempty"`
}

// Facts are the cluster facts that explain the numbers.
type Facts struct {
	KubernetesVersion string    `json:"kubernetesVersion,omitempty"`
	CNI               string    `json:"cni,omitempty"`
	CNISource         string    `json:"cniSource,omitempty"`
	ServiceClusterIP  string    `json:"serviceClusterIP,omitempty"`
	MTU               []MTUFact `json:"mtu,omitempty"`
	// Nodes are the nodes the test pods ran on (kernel, runtime, allocatable).
	Nodes []results.NodeFacts `json:"nodes,omitempty"`
}

// MTUFact is the MTU of one interface, read in a pod.
type MTUFact struct {
	Node      string `json:"node"`
	Scope     string `json:"scope"` // pod (eth0 of a pod on the node) | node (default-route interface, from a hostNetwork pod)
	Interface string `json:"interface"`
	MTU       int    `json:"mtu"`
}

// Stat is one metric's mean over samples with its interval.
type Stat = results.CNIStat

// row is one path x test: the headline mean with its confidence interval, or why there is none. It is computed by
// results.CNIRows from the run's summary, the same computation the report's pod network section uses.
type row = results.CNIRow

// nodeTotal is a whole-node average added up over named nodes, each host counted once (results.CNINodeTotals).
type nodeTotal = results.CNINodeTotal

// resourceComponent is a resource row's component as the tables show it: "cni-test pod client" for one pod's
// cgroup-1s figures.
func resourceComponent(rr resourceRow) string {
	if rr.Pod != "" {
		return string(rr.Component) + " pod " + rr.Pod
	}
	return string(rr.Component)
}

// resourceRow is CPU or memory of one component over the idle window or a case's test window (results.CNIResourceRows).
type resourceRow = results.CNIResourceRow

// outcome is one sample of a case: a parsed result or the reason it failed.
type outcome struct {
	N      int
	Result *nettool.Result
	Err    error
}

// caseStatus is what a case's samples say about it: ok, partial (some failed: the failures) or failed (why), and
// the tools' warnings. It is pure; the figures come from the summary (results.CNIRows).
func caseStatus(outs []outcome) (status, reason string, warnings []string) {
	var failures []string
	for _, o := range outs {
		switch {
		case o.Err != nil:
			failures = append(failures, fmt.Sprintf("sample %d: %v", o.N, o.Err))
		case o.Result != nil:
			for _, w := range o.Result.Warnings {
				warnings = append(warnings, fmt.Sprintf("sample %d: %s", o.N, w))
			}
		}
	}
	switch {
	case len(outs) == 0:
		return rowFailed, "no sample ran (interrupted?)", warnings
	case len(failures) == len(outs):
		return rowFailed, strings.Join(failures, "; "), warnings
	case len(failures) > 0:
		return rowPartial, strings.Join(failures, "; "), warnings
	}
	return RowOK, "", warnings
}

// Table renders the report like study B's table: one row per path x test with the mean, its interval, the unit and
// the tool; skipped and failed rows say why. Then the facts and the resource use.
func (r *Report) Table() string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "meshbench cni  run %s  nodes A=%s B=%s", r.RunID, r.Placement.ClientNode, orDash(r.Placement.ServerNode))
	if r.RunDir != "" {
		fmt.Fprintf(&b, "  results %s", r.RunDir)
	}
	b.WriteString("\n\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PATH\tTEST\tVALUE\t95% CI\tUNIT\tTOOL\tN\tDETAIL")
	for _, row := range r.Rows {
		switch row.Status {
		case rowSkipped, rowFailed:
			fmt.Fprintf(tw, "%s\t%s\t%s\t\t\t%s\t%d\t%s\n", row.Path, row.Test, row.Status, orDash(string(row.Tool)), row.N, oneLine(row.Reason, 160))
		default:
			detail := row.Detail()
			if row.Status == rowPartial {
				detail = "PARTIAL: " + oneLine(row.Reason, 100) + "; " + detail
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", row.Path, row.Test, num(row.Mean), ciText(row.CI), row.Unit, row.Tool, row.N, detail)
		}
	}
	_ = tw.Flush()
	b.WriteString("\n")
	r.writeFacts(&b)
	sparse := false
	if len(r.Resources) > 0 {
		b.WriteString("\nresource use (min / avg / max over the window; node = each test node of the path on its own, [from series]; source = where the figure came from: the resource collector (prometheus, kubelet-resource) or cgroup-1s, the test pods' own cgroups read every second, for the path's pods together and for each pod):\n")
		tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "WINDOW\tPATH\tTEST\tCOMPONENT\tNODE\tSOURCE\tMETRIC\tMIN\tAVG\tMAX\tUNIT")
		for _, rr := range r.Resources {
			node := orDash(rr.Node)
			if rr.Series != "" {
				node += " [" + rr.Series + "]"
			}
			lo, hi := numPtr(rr.Min), numPtr(rr.Max)
			if rr.TooSparse {
				lo, hi, sparse = results.TooSparse, results.TooSparse, true
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", rr.Window, rr.Path, orDash(rr.Test), resourceComponent(rr), node,
				orDash(rr.Source), rr.Metric, lo, numPtr(rr.Avg), hi, rr.Unit)
		}
		_ = tw.Flush()
	}
	if sparse {
		fmt.Fprintf(&b, "note: %s\n", results.TooSparseNote)
	}
	r.writeNodeTotals(&b)
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	return b.String()
}

// writeNodeTotals prints the node totals: each names the nodes it covers and, when some share a host, which one
// stands for it.
func (r *Report) writeNodeTotals(b *bytes.Buffer) {
	if len(r.NodeTotals) == 0 {
		return
	}
	b.WriteString("\nnode totals (avg over the window, added up over the NODES, each host counted once):\n")
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "WINDOW\tPATH\tTEST\tMETRIC\tAVG\tUNIT\tNODES\tCOUNTED")
	var notes []string
	for _, t := range r.NodeTotals {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.Window, t.Path, orDash(t.Test), t.Metric, num(t.Avg), t.Unit,
			strings.Join(t.Nodes, ","), strings.Join(t.Counted, ","))
		for _, n := range t.Notes {
			if !slices.Contains(notes, n) {
				notes = append(notes, n)
			}
		}
	}
	_ = tw.Flush()
	for _, n := range notes {
		fmt.Fprintf(b, "note: %s\n", n)
	}
}

func (r *Report) writeFacts(b *bytes.Buffer) {
	f := r.Facts
	cni := f.CNI
	if cni == "" {
		cni = "unknown"
	}
	fmt.Fprintf(b, "cluster: kubernetes %s, CNI %s (%s)", orDash(f.KubernetesVersion), cni, f.CNISource)
	if f.ServiceClusterIP != "" {
		fmt.Fprintf(b, ", Service ClusterIP %s", f.ServiceClusterIP)
	}
	b.WriteString("\n")
	if len(f.MTU) > 0 {
		var parts []string
		for _, m := range f.MTU {
			parts = append(parts, fmt.Sprintf("%s %s %s=%d", m.Node, m.Scope, m.Interface, m.MTU))
		}
		fmt.Fprintf(b, "mtu: %s\n", strings.Join(parts, ", "))
	}
	for _, n := range f.Nodes {
		fmt.Fprintf(b, "node %s: %s, kernel %s, %s, %s CPU, %s memory", n.Name, n.InternalIP, n.KernelVersion, n.ContainerRuntime, n.CPU, n.Memory)
		if with := results.SharesHostWith(n.Name, f.Nodes); len(with) > 0 {
			fmt.Fprintf(b, ", one host with %s", strings.Join(with, ", "))
		}
		b.WriteString("\n")
	}
	if ni := r.NetworkImage; ni != nil {
		fmt.Fprintf(b, "network image: %s", ni.Ref)
		if ni.Digest != "" {
			fmt.Fprintf(b, " ran as %s", ni.Pinned)
		}
		fmt.Fprintf(b, "; iperf3 %s, netperf %s\n", orDash(ni.Iperf3), orDash(ni.Netperf))
	}
	if len(r.Pods) > 0 {
		var parts []string
		for _, p := range r.Pods {
			parts = append(parts, fmt.Sprintf("%s@%s(%s)", p.Role, p.Node, p.IP))
		}
		fmt.Fprintf(b, "pods: %s\n", strings.Join(parts, " "))
	}
}

// CSV renders one line per row (and the headline statistics only).
func (r *Report) CSV() (string, error) {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	_ = w.Write([]string{"path", "test", "tool", "status", "metric", "unit", "n", "mean", "stddev", "ci_low", "ci_high", "detail", "reason"})
	for _, row := range r.Rows {
		lo, hi := "", ""
		if row.CI != nil {
			lo, hi = strconv.FormatFloat(row.CI.Low, 'g', 6, 64), strconv.FormatFloat(row.CI.High, 'g', 6, 64)
		}
		mean, sd := "", ""
		if row.N > 0 {
			mean, sd = strconv.FormatFloat(row.Mean, 'g', 6, 64), strconv.FormatFloat(row.StdDev, 'g', 6, 64)
		}
		if err := w.Write([]string{string(row.Path), string(row.Test), string(row.Tool), row.Status, string(row.Metric), string(row.Unit),
			strconv.Itoa(row.N), mean, sd, lo, hi, row.Detail(), row.Reason}); err != nil {
			return "", err
		}
	}
	w.Flush()
	return b.String(), w.Error()
}

// num prints a figure like the report does (results.FormatNumber).
func num(v float64) string { return results.FormatNumber(v) }

func numPtr(v *float64) string {
	if v == nil {
		return "-"
	}
	return num(*v)
}

func ciText(ci *results.Interval) string {
	if ci == nil {
		return "n<2"
	}
	return "[" + num(ci.Low) + ", " + num(ci.High) + "]"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

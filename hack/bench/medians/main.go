// Command medians reads `go test -bench` output on stdin, passes it through, and then prints, per benchmark, the
// median of every metric over its runs (-count): one figure per benchmark and metric that a single slow run on a
// shared machine does not decide. ns/op is also given in seconds. Run it through `make bench-collect`.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "medians:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer) error {
	var lines []string
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		fmt.Fprintln(out, sc.Text())
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read benchmark output: %w", err)
	}
	res := Medians(lines)
	if len(res) == 0 {
		return fmt.Errorf("no benchmark results in the input")
	}
	fmt.Fprintln(out, "\nmedians:")
	for _, r := range res {
		fmt.Fprintf(out, "%-50s runs=%d", r.Name, r.Runs)
		for _, m := range r.Metrics {
			fmt.Fprintf(out, "  %s=%s", m.Unit, strconv.FormatFloat(m.Value, 'g', 4, 64))
			if m.Unit == "ns/op" {
				fmt.Fprintf(out, "  s/op=%.3f", m.Value/1e9)
			}
		}
		fmt.Fprintln(out)
	}
	return nil
}

// Result is one benchmark's medians, metrics in the order of its first line.
type Result struct {
	Name    string
	Runs    int
	Metrics []Metric
}

// Metric is one unit's median.
type Metric struct {
	Unit  string
	Value float64
}

// Medians parses benchmark result lines ("BenchmarkX-2  N  v1 unit1  v2 unit2 ...") and returns, per benchmark in
// the order first seen, the median of each unit (the mean of the two middle runs for an even count). Other lines
// are ignored. It is pure.
func Medians(lines []string) []Result {
	type acc struct {
		units  []string
		values map[string][]float64
		runs   int
	}
	var order []string
	byName := map[string]*acc{}
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") || len(f)%2 != 0 {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue
		}
		name := f[0]
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			if _, err := strconv.Atoi(name[i+1:]); err == nil {
				name = name[:i] // the GOMAXPROCS suffix
			}
		}
		a := byName[name]
		if a == nil {
			a = &acc{values: map[string][]float64{}}
			byName[name] = a
			order = append(order, name)
		}
		a.runs++
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			u := f[i+1]
			if _, ok := a.values[u]; !ok {
				a.units = append(a.units, u)
			}
			a.values[u] = append(a.values[u], v)
		}
	}
	out := make([]Result, 0, len(order))
	for _, name := range order {
		a := byName[name]
		r := Result{Name: name, Runs: a.runs}
		for _, u := range a.units {
			vs := slices.Sorted(slices.Values(a.values[u]))
			m := vs[len(vs)/2]
			if len(vs)%2 == 0 {
				m = (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
			}
			r.Metrics = append(r.Metrics, Metric{Unit: u, Value: m})
		}
		out = append(out, r)
	}
	return out
}

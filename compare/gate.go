package compare

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"

	"github.com/meshbench/meshbench/results"
)

// gateOp is a gate's comparison operator.
type gateOp string

// Operators.
const (
	opGT gateOp = ">"
	opGE gateOp = ">="
	opLT gateOp = "<"
	opLE gateOp = "<="
)

// holds reports whether "change op threshold" is true.
func (o gateOp) holds(change, threshold float64) bool {
	switch o {
	case opGT:
		return change > threshold
	case opGE:
		return change >= threshold
	case opLT:
		return change < threshold
	case opLE:
		return change <= threshold
	}
	return false
}

// Gate is a parsed --fail-if expression (grammar in the package documentation).
type Gate struct {
	Metric  string // cpu, memory, latency, qps, throughput, ...
	Stat    string // "" = the central stat (avg or value)
	Subject string // a mode, a component or a CNI path
	Window  string // "" = every window; idle | load | test
	Op      gateOp
	// Threshold is signed: percent when Relative, else an absolute amount in Unit.
	Threshold float64
	Relative  bool
	Unit      string // absolute threshold's unit; "" = the measurement's own unit
}

// String renders the gate canonically; ParseGate(g.String()) == g.
func (g Gate) String() string {
	var b strings.Builder
	b.WriteString(g.Metric)
	if g.Stat != "" {
		b.WriteString("." + g.Stat)
	}
	b.WriteString("." + g.Subject)
	if g.Window != "" {
		b.WriteString("." + g.Window)
	}
	b.WriteString(" " + string(g.Op) + " ")
	if g.Threshold >= 0 {
		b.WriteByte('+')
	}
	b.WriteString(strconv.FormatFloat(g.Threshold, 'f', -1, 64))
	switch {
	case g.Relative:
		b.WriteByte('%')
	case g.Unit != "":
		b.WriteString(g.Unit)
	}
	return b.String()
}

// Windows a gate may name.
var gateWindows = []string{results.WindowIdle, results.WindowLoad, results.WindowTest}

// ParseGate parses one gate expression, e.g. "cpu.sidecar > +10%" or "latency.p99.9.ambient.load >= 1.5ms".
func ParseGate(expr string) (Gate, error) {
	g, err := parseGate(expr)
	if err != nil {
		return Gate{}, fmt.Errorf("gate %q: %w", expr, err)
	}
	return g, nil
}

func parseGate(expr string) (Gate, error) {
	var g Gate
	s := strings.TrimSpace(expr)
	opAt := strings.IndexAny(s, "<>")
	if opAt < 0 {
		return g, errors.New(`no operator: write <selector> <op> <threshold>, op one of > >= < <=, e.g. "cpu.sidecar > +10%"`)
	}
	selector, rest := strings.TrimSpace(s[:opAt]), s[opAt:]
	g.Op = gateOp(rest[:1])
	rest = rest[1:]
	if strings.HasPrefix(rest, "=") {
		g.Op += "="
		rest = rest[1:]
	}
	if strings.ContainsAny(rest, "<>=") {
		return g, errors.New("more than one operator")
	}
	if err := parseSelector(selector, &g); err != nil {
		return g, err
	}
	if err := parseThreshold(strings.TrimSpace(rest), &g); err != nil {
		return g, err
	}
	return g, nil
}

func parseSelector(sel string, g *Gate) error {
	if sel == "" {
		return errors.New("missing selector before the operator: <metric>[.<stat>].<component-or-mode>[.<window>]")
	}
	parts := strings.Split(sel, ".")
	// Re-join a percentile with a decimal ("p99" "9" -> "p99.9"): the only place a dot is not a separator.
	var toks []string
	for i := 0; i < len(parts); i++ {
		p := parts[i]
		if isPercentile(p) && i+1 < len(parts) && isDigits(parts[i+1]) {
			p += "." + parts[i+1]
			i++
		}
		toks = append(toks, p)
	}
	for _, t := range toks {
		if !isName(t) && !isStat(t) {
			return fmt.Errorf("selector part %q: use letters, digits, '-' and '_' (a percentile may be p99.9)", t)
		}
	}
	if len(toks) < 2 {
		return fmt.Errorf("selector %q needs at least <metric>.<component-or-mode>, e.g. cpu.sidecar", sel)
	}
	if !isName(toks[0]) || isStat(toks[0]) {
		return fmt.Errorf("selector %q: %q is not a metric name", sel, toks[0])
	}
	g.Metric = toks[0]
	toks = toks[1:]
	if isStat(toks[0]) && len(toks) >= 2 {
		g.Stat, toks = toks[0], toks[1:]
	}
	if isStat(toks[0]) {
		return fmt.Errorf("selector %q: %q is a stat; a component or mode must follow it", sel, toks[0])
	}
	g.Subject, toks = toks[0], toks[1:]
	if len(toks) > 0 {
		if !contains(gateWindows, toks[0]) {
			return fmt.Errorf("selector %q: %q is not a window (idle, load or test)", sel, toks[0])
		}
		g.Window, toks = toks[0], toks[1:]
	}
	if len(toks) > 0 {
		return fmt.Errorf("selector %q: unexpected %q after the window", sel, strings.Join(toks, "."))
	}
	return nil
}

func parseThreshold(s string, g *Gate) error {
	if s == "" {
		return errors.New("missing threshold after the operator, e.g. +10% or +1ms")
	}
	i := 0
	if s[0] == '+' || s[0] == '-' {
		i = 1
	}
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	numText, unit := s[:i], strings.TrimSpace(s[i:])
	if numText == "" || numText == "+" || numText == "-" {
		return fmt.Errorf("threshold %q: must start with a number, e.g. +10%%", s)
	}
	v, err := strconv.ParseFloat(numText, 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return fmt.Errorf("threshold %q: %q is not a number", s, numText)
	}
	if v == 0 {
		v = 0 // no "-0"
	}
	g.Threshold = v
	switch {
	case unit == "%":
		g.Relative = true
	case unit == "":
	case knownUnit(unit):
		g.Unit = unit
	default:
		return fmt.Errorf("threshold %q: unknown unit %q (use %%, or one of %s)", s, unit, strings.Join(unitNames(), ", "))
	}
	return nil
}

func isPercentile(s string) bool { return len(s) > 1 && s[0] == 'p' && isDigits(s[1:]) }

func isStat(s string) bool {
	switch s {
	case "min", "max", "avg", "value", "count":
		return true
	}
	if p, frac, ok := strings.Cut(s, "."); ok {
		return isPercentile(p) && isDigits(frac)
	}
	return isPercentile(s)
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func isName(s string) bool {
	if s == "" || !unicode.IsLetter(rune(s[0])) {
		return false
	}
	for _, r := range s {
		if r > unicode.MaxASCII || !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// unitFamilies lists the units an absolute threshold may carry, with their factor to the family's base unit. A
// threshold converts to a measurement's unit only within a family.
func unitFamilies() [][]struct {
	name   string
	factor float64
} {
	type u = struct {
		name   string
		factor float64
	}
	return [][]u{
		{{"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"µs", 1e-6}},
		{{"B", 1}, {"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"MB", 1e6}, {"GB", 1e9}},
		{{"cores", 1}, {"millicores", 1e-3}, {"m", 1e-3}},
		{{"bit/s", 1}, {"Kbit/s", 1e3}, {"Mbit/s", 1e6}, {"Gbit/s", 1e9}},
		{{"rps", 1}, {"qps", 1}},
		{{"tps", 1}},
		{{"count", 1}},
	}
}

func unitNames() []string {
	var out []string
	for _, f := range unitFamilies() {
		for _, u := range f {
			out = append(out, u.name)
		}
	}
	return out
}

func knownUnit(s string) bool { return contains(unitNames(), s) }

// convertUnit returns the factor that turns an amount in from into to; ok is false across families.
func convertUnit(from, to string) (float64, bool) {
	if from == to {
		return 1, true
	}
	for _, f := range unitFamilies() {
		ff, ft := 0.0, 0.0
		for _, u := range f {
			if u.name == from {
				ff = u.factor
			}
			if u.name == to {
				ft = u.factor
			}
		}
		if ff != 0 && ft != 0 {
			return ff / ft, true
		}
	}
	return 0, false
}

// Matches reports whether the gate selects the measurement k.
func (g Gate) Matches(k results.Key) bool {
	if k.Metric != results.Metric(g.Metric) {
		return false
	}
	if g.Stat == "" {
		if k.Stat != results.StatAvg && k.Stat != results.StatValue {
			return false
		}
	} else if k.Stat != results.Stat(g.Stat) {
		return false
	}
	if g.Window != "" && k.Window != g.Window {
		return false
	}
	return string(k.Mode) == g.Subject || string(k.Component) == g.Subject || labelValue(k.Labels, results.CNILabelPath) == g.Subject
}

func labelValue(labels, name string) string {
	for _, kv := range strings.Split(labels, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v
		}
	}
	return ""
}

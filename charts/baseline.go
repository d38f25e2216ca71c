package charts

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/meshbench/meshbench/results"
)

// Band is a colour band relative to a baseline (see the package documentation).
type Band struct {
	Name     string  // green | yellow | orange | red
	MinRatio float64 // lowest value/baseline ratio in the band (inclusive); 0 for the last band
	Colour   string  // fill
}

// Bands are the CNI colour bands, best first.
func Bands() []Band {
	return []Band{
		{Name: "green", MinRatio: 0.95, Colour: "#1a9850"},
		{Name: "yellow", MinRatio: 0.90, Colour: "#e6c229"},
		{Name: "orange", MinRatio: 0.80, Colour: "#f08a24"},
		{Name: "red", MinRatio: 0, Colour: "#d73027"},
	}
}

// BandFor returns the band of value against baseline. A baseline <= 0 has no bands: ok is false.
func BandFor(value, baseline float64) (band Band, ratio float64, ok bool) {
	if !(baseline > 0) {
		return Band{}, 0, false
	}
	ratio = value / baseline
	bands := Bands()
	for _, b := range bands {
		if ratio >= b.MinRatio {
			return b, ratio, true
		}
	}
	return bands[len(bands)-1], ratio, true
}

// hBar is one row of a baseline chart.
type hBar struct {
	Label   string
	Value   float64
	CI      *results.Interval
	N       int
	Missing string // reason when there is no value: drawn as a red "n/a: reason"
}

// BaselineChart is a horizontal bar chart against a reference value: a dashed line marks the baseline, dotted lines the
// band thresholds, and every bar is filled with its band's colour.
type BaselineChart struct {
	ID            string
	Title         string
	Subtitle      string
	XLabel        string // axis title with the unit
	Unit          string
	Baseline      *hBar // the reference (host path); nil draws no line and colours bars neutrally
	BaselineLabel string
	Bars          []hBar
	Width         float64 // 0 = 760
}

// Empty reports whether the chart has nothing to draw.
func (c BaselineChart) Empty() bool { return len(c.Bars) == 0 && c.Baseline == nil }

// SVG renders the chart.
func (c BaselineChart) SVG() []byte {
	w := c.width()
	rows := c.rows()
	const rowH, barH = 34.0, 20.0
	plotTop := 92.0
	if c.Subtitle == "" {
		plotTop = 74
	}
	h := plotTop + rowH*float64(len(rows)) + 44
	labelW := 0.0
	maxV := 0.0
	for _, r := range rows {
		labelW = math.Max(labelW, textWidth(r.Label, 11))
		if r.Missing == "" {
			maxV = math.Max(maxV, r.Value)
			if r.CI != nil {
				maxV = math.Max(maxV, r.CI.High)
			}
		}
	}
	left := 12 + labelW + 10
	right := 150.0 // room for "9.41 Gbit/s · 100 %" after the longest bar
	plotW := w - left - right
	ticks := niceTicks(maxV, 5)
	top := ticks[len(ticks)-1]
	x := func(v float64) float64 { return left + v/top*plotW }
	plotBottom := plotTop + rowH*float64(len(rows))

	s := newSVG(c.ID, c.Title, c.describe(), w, h)
	s.text("title", "start", 12, 22, c.Title)
	if c.Subtitle != "" {
		s.text("sub", "start", 12, 40, c.Subtitle)
	}
	c.bandLegend(s, 12, plotTop-26)
	for _, t := range ticks {
		s.line("grid", x(t), plotTop, x(t), plotBottom)
		s.text("axis", "middle", x(t), plotBottom+15, tickLabel(t))
	}
	s.text("axis", "middle", left+plotW/2, plotBottom+32, c.XLabel)

	base := 0.0
	if c.Baseline != nil && c.Baseline.Missing == "" {
		base = c.Baseline.Value
	}
	for i, r := range rows {
		yTop := plotTop + rowH*float64(i) + (rowH-barH)/2
		s.text("axis", "end", left-8, yTop+barH/2+4, r.Label)
		isBase := c.Baseline != nil && i == 0
		c.drawRow(s, r, isBase, base, yTop, barH, x)
	}
	s.line("base", left, plotTop, left, plotBottom)
	if base > 0 {
		for _, b := range Bands()[:3] {
			bx := x(base * b.MinRatio)
			s.raw(`<line class="band" stroke="%s" x1="%s" y1="%s" x2="%s" y2="%s"/>`, b.Colour, num(bx), num(plotTop-6), num(bx), num(plotBottom))
		}
		bx := x(base)
		s.line("ref", bx, plotTop-8, bx, plotBottom)
	}
	return s.bytes()
}

func (c BaselineChart) width() float64 {
	if c.Width == 0 {
		return defaultWidth
	}
	return c.Width
}

// truncate cuts s to n runes with an ellipsis; the full text stays in the element's <title>.
func truncate(s string, n int) string {
	r := []rune(s)
	if n < 2 || len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func (c BaselineChart) rows() []hBar {
	var rows []hBar
	if c.Baseline != nil {
		b := *c.Baseline
		if c.BaselineLabel != "" {
			b.Label = c.BaselineLabel
		}
		rows = append(rows, b)
	}
	return append(rows, c.Bars...)
}

func (c BaselineChart) drawRow(s *svg, r hBar, isBase bool, base, yTop, barH float64, x func(float64) float64) {
	if r.Missing != "" {
		s.raw(`<g class="bar missing" data-label="%s"><title>%s</title>`, attr(r.Label), esc(r.Label+": no value: "+r.Missing))
		s.text("na", "start", x(0)+6, yTop+barH/2+4, truncate("n/a: "+r.Missing, int((c.width()-x(0)-12)/(10.5*charWidth))))
		s.raw(`</g>`)
		return
	}
	fill, bandName, note := "#8c8c8c", "baseline", ""
	if !isBase {
		if band, ratio, ok := BandFor(r.Value, base); ok {
			fill, bandName = band.Colour, band.Name
			note = " · " + strconv.FormatFloat(100*ratio, 'f', 1, 64) + " %"
		} else {
			bandName = "no baseline"
		}
	} else {
		note = " · baseline"
	}
	s.raw(`<g class="bar" data-label="%s" data-band="%s" data-value="%s"><title>%s</title>`, attr(r.Label), bandName,
		strconv.FormatFloat(r.Value, 'g', 6, 64), esc(c.tooltip(r, bandName)))
	s.rect(x(0), yTop, x(r.Value)-x(0), barH, fill, `rx="2"`)
	end := x(r.Value)
	if r.CI != nil {
		lo, hi := x(r.CI.Low), x(r.CI.High)
		cy := yTop + barH/2
		s.line("err", lo, cy, hi, cy)
		s.line("err", lo, cy-5, lo, cy+5)
		s.line("err", hi, cy-5, hi, cy+5)
		end = math.Max(end, hi)
	}
	if base > 0 {
		end = math.Max(end, x(base)) // keep the label clear of the baseline line
	}
	s.text("val", "start", end+6, yTop+barH/2+4, FormatValue(r.Value)+" "+c.Unit+note)
	s.raw(`</g>`)
}

func (c BaselineChart) bandLegend(s *svg, x, y float64) {
	s.raw(`<g class="legend">`)
	cx := x
	if c.Baseline != nil {
		s.raw(`<line class="ref" x1="%s" y1="%s" x2="%s" y2="%s"/>`, num(cx), num(y-4), num(cx+18), num(y-4))
		label := "host baseline"
		s.text("legend", "start", cx+24, y, label)
		cx += 24 + textWidth(label, 11.5) + 18
	}
	for _, b := range Bands() {
		label := b.Name + " ≥ " + strconv.Itoa(int(math.Round(100*b.MinRatio))) + " %"
		if b.MinRatio == 0 {
			label = b.Name + " < 80 %"
		}
		s.rect(cx, y-9, 10, 10, b.Colour, `rx="2"`)
		s.text("legend", "start", cx+14, y, label)
		cx += 14 + textWidth(label, 11.5) + 18
	}
	s.raw(`</g>`)
}

func (c BaselineChart) tooltip(r hBar, band string) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s: %s %s", r.Label, FormatValue(r.Value), c.Unit)
	if r.CI != nil {
		fmt.Fprintf(&sb, " (CI %s–%s)", FormatValue(r.CI.Low), FormatValue(r.CI.High))
	}
	if r.N > 0 {
		fmt.Fprintf(&sb, ", n=%d", r.N)
	}
	sb.WriteString(", band " + band)
	return sb.String()
}

func (c BaselineChart) describe() string {
	labels := make([]string, 0, len(c.Bars))
	for _, b := range c.Bars {
		labels = append(labels, b.Label)
	}
	return fmt.Sprintf("Horizontal bar chart of %s for %s against the host baseline; bars are coloured green (>= 95 %% of the baseline), yellow (>= 90 %%), orange (>= 80 %%) or red (< 80 %%).",
		c.XLabel, strings.Join(labels, ", "))
}

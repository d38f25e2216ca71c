package charts

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/meshbench/meshbench/results"
)

// Bar is one bar of a grouped bar chart.
type Bar struct {
	Group  string            // category on the x axis, e.g. a component or a percentile
	Series string            // legend entry, e.g. a mode; also picks the colour
	Value  float64           // bar height
	CI     *results.Interval // error bar; nil draws none
	N      int               // observations behind Value, shown in the tooltip when > 0
	// Missing, when set, draws no bar but a red "n/a" marker whose tooltip is the reason.
	Missing string
}

// BarChart is a grouped bar chart: one group per Groups entry, inside it one bar per Series that has a Bar.
type BarChart struct {
	ID       string // element id, unique within a page (letters, digits, '-')
	Title    string
	Subtitle string
	YLabel   string // axis title, with the unit
	Unit     string // unit for tooltips and value labels
	Groups   []string
	Series   []string
	Bars     []Bar
	Width    float64 // 0 = 760
	Height   float64 // 0 = 340
	// Caveats are drawn under the plot and said in the description: what the figures are not (a data-plane
	// component that is a stand-in or upstream Envoy), so a chart copied out of its report keeps them.
	Caveats []string
}

// Empty reports whether the chart has nothing to draw.
func (c BarChart) Empty() bool { return len(c.Bars) == 0 }

// SVG renders the chart.
func (c BarChart) SVG() []byte {
	w, h := c.Width, c.Height
	if w == 0 {
		w = defaultWidth
	}
	if h == 0 {
		h = 340
	}
	maxV := 0.0
	for _, b := range c.Bars {
		if b.Missing != "" {
			continue
		}
		maxV = math.Max(maxV, b.Value)
		if b.CI != nil {
			maxV = math.Max(maxV, b.CI.High)
		}
	}
	ticks := niceTicks(maxV, 5)
	top := ticks[len(ticks)-1]
	tickW := 0.0
	for _, t := range ticks {
		tickW = math.Max(tickW, textWidth(tickLabel(t), 11))
	}
	left := 18 + 16 + tickW + 8
	right := 16.0
	plotTop := 84.0
	if c.Subtitle == "" {
		plotTop = 66
	}
	h += caveatHeight * float64(len(c.Caveats))
	plotBottom := h - 40 - caveatHeight*float64(len(c.Caveats))
	plotW := w - left - right
	plotH := plotBottom - plotTop
	y := func(v float64) float64 { return plotBottom - v/top*plotH }

	s := newSVG(c.ID, c.Title, c.describe(), w, h)
	s.text("title", "start", 12, 22, c.Title)
	if c.Subtitle != "" {
		s.text("sub", "start", 12, 40, c.Subtitle)
	}
	legend(s, c.Series, 12, plotTop-22, w-24)

	for _, t := range ticks {
		yy := y(t)
		s.line("grid", left, yy, left+plotW, yy)
		s.text("axis", "end", left-6, yy+4, tickLabel(t))
	}
	s.raw(`<text class="axis" transform="translate(%s %s) rotate(-90)" text-anchor="middle">%s</text>`,
		num(18+4), num(plotTop+plotH/2), esc(c.YLabel))

	groupW := plotW / float64(max(len(c.Groups), 1))
	perGroup := 1
	for _, g := range c.Groups {
		perGroup = max(perGroup, len(c.barsIn(g)))
	}
	barW := math.Min(48, groupW*0.8/float64(perGroup))
	for gi, g := range c.Groups {
		bars := c.barsIn(g)
		cx := left + groupW*(float64(gi)+0.5)
		s.text("axis", "middle", cx, plotBottom+16, g)
		x0 := cx - barW*float64(len(bars))/2
		s.raw(`<g class="group" data-group="%s">`, attr(g))
		for i, b := range bars {
			drawBar(s, c, b, x0+barW*float64(i), barW, y, plotBottom)
		}
		s.raw(`</g>`)
	}
	s.line("base", left, plotBottom, left+plotW, plotBottom)
	drawCaveats(s, c.Caveats, plotBottom+36)
	return s.bytes()
}

// caveatHeight is the height of one caveat line under a chart.
const caveatHeight = 14.0

// drawCaveats writes each caveat on a line of its own from y down.
func drawCaveats(s *svg, caveats []string, y float64) {
	for i, c := range caveats {
		s.text("caveat", "start", 12, y+caveatHeight*float64(i), c)
	}
}

func drawBar(s *svg, c BarChart, b Bar, x, barW float64, y func(float64) float64, plotBottom float64) {
	inner := barW - 2 // 1px gap each side between bars of a group
	cx := x + barW/2
	if b.Missing != "" {
		s.raw(`<g class="bar missing" data-series="%s"><title>%s</title>`, attr(b.Series), esc(b.Series+" · "+b.Group+": no value: "+b.Missing))
		s.text("na", "middle", cx, plotBottom-4, "n/a")
		s.raw(`</g>`)
		return
	}
	top := y(b.Value)
	s.raw(`<g class="bar" data-series="%s" data-value="%s"><title>%s</title>`, attr(b.Series), strconv.FormatFloat(b.Value, 'g', 6, 64), esc(c.tooltip(b)))
	s.rect(x+1, top, inner, plotBottom-top, seriesColour(b.Series, indexOf(c.Series, b.Series)), "")
	labelY := top - 4
	if b.CI != nil {
		lo, hi := y(b.CI.Low), y(b.CI.High)
		capW := math.Min(8, inner/2)
		s.line("err", cx, lo, cx, hi)
		s.line("err", cx-capW/2, lo, cx+capW/2, lo)
		s.line("err", cx-capW/2, hi, cx+capW/2, hi)
		labelY = math.Min(labelY, hi-4)
	}
	if barW >= 26 {
		s.text("val", "middle", cx, labelY, shortValue(b.Value))
	}
	s.raw(`</g>`)
}

func (c BarChart) barsIn(group string) []Bar {
	var out []Bar
	for _, series := range c.Series {
		for _, b := range c.Bars {
			if b.Group == group && b.Series == series {
				out = append(out, b)
			}
		}
	}
	return out
}

func (c BarChart) tooltip(b Bar) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s · %s: %s %s", b.Series, b.Group, FormatValue(b.Value), c.Unit)
	if b.CI != nil {
		fmt.Fprintf(&sb, " (CI %s–%s)", FormatValue(b.CI.Low), FormatValue(b.CI.High))
	}
	if b.N > 0 {
		fmt.Fprintf(&sb, ", n=%d", b.N)
	}
	return sb.String()
}

// describe is the chart's <desc>: what a screen reader announces.
func (c BarChart) describe() string {
	d := fmt.Sprintf("Grouped bar chart of %s: %d groups (%s), series %s; error bars are confidence intervals of the mean.",
		c.YLabel, len(c.Groups), strings.Join(c.Groups, ", "), strings.Join(c.Series, ", "))
	for _, cv := range c.Caveats {
		d += " " + cv + "."
	}
	return d
}

// legend draws one swatch per series in a row starting at (x, y).
func legend(s *svg, series []string, x, y, maxW float64) {
	s.raw(`<g class="legend">`)
	cx, cy := x, y
	for i, name := range series {
		w := 14 + textWidth(name, 11.5) + 18
		if cx+w > x+maxW && cx > x {
			cx, cy = x, cy+16
		}
		s.rect(cx, cy-9, 10, 10, seriesColour(name, i), `rx="2"`)
		s.text("legend", "start", cx+14, cy, name)
		cx += w
	}
	s.raw(`</g>`)
}

func indexOf(list []string, v string) int {
	for i, x := range list {
		if x == v {
			return i
		}
	}
	return len(list)
}

// seriesColour is the fill for a series: fixed colours for the data-plane modes (Okabe–Ito, readable with the
// common colour-vision deficiencies), and a fallback palette by position for anything else.
func seriesColour(name string, index int) string {
	switch name {
	case "none":
		return "#8c8c8c"
	case "sidecar":
		return "#0072b2"
	case "ambient":
		return "#009e73"
	case "waypoint":
		return "#e69f00"
	}
	palette := [...]string{"#56b4e9", "#cc79a7", "#d55e00", "#f0e442", "#000000", "#0072b2", "#009e73", "#e69f00"}
	return palette[index%len(palette)]
}

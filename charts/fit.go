package charts

import (
	"fmt"
	"math"
	"strings"
)

// FitPoint is one measured point of a FitChart.
type FitPoint struct{ X, Y float64 }

// FitSeries is one series of a FitChart: its measured points and, when fitted, the line fixed + slope x.
type FitSeries struct {
	Name   string // legend entry, e.g. a mode; also picks the colour
	Points []FitPoint
	Line   bool // draw Fixed + Slope x: solid over the measured X range, dashed from 0 to it (the fixed part is extrapolated)
	Fixed  float64
	Slope  float64
	Note   string // shown in the tooltip, e.g. the fit's trust verdict
}

// FitChart is a scatter of measured points with their fitted lines (capacity planning).
type FitChart struct {
	ID       string
	Title    string
	Subtitle string
	XLabel   string
	YLabel   string
	Series   []FitSeries
	Width    float64 // 0 = 760
	Height   float64 // 0 = 340
	// Caveats are drawn under the plot and said in the description (see BarChart.Caveats).
	Caveats []string
}

// Empty reports whether the chart has nothing to draw.
func (c FitChart) Empty() bool {
	for _, s := range c.Series {
		if len(s.Points) > 0 {
			return false
		}
	}
	return true
}

// SVG renders the chart: both axes from 0, points as circles, lines as described on FitSeries.
func (c FitChart) SVG() []byte {
	f := c.frame()
	names := make([]string, len(c.Series))
	for i, s := range c.Series {
		names[i] = s.Name
	}
	s := newSVG(c.ID, c.Title, c.describe(), f.w, f.h)
	s.text("title", "start", 12, 22, c.Title)
	if c.Subtitle != "" {
		s.text("sub", "start", 12, 40, c.Subtitle)
	}
	legend(s, names, 12, f.plotTop-22, f.w-24)
	for _, t := range f.yt {
		s.line("grid", f.left, f.y(t), f.left+f.plotW, f.y(t))
		s.text("axis", "end", f.left-6, f.y(t)+4, tickLabel(t))
	}
	for _, t := range f.xt {
		s.text("axis", "middle", f.x(t), f.plotBottom+16, tickLabel(t))
	}
	s.raw(`<text class="axis" transform="translate(%s %s) rotate(-90)" text-anchor="middle">%s</text>`,
		num(18+4), num(f.plotTop+f.plotH/2), esc(c.YLabel))
	s.text("axis", "middle", f.left+f.plotW/2, f.plotBottom+34, c.XLabel)
	s.line("base", f.left, f.plotBottom, f.left+f.plotW, f.plotBottom)
	for i, fs := range c.Series {
		f.drawSeries(s, fs, seriesColour(fs.Name, i))
	}
	drawCaveats(s, c.Caveats, f.plotBottom+48)
	return s.bytes()
}

// fitFrame is the layout of a FitChart: its size, the plot area and the ticks of both axes, which start at 0.
type fitFrame struct {
	w, h                                    float64
	left, plotTop, plotBottom, plotW, plotH float64
	xt, yt                                  []float64
	topX, topY                              float64
}

func (f fitFrame) x(v float64) float64 { return f.left + v/f.topX*f.plotW }
func (f fitFrame) y(v float64) float64 { return f.plotBottom - v/f.topY*f.plotH }

// frame lays the chart out: the axes reach past every point and every line's fixed part, the left margin fits the
// widest y tick, and each caveat adds a line below the plot.
func (c FitChart) frame() fitFrame {
	f := fitFrame{w: c.Width, h: c.Height}
	if f.w == 0 {
		f.w = defaultWidth
	}
	if f.h == 0 {
		f.h = 340
	}
	maxX, maxY := 0.0, 0.0
	for _, s := range c.Series {
		for _, p := range s.Points {
			maxX, maxY = math.Max(maxX, p.X), math.Max(maxY, p.Y)
		}
		if s.Line {
			maxY = math.Max(maxY, s.Fixed)
		}
	}
	f.xt, f.yt = niceTicks(maxX, 5), niceTicks(maxY, 5)
	f.topX, f.topY = f.xt[len(f.xt)-1], f.yt[len(f.yt)-1]
	tickW := 0.0
	for _, t := range f.yt {
		tickW = math.Max(tickW, textWidth(tickLabel(t), 11))
	}
	f.left = 18 + 16 + tickW + 8
	right := 16.0
	f.plotTop = 84.0
	if c.Subtitle == "" {
		f.plotTop = 66
	}
	f.h += caveatHeight * float64(len(c.Caveats))
	f.plotBottom = f.h - 48 - caveatHeight*float64(len(c.Caveats))
	f.plotW, f.plotH = f.w-f.left-right, f.plotBottom-f.plotTop
	return f
}

// drawSeries draws one series as a group: its line (solid over the measured range, dashed from 0) and its points.
func (f fitFrame) drawSeries(s *svg, fs FitSeries, colour string) {
	s.raw(`<g class="series" data-series="%s">`, attr(fs.Name))
	if fs.Line && len(fs.Points) > 0 {
		lo, hi := fs.Points[0].X, fs.Points[0].X
		for _, p := range fs.Points {
			lo, hi = math.Min(lo, p.X), math.Max(hi, p.X)
		}
		at := func(v float64) float64 { return fs.Fixed + fs.Slope*v }
		tip := fmt.Sprintf("%s: %s + %s x", fs.Name, FormatValue(fs.Fixed), FormatValue(fs.Slope))
		if fs.Note != "" {
			tip += " (" + fs.Note + ")"
		}
		s.raw(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="1.2" stroke-dasharray="4 4"/>`,
			num(f.x(0)), num(f.y(at(0))), num(f.x(lo)), num(f.y(at(lo))), colour)
		s.raw(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2"><title>%s</title></line>`,
			num(f.x(lo)), num(f.y(at(lo))), num(f.x(hi)), num(f.y(at(hi))), colour, esc(tip))
	}
	for _, p := range fs.Points {
		s.raw(`<circle cx="%s" cy="%s" r="3.5" fill="%s" fill-opacity="0.75"><title>%s: %s at %s</title></circle>`,
			num(f.x(p.X)), num(f.y(p.Y)), colour, esc(fs.Name), esc(FormatValue(p.Y)), esc(FormatValue(p.X)))
	}
	s.raw(`</g>`)
}

func (c FitChart) describe() string {
	names := make([]string, len(c.Series))
	for i, s := range c.Series {
		names[i] = s.Name
	}
	d := fmt.Sprintf("Scatter of %s against %s with fitted lines (solid over the measured range, dashed where extrapolated to 0); series %s.",
		c.YLabel, c.XLabel, strings.Join(names, ", "))
	for _, cv := range c.Caveats {
		d += " " + cv + "."
	}
	return d
}

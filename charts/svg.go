package charts

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Layout constants shared by every chart, in SVG user units (CSS pixels at 100 % zoom).
const (
	fontSize      = 12.0
	smallFontSize = 10.5
	titleFontSize = 14.0
	charWidth     = 0.6 // estimated advance of one character, in em
	defaultWidth  = 760
)

// style is embedded in every SVG so a chart renders the same standalone and inline in the HTML report.
const style = `text{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",Arial,sans-serif;fill:#1f2328}` +
	`.title{font-size:14px;font-weight:600}.sub{font-size:11px;fill:#57606a}.axis{font-size:11px;fill:#57606a}` +
	`.grid{stroke:#d0d7de;stroke-width:1}.base{stroke:#57606a;stroke-width:1}.err{stroke:#1f2328;stroke-width:1.2}` +
	`.val{font-size:10.5px;fill:#1f2328}.legend{font-size:11.5px}.ref{stroke:#1f2328;stroke-width:1.5;stroke-dasharray:6 4}` +
	`.band{stroke-width:1;stroke-dasharray:2 3}.na{font-size:10.5px;fill:#cf222e}.caveat{font-size:11px;fill:#9a6700}`

// svg accumulates an SVG document. Coordinates are written with one decimal so output is byte-stable.
type svg struct {
	b bytes.Buffer
}

func newSVG(id, title, desc string, width, height float64) *svg {
	s := &svg{}
	fmt.Fprintf(&s.b, `<svg xmlns="http://www.w3.org/2000/svg" class="mb-chart" id="%s" role="img" aria-labelledby="%s-title %s-desc" width="%s" height="%s" viewBox="0 0 %s %s">`+"\n",
		attr(id), attr(id), attr(id), num(width), num(height), num(width), num(height))
	fmt.Fprintf(&s.b, `<title id="%s-title">%s</title>`+"\n", attr(id), esc(title))
	fmt.Fprintf(&s.b, `<desc id="%s-desc">%s</desc>`+"\n", attr(id), esc(desc))
	fmt.Fprintf(&s.b, "<style>%s</style>\n", style)
	fmt.Fprintf(&s.b, `<rect x="0" y="0" width="%s" height="%s" fill="#ffffff"/>`+"\n", num(width), num(height))
	return s
}

func (s *svg) bytes() []byte {
	s.b.WriteString("</svg>\n")
	return s.b.Bytes()
}

// raw writes a line as is.
func (s *svg) raw(format string, args ...any) {
	fmt.Fprintf(&s.b, format, args...)
	s.b.WriteByte('\n')
}

func (s *svg) line(class string, x1, y1, x2, y2 float64) {
	s.raw(`<line class="%s" x1="%s" y1="%s" x2="%s" y2="%s"/>`, attr(class), num(x1), num(y1), num(x2), num(y2))
}

func (s *svg) text(class, anchor string, x, y float64, content string) {
	s.raw(`<text class="%s" x="%s" y="%s" text-anchor="%s">%s</text>`, attr(class), num(x), num(y), anchor, esc(content))
}

func (s *svg) rect(x, y, w, h float64, fill, extra string) {
	if extra != "" {
		extra = " " + extra
	}
	s.raw(`<rect x="%s" y="%s" width="%s" height="%s" fill="%s"%s/>`, num(x), num(y), num(w), num(h), fill, extra)
}

// num formats a coordinate with at most one decimal and no "-0".
func num(v float64) string {
	r := math.Round(v*10) / 10
	if r == 0 {
		return "0"
	}
	return strconv.FormatFloat(r, 'f', -1, 64)
}

func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

func attr(s string) string { return esc(s) }

// textWidth estimates the rendered width of s at size px.
func textWidth(s string, size float64) float64 {
	return float64(len([]rune(s))) * size * charWidth
}

// FormatValue renders a measured value for labels and tables: three significant digits for small numbers, no
// exponent, thousands without separators (stable across locales).
func FormatValue(v float64) string {
	a := math.Abs(v)
	switch {
	case v == 0:
		return "0"
	case a >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case a >= 0.01:
		return strconv.FormatFloat(v, 'f', 3, 64)
	default:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
}

// shortValue renders a bar label: three significant digits, no trailing zeros, no exponent below 1e6.
func shortValue(v float64) string {
	if math.Abs(v) >= 1000 {
		return strconv.FormatFloat(math.Round(v), 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// niceTicks returns evenly spaced "nice" tick values covering [0, max] with about n intervals. The last tick is >= max.
func niceTicks(max float64, n int) []float64 {
	if !(max > 0) || math.IsInf(max, 0) || n < 1 {
		return []float64{0, 1}
	}
	step := niceNum(max/float64(n), true)
	top := math.Ceil(max/step) * step
	ticks := make([]float64, 0, n+2)
	for i := 0; ; i++ {
		t := float64(i) * step
		// Round away accumulated float error so labels read 0.3, not 0.30000000000000004.
		t, _ = strconv.ParseFloat(strconv.FormatFloat(t, 'g', 12, 64), 64)
		ticks = append(ticks, t)
		if t >= top-step/1e6 {
			break
		}
	}
	return ticks
}

// niceNum finds a 1, 2, 2.5 or 5 times a power of ten close to x (Heckbert, Graphics Gems, 1990).
func niceNum(x float64, round bool) float64 {
	exp := math.Floor(math.Log10(x))
	f := x / math.Pow(10, exp)
	var nf float64
	switch {
	case round && f < 1.5:
		nf = 1
	case round && f < 2.25:
		nf = 2
	case round && f < 3:
		nf = 2.5
	case round && f < 7:
		nf = 5
	case round:
		nf = 10
	case f <= 1:
		nf = 1
	case f <= 2:
		nf = 2
	case f <= 5:
		nf = 5
	default:
		nf = 10
	}
	return nf * math.Pow(10, exp)
}

// tickLabel formats a tick value compactly.
func tickLabel(v float64) string {
	return strconv.FormatFloat(v, 'g', 6, 64)
}

package report

import (
	"bytes"
	"fmt"
	"html"
	"strings"
)

// document is the renderer-neutral report: Markdown and HTML are two views of the same blocks, so they can never say
// different things.
type document struct {
	Title    string
	Subtitle string
	Banner   []string
	Sections []section
}

type section struct {
	ID     SectionID
	Title  string
	Blocks []block
}

// SectionID names a section of the report: its anchor in report.md and report.html, and what `meshbench report
// --show` prints. A report has the sections its run has data for, in the order of sectionTable.
type SectionID string

// The ids of a report's sections; sectionTable orders them.
const (
	sectionFacts       SectionID = "facts"
	sectionHeadlines   SectionID = "headlines"
	sectionResources   SectionID = "resources"
	sectionModes       SectionID = "modes"    // change between modes
	sectionVariants    SectionID = "variants" // what each mesh feature costs
	sectionStartup     SectionID = "startup"
	sectionTransitions SectionID = "transitions"
	sectionEnforce     SectionID = "enforce"
	sectionWorkloads   SectionID = "workloads"
	sectionPerKRPS     SectionID = "per-krps"
	sectionShared      SectionID = "shared"
	sectionAllocation  SectionID = "allocation"
	sectionLatency     SectionID = "latency"
	sectionCapacity    SectionID = "capacity"
	sectionCNI         SectionID = "cni"
	sectionCNIBaseline SectionID = "cni-baseline" // the cni run's section inside a combined report
	sectionCases       SectionID = "cases"
	sectionMethod      SectionID = "method"
)

// sectionIDs are every section a report can have, in the order it shows them.
func sectionIDs() []SectionID {
	t := sectionTable()
	ids := make([]SectionID, 0, len(t))
	for _, e := range t {
		ids = append(ids, e.id)
	}
	return ids
}

// sectionEntry is one section of the report: its id and its builder, which gives the section's title and blocks, or
// false when the run has no data for it.
type sectionEntry struct {
	id    SectionID
	build func(Report) (section, bool)
}

// sectionTable is every section a report can have, in the order it shows them: the one list document() and
// sectionIDs() read. A new section is a builder in its own file (section_<id>.go) and an entry here.
func sectionTable() []sectionEntry {
	return []sectionEntry{
		{sectionFacts, Report.factsSection},
		{sectionHeadlines, Report.headlinesSection},
		{sectionResources, Report.resourcesSection},
		{sectionModes, Report.modesSection},
		{sectionVariants, Report.variantsSection},
		{sectionStartup, Report.startupSection},
		{sectionTransitions, Report.transitionsSection},
		{sectionEnforce, Report.enforceSection},
		{sectionWorkloads, Report.workloadsSection},
		{sectionPerKRPS, Report.perKRPSSection},
		{sectionShared, Report.sharedSection},
		{sectionAllocation, Report.allocationSection},
		{sectionLatency, Report.latencySection},
		{sectionCapacity, Report.capacitySection},
		{sectionCNI, Report.cniSection},
		{sectionCNIBaseline, Report.cniBaselineSection},
		{sectionCases, Report.casesSection},
		{sectionMethod, Report.methodSection},
	}
}

// block is one of: a paragraph (Text), a bullet list (Items), a table, or a chart.
type block struct {
	Text  string
	Items []string
	Table *table
	Chart *chartBlock
	Level int // heading level for Heading blocks (Text is the heading); 0 for others
}

type table struct {
	ID      string
	Caption string
	Header  []string
	Rows    [][]string
	Numeric []bool // right-align column i
	Notes   []string
	Class   string
}

type chartBlock struct {
	ID    string
	Title string
	File  string // path relative to the report, for Markdown
	SVG   []byte
}

// chartFile is where a chart's SVG is written, relative to the report (report.md links it from there).
func chartFile(id string) string { return chartsDir + "/" + id + ".svg" }

func (s *section) para(format string, args ...any) {
	s.Blocks = append(s.Blocks, block{Text: fmt.Sprintf(format, args...)})
}

func (s *section) heading(text string) { s.Blocks = append(s.Blocks, block{Text: text, Level: 3}) }

func (s *section) list(items []string) {
	if len(items) > 0 {
		s.Blocks = append(s.Blocks, block{Items: items})
	}
}

func (s *section) table(t table) { s.Blocks = append(s.Blocks, block{Table: &t}) }

func (s *section) chart(c chartBlock) { s.Blocks = append(s.Blocks, block{Chart: &c}) }

// markdown renders the document as GitHub-flavoured Markdown.
func (d document) markdown() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s\n\n", d.Title)
	if d.Subtitle != "" {
		fmt.Fprintf(&b, "%s\n\n", d.Subtitle)
	}
	if len(d.Banner) > 0 {
		fmt.Fprintf(&b, "> [!WARNING]\n> **%s**\n", mdText(d.Banner[0]))
		for _, l := range d.Banner[1:] {
			fmt.Fprintf(&b, ">\n> %s\n", mdText(l))
		}
		b.WriteByte('\n')
	}
	b.WriteString("Contents:")
	for i, s := range d.Sections {
		sep := " "
		if i > 0 {
			sep = " · "
		}
		fmt.Fprintf(&b, "%s[%s](#%s)", sep, s.Title, s.ID)
	}
	b.WriteString("\n\n")
	for _, s := range d.Sections {
		fmt.Fprintf(&b, "<a id=\"%s\"></a>\n\n## %s\n\n", s.ID, s.Title)
		for _, bl := range s.Blocks {
			switch {
			case bl.Level > 0:
				fmt.Fprintf(&b, "%s %s\n\n", strings.Repeat("#", bl.Level), mdText(bl.Text))
			case bl.Table != nil:
				mdTable(&b, *bl.Table)
			case bl.Chart != nil:
				fmt.Fprintf(&b, "![%s](%s)\n\n", mdText(bl.Chart.Title), bl.Chart.File)
			case bl.Items != nil:
				for _, it := range bl.Items {
					fmt.Fprintf(&b, "- %s\n", mdText(it))
				}
				b.WriteByte('\n')
			default:
				fmt.Fprintf(&b, "%s\n\n", mdText(bl.Text))
			}
		}
	}
	return b.Bytes()
}

func mdTable(b *bytes.Buffer, t table) {
	if t.Caption != "" {
		fmt.Fprintf(b, "**%s**\n\n", mdText(t.Caption))
	}
	b.WriteString("|")
	for _, h := range t.Header {
		fmt.Fprintf(b, " %s |", mdCell(h))
	}
	b.WriteString("\n|")
	for i := range t.Header {
		if i < len(t.Numeric) && t.Numeric[i] {
			b.WriteString("---:|")
		} else {
			b.WriteString("---|")
		}
	}
	b.WriteByte('\n')
	for _, row := range t.Rows {
		b.WriteString("|")
		for _, c := range row {
			fmt.Fprintf(b, " %s |", mdCell(c))
		}
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	for _, n := range t.Notes {
		fmt.Fprintf(b, "%s\n\n", mdText(n))
	}
}

// mdText escapes what Markdown would otherwise interpret in free text.
func mdText(s string) string {
	return strings.NewReplacer("<", "&lt;", ">", "&gt;", "*", `\*`, "_", `\_`).Replace(s)
}

func mdCell(s string) string {
	return strings.ReplaceAll(mdText(strings.ReplaceAll(s, "\n", " ")), "|", `\|`)
}

// htmlPage renders the document as one self-contained HTML page: inline CSS and SVG, no scripts, no external
// references.
func (d document) htmlPage() []byte {
	var b bytes.Buffer
	esc := html.EscapeString
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
	b.WriteString("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")
	fmt.Fprintf(&b, "<title>%s</title>\n<style>%s</style>\n</head>\n<body>\n<main>\n", esc(d.Title), pageCSS)
	fmt.Fprintf(&b, "<header>\n<h1>%s</h1>\n", esc(d.Title))
	if d.Subtitle != "" {
		fmt.Fprintf(&b, "<p class=\"subtitle\">%s</p>\n", esc(d.Subtitle))
	}
	b.WriteString("</header>\n")
	if len(d.Banner) > 0 {
		fmt.Fprintf(&b, "<div class=\"banner\" role=\"alert\" id=\"banner\">\n<p class=\"banner-title\">%s</p>\n", esc(d.Banner[0]))
		if len(d.Banner) > 1 {
			b.WriteString("<ul>\n")
			for _, l := range d.Banner[1:] {
				fmt.Fprintf(&b, "<li>%s</li>\n", esc(l))
			}
			b.WriteString("</ul>\n")
		}
		b.WriteString("</div>\n")
	}
	b.WriteString("<nav aria-label=\"contents\"><ol>\n")
	for _, s := range d.Sections {
		fmt.Fprintf(&b, "<li><a href=\"#%s\">%s</a></li>\n", s.ID, esc(s.Title))
	}
	b.WriteString("</ol></nav>\n")
	for _, s := range d.Sections {
		fmt.Fprintf(&b, "<section id=\"%s\">\n<h2>%s</h2>\n", s.ID, esc(s.Title))
		for _, bl := range s.Blocks {
			switch {
			case bl.Level > 0:
				fmt.Fprintf(&b, "<h%d>%s</h%d>\n", bl.Level, esc(bl.Text), bl.Level)
			case bl.Table != nil:
				htmlTable(&b, *bl.Table)
			case bl.Chart != nil:
				fmt.Fprintf(&b, "<figure class=\"chart\" id=\"fig-%s\">\n", bl.Chart.ID)
				b.Write(bl.Chart.SVG)
				b.WriteString("</figure>\n")
			case bl.Items != nil:
				b.WriteString("<ul>\n")
				for _, it := range bl.Items {
					fmt.Fprintf(&b, "<li>%s</li>\n", esc(it))
				}
				b.WriteString("</ul>\n")
			default:
				fmt.Fprintf(&b, "<p>%s</p>\n", esc(bl.Text))
			}
		}
		b.WriteString("</section>\n")
	}
	b.WriteString("</main>\n</body>\n</html>\n")
	return b.Bytes()
}

func htmlTable(b *bytes.Buffer, t table) {
	esc := html.EscapeString
	class := "data"
	if t.Class != "" {
		class += " " + t.Class
	}
	fmt.Fprintf(b, "<div class=\"table-wrap\"><table class=\"%s\" id=\"%s\">\n", class, t.ID)
	if t.Caption != "" {
		fmt.Fprintf(b, "<caption>%s</caption>\n", esc(t.Caption))
	}
	b.WriteString("<thead><tr>")
	for _, h := range t.Header {
		fmt.Fprintf(b, "<th scope=\"col\">%s</th>", esc(h))
	}
	b.WriteString("</tr></thead>\n<tbody>\n")
	for _, row := range t.Rows {
		b.WriteString("<tr>")
		for i, c := range row {
			cls := ""
			if i < len(t.Numeric) && t.Numeric[i] {
				cls = "num"
			}
			if k := cellClass(c); k != "" {
				cls = strings.TrimSpace(cls + " " + k)
			}
			if cls != "" {
				fmt.Fprintf(b, "<td class=\"%s\">%s</td>", cls, esc(c))
			} else {
				fmt.Fprintf(b, "<td>%s</td>", esc(c))
			}
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</tbody>\n</table></div>\n")
	for _, n := range t.Notes {
		fmt.Fprintf(b, "<p class=\"note\">%s</p>\n", esc(n))
	}
}

// cellClass styles cells by their meaning, so a reader sees failures and significant changes at a glance.
func cellClass(c string) string {
	switch {
	case c == "failed":
		return "bad"
	case strings.HasPrefix(c, "not measured"):
		return "bad"
	case c == "skipped":
		return "warn"
	case c == "green" || c == "yellow" || c == "orange" || c == "red":
		return "band band-" + c
	case c == "not significant" || strings.HasSuffix(c, " not significant"):
		return "ns"
	case c == "significant" || strings.HasSuffix(c, " significant"):
		return "sig"
	case len(c) > 60:
		return "text"
	}
	return ""
}

const pageCSS = `
:root{--fg:#1f2328;--muted:#57606a;--line:#d0d7de;--bg:#ffffff;--alt:#f6f8fa;--accent:#0969da}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",Arial,sans-serif}
main{max-width:1180px;margin:0 auto;padding:24px 28px 64px}
h1{font-size:26px;margin:0 0 4px}
h2{font-size:20px;margin:36px 0 12px;padding-bottom:6px;border-bottom:1px solid var(--line)}
h3{font-size:16px;margin:24px 0 8px}
.subtitle{color:var(--muted);margin:0 0 16px}
.banner{border:2px solid #cf222e;background:#ffebe9;color:#82071e;border-radius:8px;padding:12px 16px;margin:16px 0}
.banner-title{font-size:18px;font-weight:700;margin:0}
.banner ul{margin:8px 0 0;padding-left:20px}
nav ol{display:flex;flex-wrap:wrap;gap:4px 22px;list-style:none;padding:10px 14px;margin:12px 0;background:var(--alt);border-radius:8px}
nav a{color:var(--accent);text-decoration:none}
.table-wrap{overflow-x:auto;margin:8px 0 12px}
table.data{border-collapse:collapse;font-size:12.5px;font-variant-numeric:tabular-nums;min-width:50%}
table.data caption{text-align:left;font-weight:600;padding:4px 0 6px}
table.data th,table.data td{border:1px solid var(--line);padding:4px 8px;text-align:left;vertical-align:top;white-space:nowrap}
table.data th{background:var(--alt);font-weight:600;white-space:nowrap}
table.data tbody tr:nth-child(even){background:#fbfcfd}
table.data td.num{text-align:right;white-space:nowrap}
table.data td.text{white-space:normal;min-width:22em}
table.facts th,table.facts td{white-space:normal}
td.bad{color:#82071e;background:#ffebe9}
td.warn{color:#7d4e00;background:#fff8c5}
td.sig{font-weight:600}
td.ns{color:var(--muted)}
td.band{font-weight:600}
td.band-green{background:#dafbe1}
td.band-yellow{background:#fff8c5}
td.band-orange{background:#ffe7d1}
td.band-red{background:#ffebe9}
figure.chart{margin:12px 0 20px;overflow-x:auto}
figure.chart svg{max-width:100%;height:auto;border:1px solid var(--line);border-radius:6px}
p.note{color:var(--muted);font-size:13px;margin:4px 0 12px}
`

// document builds the report's content: its title and banner, then each section of sectionTable the run has data
// for, in the table's order.
func (r Report) document() document {
	d := document{
		Title:  "meshbench report: " + r.Meta.RunID,
		Banner: r.Banner(),
	}
	sc := r.scenario()
	if sc.Name != "" {
		d.Subtitle = "scenario " + sc.Name
		if sc.Description != "" {
			d.Subtitle += ": " + sc.Description
		}
	}
	for _, e := range sectionTable() {
		if s, ok := e.build(r); ok {
			s.ID = e.id
			d.Sections = append(d.Sections, s)
		}
	}
	return d
}

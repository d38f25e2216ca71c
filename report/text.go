package report

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Text renders the report for a terminal: plain text, tables as aligned columns, charts named by their file. No ids
// renders all of it with its title, else the sections asked for in the report's order; the banner comes first either
// way. missing lists the ids asked for that this report has no data for.
func (r Report) Text(ids ...SectionID) (text []byte, missing []SectionID) {
	d := r.document()
	for _, id := range ids {
		if !slices.ContainsFunc(d.Sections, func(s section) bool { return s.ID == id }) {
			missing = append(missing, id)
		}
	}
	return d.text(ids), missing
}

// renamedSections are ids the report used before, still accepted by ParseSections.
var renamedSections = map[string]SectionID{"network": sectionCNI, "network-baseline": sectionCNIBaseline}

// ParseSections reads section ids (comma-separated lists allowed, in any order; the ids of renamedSections too); "all"
// gives nil, which Text renders as the whole report. An unknown id is an error that lists the known ones.
func ParseSections(values []string) ([]SectionID, error) {
	var out []SectionID
	for _, v := range values {
		for _, s := range strings.Split(v, ",") {
			s = strings.TrimSpace(s)
			if id, ok := renamedSections[s]; ok {
				s = string(id)
			}
			switch {
			case s == "":
			case s == "all":
				return nil, nil
			case slices.Contains(sectionIDs(), SectionID(s)):
				if !slices.Contains(out, SectionID(s)) {
					out = append(out, SectionID(s))
				}
			default:
				return nil, fmt.Errorf("no report section %q: use all or some of %s", s, SectionList())
			}
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no section: name at least one, e.g. headlines,modes, or all")
	}
	return out, nil
}

// SectionList is the section ids of Sections, comma separated (for help and errors).
func SectionList() string {
	ids := make([]string, 0, len(sectionIDs()))
	for _, id := range sectionIDs() {
		ids = append(ids, string(id))
	}
	return strings.Join(ids, ", ")
}

// text renders the document as plain text; only (empty: everything, with title and banner) picks the sections.
func (d document) text(only []SectionID) []byte {
	var b bytes.Buffer
	if len(only) == 0 {
		underline(&b, d.Title, '=')
		if d.Subtitle != "" {
			b.WriteString(d.Subtitle + "\n\n")
		}
	}
	// The caveats go with any part of the report shown: sections printed alone must not lose what their figures
	// are not (a data-plane component that is a stand-in or upstream Envoy).
	for _, l := range d.Banner {
		b.WriteString("WARNING: " + l + "\n")
	}
	if len(d.Banner) > 0 {
		b.WriteByte('\n')
	}
	for _, s := range d.Sections {
		if len(only) > 0 && !slices.Contains(only, s.ID) {
			continue
		}
		underline(&b, s.Title, '=')
		for _, bl := range s.Blocks {
			switch {
			case bl.Level > 0:
				underline(&b, bl.Text, '-')
			case bl.Table != nil:
				textTable(&b, *bl.Table)
			case bl.Chart != nil:
				fmt.Fprintf(&b, "[chart: %s (%s)]\n\n", bl.Chart.Title, bl.Chart.File)
			case bl.Items != nil:
				for _, it := range bl.Items {
					b.WriteString("- " + it + "\n")
				}
				b.WriteByte('\n')
			default:
				b.WriteString(bl.Text + "\n\n")
			}
		}
	}
	out := bytes.TrimRight(b.Bytes(), "\n")
	if len(out) == 0 {
		return nil
	}
	return append(out, '\n')
}

// underline writes a heading over a rule of its own width.
func underline(b *bytes.Buffer, title string, rule rune) {
	fmt.Fprintf(b, "%s\n%s\n\n", title, strings.Repeat(string(rule), utf8.RuneCountInString(title)))
}

// textTable writes the caption, the header and rows in columns two spaces apart (numeric columns right-aligned,
// a cell's line breaks become spaces), then the notes.
func textTable(b *bytes.Buffer, t table) {
	if t.Caption != "" {
		b.WriteString(t.Caption + "\n\n")
	}
	rows := append([][]string{t.Header}, t.Rows...)
	width := make([]int, len(t.Header))
	for _, row := range rows {
		for i, c := range row {
			if i < len(width) {
				width[i] = max(width[i], utf8.RuneCountInString(cellText(c)))
			}
		}
	}
	for _, row := range rows {
		var line strings.Builder
		for i, c := range row {
			if i >= len(width) {
				break
			}
			c = cellText(c)
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if i > 0 {
				line.WriteString("  ")
			}
			if i < len(t.Numeric) && t.Numeric[i] {
				line.WriteString(pad + c)
			} else {
				line.WriteString(c + pad)
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " "))
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	for _, n := range t.Notes {
		b.WriteString(n + "\n\n")
	}
}

func cellText(c string) string { return strings.Join(strings.Fields(c), " ") }

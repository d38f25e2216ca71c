package report

import (
	"slices"
	"strings"
	"testing"
)

// TestTextForTerminal: what make demo prints on its result screen (the headlines and the change between modes) is
// text for a terminal: no HTML anchor (the demo printed a raw <a id="workloads"></a> and <a id="resources"></a> cut
// from report.md, issue 29 section 3), no Markdown escapes or table rules, the sections asked for and only those.
func TestTextForTerminal(t *testing.T) {
	t.Parallel()
	rep := Build(readRun(t, "sample"))
	text, missing := rep.Text(sectionModes, sectionHeadlines) // the report's order, whatever the order asked
	golden(t, "sample/headlines-modes.txt", text)
	if len(missing) != 0 {
		t.Errorf("missing %v: the sample has headlines and modes", missing)
	}
	got := string(text)
	if !strings.HasPrefix(got, "Headlines\n=========\n\n") || !strings.Contains(got, "\nChange between modes\n====================\n") ||
		!strings.Contains(got, "\nCPU (millicores)\n----------------\n") {
		t.Errorf("headings are not the sections asked for, in the report's order:\n%s", got)
	}
	// The mode table's columns line up: every row of the CPU table is as wide as its header (numeric columns are
	// right-aligned, so the last column starts at the same place).
	header := "topology  window         component  comparison            base  other                change [CI]  verdict"
	if !strings.Contains(got, "\n"+header+"\n") ||
		!strings.Contains(got, "\nsingle    idle           mesh       ambient vs sidecar   55.52  16.83  -69.68 % [-71.35, -68.02]  significant\n") {
		t.Errorf("the CPU table is not in aligned columns:\n%s", got)
	}
	for _, name := range []string{"sample", "capacity", "interrupted"} {
		all, _ := Build(readRun(t, name)).Text()
		checkPlainText(t, name, string(all))
	}
	checkPlainText(t, "sample (headlines, modes)", got)
	for _, unwanted := range []string{"Run facts", "Per workload", "Resource usage per component"} {
		if strings.Contains(got, unwanted) {
			t.Errorf("section %q printed although only headlines and modes were asked for", unwanted)
		}
	}
}

// checkPlainText fails on what Markdown or HTML leaves in text meant for a terminal.
func checkPlainText(t *testing.T, name, text string) {
	t.Helper()
	for _, bad := range []string{"<a id=", "</a>", `\_`, `\*`, "&lt;", "&gt;", "|---", "**", "![", "> [!WARNING]"} {
		if strings.Contains(text, bad) {
			i := strings.Index(text, bad)
			t.Errorf("%s: the text holds %q (Markdown or HTML): ...%s...", name, bad, text[max(0, i-60):min(len(text), i+60)])
		}
	}
	if text == "" || !strings.HasSuffix(text, "\n") || strings.HasSuffix(text, "\n\n") || strings.Contains(text, "\n\n\n") {
		t.Errorf("%s: text is empty, or not ended by exactly one newline, or has runs of blank lines", name)
	}
}

// TestTextWholeReport: without ids, every section of the report in its order, with the title and the stand-in or
// interruption banner first.
func TestTextWholeReport(t *testing.T) {
	t.Parallel()
	rep := Build(readRun(t, "interrupted"))
	text, _ := rep.Text()
	got := string(text)
	title := "meshbench report: " + rep.Meta.RunID
	if !strings.HasPrefix(got, title+"\n"+strings.Repeat("=", len(title))+"\n") {
		t.Errorf("no title first:\n%.300s", got)
	}
	for _, l := range rep.Banner() {
		if !strings.Contains(got, "\nWARNING: "+l+"\n") {
			t.Errorf("banner line %q missing", l)
		}
	}
	last := -1
	for _, s := range rep.document().Sections {
		i := strings.Index(got, "\n"+s.Title+"\n")
		if i <= last {
			t.Errorf("section %q missing or out of order", s.Title)
		}
		last = i
	}
}

// TestTextMissingSection: a section the run has no data for is reported, not silently empty.
func TestTextMissingSection(t *testing.T) {
	t.Parallel()
	text, missing := Build(readRun(t, "sample")).Text(sectionHeadlines, sectionCapacity)
	if !slices.Equal(missing, []SectionID{sectionCapacity}) || !strings.HasPrefix(string(text), "Headlines\n") || strings.Contains(string(text), "Capacity") {
		t.Errorf("missing %v, text:\n%.200s", missing, text)
	}
}

// TestSectionsInOrder: Sections names every section a report shows, in the order the report shows them (the ids
// --show accepts and the order Text prints).
func TestSectionsInOrder(t *testing.T) {
	t.Parallel()
	reports := []Report{Build(readRun(t, "sample")), Build(readRun(t, "capacity")), Build(readRun(t, "chain-depth"))}
	combined, err := Combine(readRun(t, "mesh-local"), readRun(t, "cni-local"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[SectionID]bool{}
	for _, r := range append(reports, combined) {
		last := -1
		for _, s := range r.document().Sections {
			i := slices.Index(sectionIDs(), s.ID)
			if i <= last {
				t.Errorf("%s: section %q is not in sectionIDs() or out of its order", r.Meta.RunID, s.ID)
			}
			last = i
			seen[s.ID] = true
		}
	}
	if len(seen) < 10 {
		t.Errorf("the fixtures show only %d sections: %v", len(seen), seen)
	}
}

func TestParseSections(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in      []string
		want    []SectionID
		wantErr string
	}{
		{in: []string{"headlines,modes"}, want: []SectionID{sectionHeadlines, sectionModes}},
		{in: []string{"modes", " headlines ", "modes"}, want: []SectionID{sectionModes, sectionHeadlines}},
		{in: []string{"headlines,all"}, want: nil},                                                           // the whole report
		{in: []string{"cni,network-baseline", "network"}, want: []SectionID{sectionCNI, sectionCNIBaseline}}, // ids before 33
		{in: []string{"headline"}, wantErr: `no report section "headline": use all or some of facts, headlines, `},
		{in: []string{" , "}, wantErr: "no section"},
	} {
		got, err := ParseSections(c.in)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%q: error %v, want %q", c.in, err, c.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%q: %v %v, want %v", c.in, got, err, c.want)
		}
	}
}

package report

import (
	"fmt"
	"os"
	"path/filepath"
)

// Output file names.
const (
	MarkdownFile = "report.md"
	HTMLFile     = "report.html"
	SeriesCSV    = "series.csv"
	DeltasCSV    = "deltas.csv"
	CasesCSV     = "cases.csv"
	ChartsDir    = "charts"
)

// Markdown renders report.md (charts are referenced as charts/<id>.svg).
func (r Report) Markdown() []byte { return r.document().markdown() }

// HTML renders report.html: one self-contained page, charts inline.
func (r Report) HTML() []byte { return r.document().htmlPage() }

// Files renders every output in a fixed order: report.md, report.html, the CSVs, then one SVG per chart.
func (r Report) Files() []File {
	d := r.document()
	files := []File{
		{Name: MarkdownFile, Data: d.markdown()},
		{Name: HTMLFile, Data: d.htmlPage()},
		{Name: SeriesCSV, Data: r.seriesCSV()},
		{Name: DeltasCSV, Data: r.deltasCSV()},
		{Name: CasesCSV, Data: r.casesCSV()},
	}
	for _, s := range d.Sections {
		for _, b := range s.Blocks {
			if b.Chart != nil {
				files = append(files, File{Name: b.Chart.File, Data: b.Chart.SVG})
			}
		}
	}
	return files
}

// Write writes every file into dir (created if needed) and returns their paths.
func Write(dir string, files []File) ([]string, error) {
	paths := make([]string, 0, len(files))
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return paths, fmt.Errorf("write report: %w", err)
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			return paths, fmt.Errorf("write report: %w", err)
		}
		paths = append(paths, p)
	}
	return paths, nil
}

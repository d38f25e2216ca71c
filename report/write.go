package report

import (
	"fmt"
	"os"
	"path/filepath"
)

// Output file names.
const (
	MarkdownFile = "report.md"
	htmlFile     = "report.html"
	seriesFile   = "series.csv"
	deltasFile   = "deltas.csv"
	casesFile    = "cases.csv"
	chartsDir    = "charts"
)

// Markdown renders report.md (charts are referenced as charts/<id>.svg).
func (r Report) Markdown() []byte { return r.document().markdown() }

// htmlPage renders report.html: one self-contained page, charts inline.
func (r Report) htmlPage() []byte { return r.document().htmlPage() }

// Files renders every output in a fixed order: report.md, report.html, the CSVs, then one SVG per chart.
func (r Report) Files() []File {
	d := r.document()
	files := []File{
		{Name: MarkdownFile, Data: d.markdown()},
		{Name: htmlFile, Data: d.htmlPage()},
		{Name: seriesFile, Data: r.seriesCSV()},
		{Name: deltasFile, Data: r.deltasCSV()},
		{Name: casesFile, Data: r.casesCSV()},
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

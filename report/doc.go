// Package report turns a run directory into report.md, a self-contained report.html, CSVs and SVG charts, from the
// directory's files alone (offline, at any time after the run; Build and the renderers are pure). One document,
// built from sectionTable with one file per section, renders as Markdown, HTML and Text; the sections: docs/report.md.
package report

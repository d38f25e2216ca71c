// Package report turns a run directory into what people read: report.md, a self-contained report.html, CSVs and one
// SVG per chart. It works from the run directory's files alone and writes files, nothing else, so a report can be
// made anywhere, at any time after the run; Build and the renderers are pure, so report.md is golden-tested.
//
// Markdown, HTML and the terminal text (Text) render one document, built from sectionTable (document.go) with one
// file per section (section_<id>.go). What each section shows, and the conventions of the figures: docs/report.md.
package report

// Package results is meshbench's results model and its on-disk store: a run directory's run.json (RunMeta),
// samples.jsonl (Sample), cases.jsonl (CaseResult) and summary.json (Summary, computed by the pure Summarize);
// docs/results.md specifies each file and what readers accept.
//
// Commit rule: a case's line in cases.jsonl commits its samples. Every case line and sample carries an Attempt;
// Read keeps only the samples of each case's latest recorded attempt, so samples of an interrupted case, or of a
// failed attempt re-run by --resume, never reach a summary.
//
// The package imports no other meshbench package: every other package speaks this model, and report, compare and
// charts work from files alone.
package results

// Package results is meshbench's results model and its on-disk store.
//
// A run directory holds:
//   - run.json: RunMeta, the facts a reader needs to trust the numbers (tool and cluster versions, data plane, config
//     echo, plan);
//   - samples.jsonl: one flat Sample per measurement, appended and fsynced per case so a crash loses nothing;
//   - cases.jsonl: one CaseResult per finished case (ok, failed or skipped, with its reason), the resume index;
//   - summary.json: Summary, computed by the pure Summarize from the samples alone.
//
// Commit rule: a case's line in cases.jsonl commits its samples. Store.AppendCase stamps every case line and sample
// with an Attempt number; Read keeps only the samples of each case's latest recorded attempt, so samples of a case
// interrupted before its line was written, and of failed attempts re-run by --resume, never reach a summary.
//
// The package imports no other meshbench package (see design.md): every other package speaks this model, and report,
// compare and charts work from files alone.
package results

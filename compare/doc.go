// Package compare compares two runs' summaries: per key both means, the Welch interval of the difference and a
// verdict, plus `--fail-if` regression gates (a failing gate is a *GateError). It is pure; reading run directories
// and exit codes belong to the CLI. The verdicts and the gate grammar are specified in docs/compare.md.
package compare

// Package verdict holds the three verdicts a check can give (OK, WARN, FAIL), shared by the image checks (images)
// and preflight (which shows them), so that neither has to import the other's idea of a verdict.
package verdict

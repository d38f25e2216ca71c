package verdict

// Status is a check's verdict.
type Status string

// Verdicts. FAIL blocks a run (exit 2); WARN is shown with its fix but does not block.
const (
	OK   Status = "OK"
	Warn Status = "WARN"
	Fail Status = "FAIL"
)

package results

// Summary is summary.json: statistics over repetitions, computed by Summarize from samples alone.
type Summary struct {
	SchemaVersion string `json:"schemaVersion"`
	RunID         string `json:"runID"`
	// DataPlane and Notes repeat run.json's data-plane kind and caveats, so a summary read alone (dashboards, the
	// regression gate) cannot present a stand-in's figures as Istio's.
	DataPlane     DataPlaneKind        `json:"dataPlane,omitempty"`
	DataPlanes    []ComponentDataPlane `json:"dataPlanes,omitempty"`
	Notes         []string             `json:"notes,omitempty"`
	Confidence    float64              `json:"confidence"` // e.g. 0.95
	Series        []Series             `json:"series"`
	Deltas        []Delta              `json:"deltas,omitempty"`
	PerKRPS       []Series             `json:"perKRPS,omitempty"`       // resource per 1000 achieved rps, per data-plane component
	PerKRPSDeltas []Delta              `json:"perKRPSDeltas,omitempty"` // Deltas computed on PerKRPS
	// Shared splits each shared component's cost into its fixed and load-driven parts (see SharedCost).
	Shared []SharedCost `json:"shared,omitempty"`
	// Workloads are the per-workload figures (components app-by-workload, sidecar-by-workload and the derived
	// workload-total, label workload), kept out of Series because the app and sidecar series already count them;
	// WorkloadDeltas compare them between modes as Deltas do. Absent in summaries written before them.
	Workloads      []Series `json:"workloads,omitempty"`
	WorkloadDeltas []Delta  `json:"workloadDeltas,omitempty"`
	// Variants are the series of the cases measured with a variant (scenario spec.variants: mesh features on top of
	// a mode), kept out of Series so that every figure there is a plain mode's; VariantDeltas compare each with the
	// same figure of its plain mode (Base and Other are the mode, Key.Variant the variant: what the feature costs).
	// VariantPerKRPS and VariantPerKRPSDeltas are the same per 1000 achieved rps.
	Variants             []Series     `json:"variants,omitempty"`
	VariantDeltas        []Delta      `json:"variantDeltas,omitempty"`
	VariantPerKRPS       []Series     `json:"variantPerKRPS,omitempty"`
	VariantPerKRPSDeltas []Delta      `json:"variantPerKRPSDeltas,omitempty"`
	Cases                []CaseResult `json:"cases,omitempty"` // every planned case that ran, failed or was skipped
	Warnings             []string     `json:"warnings,omitempty"`
}

// Key identifies one measured quantity across repetitions.
type Key struct {
	Topology  string    `json:"topology,omitempty"`
	Mode      Mode      `json:"mode,omitempty"`
	Variant   string    `json:"variant,omitempty"` // spec.variants' name; "" for the plain mode
	Load      string    `json:"load,omitempty"`
	Window    string    `json:"window"` // window kind
	Component Component `json:"component"`
	Metric    Metric    `json:"metric"`
	Stat      Stat      `json:"stat"`
	Unit      Unit      `json:"unit"`
	Labels    string    `json:"labels,omitempty"` // canonical "k=v,k=v" (sorted) of the samples' labels
}

// Interval is a two-sided confidence interval.
type Interval struct {
	Low  float64 `json:"low"`
	High float64 `json:"high"`
}

// Series is the statistics of one Key over repetitions (one value per repetition; several samples of the same
// repetition, e.g. CNI samples, are each one observation).
type Series struct {
	Key
	N      int       `json:"n"`
	Mean   float64   `json:"mean"`
	Min    float64   `json:"min"`
	Max    float64   `json:"max"`
	StdDev float64   `json:"stddev"`       // sample standard deviation (n-1); 0 when n < 2
	CI     *Interval `json:"ci,omitempty"` // confidence interval of the mean; nil when n < 2
	Values []float64 `json:"values"`       // the observations, in repetition order
}

// Delta compares the same Key between two modes: Other minus Base.
type Delta struct {
	Key                   // Key.Mode is empty; see Base/Other
	Base        Mode      `json:"base"`  // baseline mode, e.g. sidecar
	Other       Mode      `json:"other"` // compared mode, e.g. ambient
	BaseMean    float64   `json:"baseMean"`
	OtherMean   float64   `json:"otherMean"`
	Diff        float64   `json:"diff"`                // OtherMean - BaseMean
	DiffCI      *Interval `json:"diffCI,omitempty"`    // Welch interval of the difference; nil when either n < 2
	Percent     *float64  `json:"percent,omitempty"`   // 100*Diff/BaseMean; nil when BaseMean is 0
	PercentCI   *Interval `json:"percentCI,omitempty"` // DiffCI scaled by 100/BaseMean
	WelchDF     float64   `json:"welchDF,omitempty"`   // Welch–Satterthwaite degrees of freedom
	PValue      *float64  `json:"pValue,omitempty"`    // two-sided Welch t-test
	Significant bool      `json:"significant"`         // DiffCI excludes 0, from MinIntervalN observations a side
}

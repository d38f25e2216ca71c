package results

import (
	"encoding/json"
	"maps"
	"strings"
)

// CNIPartialPrefix starts the on-disk reason of an ok case some of whose samples failed (CaseResult.Partial).
const CNIPartialPrefix = "some samples failed: "

// warningSep joins a case's warnings in its on-disk fact.
const warningSep = "; "

// caseResultJSON is CaseResult as cases.jsonl holds it: the typed fields Partial, CollectorWarnings and
// SampleWarnings live in its reason and facts, as they did before they were typed, so the schema is unchanged.
type caseResultJSON CaseResult

// MarshalJSON writes Partial into the reason (after CNIPartialPrefix, on an ok case) and the warnings into their
// facts ("; "-joined), leaving c unchanged.
func (c CaseResult) MarshalJSON() ([]byte, error) {
	out := caseResultJSON(c)
	if c.Status == StatusOK && c.Partial != "" {
		out.Reason = CNIPartialPrefix + c.Partial
	}
	if len(c.CollectorWarnings) > 0 || len(c.SampleWarnings) > 0 {
		out.Facts = maps.Clone(c.Facts)
		if out.Facts == nil {
			out.Facts = map[FactKey]string{}
		}
		if len(c.CollectorWarnings) > 0 {
			out.Facts[factCollectorWarn] = strings.Join(c.CollectorWarnings, warningSep)
		}
		if len(c.SampleWarnings) > 0 {
			out.Facts[factSampleWarnings] = strings.Join(c.SampleWarnings, warningSep)
		}
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads what MarshalJSON writes: an ok case's reason after CNIPartialPrefix becomes Partial, the
// warning facts become the warning slices (and leave Facts).
func (c *CaseResult) UnmarshalJSON(b []byte) error {
	var in caseResultJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	*c = CaseResult(in)
	if p, ok := strings.CutPrefix(c.Reason, CNIPartialPrefix); ok && c.Status == StatusOK {
		c.Partial, c.Reason = p, ""
	}
	c.CollectorWarnings = splitFact(c.Facts, factCollectorWarn)
	c.SampleWarnings = splitFact(c.Facts, factSampleWarnings)
	if len(c.Facts) == 0 {
		c.Facts = nil
	}
	return nil
}

// splitFact removes the fact k from facts and returns its "; "-joined parts (nil when absent or empty).
func splitFact(facts map[FactKey]string, k FactKey) []string {
	v, ok := facts[k]
	if !ok {
		return nil
	}
	delete(facts, k)
	if v == "" {
		return nil
	}
	return strings.Split(v, warningSep)
}

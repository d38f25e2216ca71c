package results

// MinIntervalN is the fewest observations from which meshbench shows a confidence interval or calls a change
// significant: with 2, Student's t has 1 degree of freedom (12.71) and the interval is routinely wider than the value.
// The summary keeps every computed interval as data; the report and compare judge nothing below this.
const MinIntervalN = 3

package results

// MinIntervalN is the fewest repetitions from which meshbench shows a confidence interval or calls a change
// significant. From 2 repetitions a 95 % interval uses Student's t with 1 degree of freedom (12.71): it is routinely
// wider than the value itself (CPU 0.720 ± 0.960 from 2 repetitions), so it tells a reader nothing and a "significant"
// from it is luck. From 3 on, t is 4.30 and falls quickly. The summary keeps the computed intervals (summary.json is
// data); the report and compare render "n=2: no interval" and judge no change below this.
const MinIntervalN = 3

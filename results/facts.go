package results

import "strconv"

// FactKey names a case fact (CaseResult.Facts): writers and readers of a fact share its constant here.
type FactKey string

// FactSkippedNode, on a skipped case, names the node it was skipped for (not Ready, or its kubelet not answering,
// after an earlier case failed on it): a passing condition, so --resume runs the case again (DoneCases).
const FactSkippedNode FactKey = "skipped-node"

// FactWaypointLabelsCopied, on a waypoint case, names the waypoint Gateways whose spec.infrastructure the API server
// dropped (Gateway API CRDs of the standard channel before v1.2.0): istiod then copied all the Gateway's labels,
// meshbench's run labels among them, onto the waypoint's Deployment, pods, Service and ServiceAccount.
const FactWaypointLabelsCopied FactKey = "waypoint-labels-copied"

// FactRestartedAfterReady, on a mesh case, names the workloads restarted once more after the mode switch because a
// ready pod was still not in the mode (admitted by the API server's cached view of the namespace's old labels).
const FactRestartedAfterReady FactKey = "restarted-after-ready"

// FactAttempts, on a case measured more than once because a resource window came back incomplete (a missed
// scrape, a Prometheus outage: scenario windows.attempts), is how many measurements it took; FactAttemptPrefix+n
// is why measurement n was not kept. The case's figures are those of the last measurement.
const (
	FactAttempts      FactKey = "attempts"
	FactAttemptPrefix FactKey = "attempt-"
)

// FactProxyConfig, on a sidecar case, is what Envoy's own xDS counters of a sample of the app's proxies said before
// the case was measured: "accepted by N of N sampled proxies (...)", or why they could not be read. A proxy that
// rejected configuration fails the case instead (mesh.ProxyConfigError).
const FactProxyConfig FactKey = "proxy-config"

// FactDataPlane, on a case of a mode with a data plane, is the least representative kind (DataPlaneKind) of the
// components the mode ran, as the case's own pods showed them; FactDataPlanePrefix+component is each one's kind
// ("data-plane-sidecar": "upstream envoy").
const (
	FactDataPlane       FactKey = "data-plane"
	FactDataPlanePrefix FactKey = "data-plane-"
)

// FactWaypointRequests, on a waypoint case, is how many requests the waypoints served while the load ran (their
// own request counter, read before and after the load), beside the requests the load completed; or why it could
// not be read. A waypoint that served fewer than 90 % of them fails the case: it measured ambient, not waypoint.
const FactWaypointRequests FactKey = "waypoint-requests"

// Facts of the deployed app and its mesh, recorded by the runner from the workloads and mesh adapters; capacity
// fits against them.
const (
	FactAppPods   FactKey = "app-pods"  // pods of the deployed app
	FactWaypoints FactKey = "waypoints" // waypoints verified in the case
	FactNodes     FactKey = "nodes"     // optional: nodes running ztunnel; default run.json's cluster.nodes
	// FactChainDepth is the hops below the fortio chain's entry service (scenario's Workload.ChainFor,
	// topologies[].chainDepth): capacity.BuildHops fits latency against it.
	FactChainDepth FactKey = "chain-depth"
)

// Facts of the deployed app, its mesh and its load, recorded for a reader of cases.jsonl (no reader in meshbench).
const (
	FactApp            FactKey = "app"              // the app (scenario's App)
	FactNamespaces     FactKey = "namespaces"       // the app's namespaces, comma-separated
	FactServices       FactKey = "services"         // how many Services the app has
	FactReplicas       FactKey = "replicas"         // the topology's replicas
	FactEntryURL       FactKey = "entry-url"        // the URL the load is sent to
	FactIstioRevision  FactKey = "istio-revision"   // the Istio revision the mode switch labelled the namespaces with
	FactMTLS           FactKey = "mtls"             // the effective mTLS mode of the app's namespaces
	FactVariant        FactKey = "variant"          // the variant's settings (scenario spec.variants), as applied
	FactVariantProof   FactKey = "variant-proof"    // how the variant was verified: the proxies that took it, the mTLS mode
	FactLoadShapeProof FactKey = "load-shape-proof" // a load variant's settings as the load's record shows them took effect
	// FactTracingProof is what a tracing variant's span sink received during the load: the traces its requests
	// started against the sampling rate (orchestrate checkSpans).
	FactTracingProof FactKey = "tracing-proof"
	FactAchievedQPS  FactKey = "achieved-qps" // the load's achieved rate, all clients
	FactErrorRate    FactKey = "error-rate"   // the load's error rate, %
	FactLoadClients  FactKey = "load-clients" // every client run: its window and achieved rate, "; "-joined
	FactLoadTargets  FactKey = "load-targets" // with several load targets, each one's share, "; "-joined
)

// Facts of a case's windows, written by the runner.
const (
	FactGuard           FactKey = "guard"              // how far every window kept from a phase change
	FactCoolDown        FactKey = "cool-down"          // the load's cool-down after the measured window
	FactLeadIn          FactKey = "lead-in"            // the load's lead-in before the measured window
	FactCollectorLeadIn FactKey = "collector-lead-in"  // the resource collector's lead-in
	FactLoadNotes       FactKey = "load-notes"         // the load generator's notes, "; "-joined
	FactResourceWindow  FactKey = "resource-window-"   // + window kind: the resource window's length
	FactModeFrom        FactKey = "mode-from"          // the mode the case switched from
	FactSwitchPrefix    FactKey = "switch-"            // + step: the mode switch's step durations
	FactVerifiedPods    FactKey = "verified-pods"      // pods the mode verification checked
	FactRestarted       FactKey = "restarted"          // workloads the mode switch restarted
	FactRestartedApp    FactKey = "restarted-app"      // startup.restartApp: the workloads the switch did not restart
	FactMoveOverBudget  FactKey = "move-over-budget"   // a transition case whose move took longer than its budget
	factCollectorWarn   FactKey = "collector-warnings" // on disk: CaseResult.CollectorWarnings, "; "-joined
	factSampleWarnings  FactKey = "warnings"           // on disk: CaseResult.SampleWarnings, "; "-joined
)

// Facts of a pod network case (meshbench cni).
const (
	FactCNIPath   FactKey = "path"   // the path (CNIPath)
	FactCNITest   FactKey = "test"   // the test (CNITest)
	FactCNITool   FactKey = "tool"   // the tool that measured it (iperf3, netperf, builtin)
	FactNodeA     FactKey = "node-a" // the client's node
	FactNodeB     FactKey = "node-b" // the server's node (absent for a same-node path)
	FactNamespace FactKey = "namespace"
)

// FactAttempt is the key of why measurement n of a case was not kept (FactAttemptPrefix+n).
func FactAttempt(n int) FactKey { return FactAttemptPrefix + FactKey(strconv.Itoa(n)) }

// FactDataPlaneOf is the key of the data-plane kind of one component (FactDataPlanePrefix+component).
func FactDataPlaneOf(c Component) FactKey { return FactDataPlanePrefix + FactKey(c) }

// FactResourceWindowOf is the key of the length of a case's resource window of kind (FactResourceWindow+kind).
func FactResourceWindowOf(kind string) FactKey { return FactResourceWindow + FactKey(kind) }

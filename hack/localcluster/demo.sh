#!/usr/bin/env bash
# demo.sh (make demo): the mission on this machine. Builds meshbench (MESHBENCH_BIN, default bin/), builds and starts
# the local two-node cluster and the local Istio (real istiod, istio-cni, sidecar and waypoint; a ztunnel stand-in),
# then takes a small app through none, sidecar, ambient and waypoint with `meshbench run -f $DEMO_SCENARIO`, and ends
# with the report's headlines and comparison and the path of report.html.
# Cold (first run on a machine): 42 minutes on 2 cores with nothing else running, the run's 12 included (README.md);
# no step is silent for more than a minute (with_heartbeat, and meshbench's own progress lines); warm: about a minute
# before the run. The cluster stays up afterwards (make cluster-down removes it).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
cd "$REPO"
# shellcheck source=hack/heartbeat.sh
source "$REPO/hack/heartbeat.sh"
SCENARIO=${DEMO_SCENARIO:-examples/demo.yaml}
OUT=${DEMO_OUTPUT_DIR:-runs}
BIN_DIR=${MESHBENCH_BIN:-$REPO/bin}
MESHBENCH=$BIN_DIR/meshbench
t0=$SECONDS
elapsed() { printf '%dm%02ds' $(((SECONDS - t0) / 60)) $(((SECONDS - t0) % 60)); }
step() { printf '\n== [%s] %s\n' "$(elapsed)" "$*" >&2; }
log() { printf '   [%s] %s\n' "$(elapsed)" "$*" >&2; } # with_heartbeat's lines
caveat() {
	cat >&2 <<'TXT'
   NOTE: on this local cluster istiod and the istio-cni node agents are real Istio (every mode switch is proven
   against them), and so are the SIDECAR and the WAYPOINT: Istio's pilot-agent with an upstream Envoy on the path of
   every request, with Istio's own telemetry filters off, so their figures are a lower bound of Istio's cost. ztunnel
   is a TEST STAND-IN (ztunnel cannot be had here): the Go HBONE node proxy (test double; not ztunnel's cost) carries
   ambient traffic as HBONE with mTLS; its figures are not ztunnel's. Every result, headline and chart says so per
   component.
TXT
}

step "dependencies (Debian packages)"
hack/install-deps.sh
step "meshbench (make build into $BIN_DIR; cold: a few minutes)"
with_heartbeat "building meshbench" make -s --no-print-directory build BIN="$BIN_DIR"
step "local Kubernetes cluster (cold: 16 min on a quiet machine, up to 38 measured while other builds shared the cores; then cached; a progress line every minute)"
bash hack/localcluster/up.sh
step "local Istio: real istiod + istio-cni, real sidecar and waypoint (pilot-agent + upstream Envoy), the ztunnel stand-in (cold: 8 min on a quiet machine, up to 17 measured; then cached)"
bash hack/localistio/istio-up.sh
set -a
# shellcheck source=/dev/null
. "${MESHBENCH_CLUSTER_DIR:-/var/lib/meshbench/localcluster}/cluster.env"
set +a

step "the plan: $SCENARIO"
"$MESHBENCH" plan -f "$SCENARIO"
caveat
step "preflight (changes nothing)"
"$MESHBENCH" preflight -f "$SCENARIO"
step "run: every mode, verified per pod before it is measured"
mkdir -p "$OUT"
marker=$(mktemp)
rc=0
"$MESHBENCH" run -f "$SCENARIO" --output-dir "$OUT" || rc=$?

# The run directory this run created: the newest run.json under $OUT written after the marker.
dir=$(find "$OUT" -mindepth 2 -maxdepth 2 -name run.json -newer "$marker" -printf '%T@ %h\n' 2>/dev/null | sort -n | tail -1 | cut -d' ' -f2-)
rm -f "$marker"
[ -z "$dir" ] || dir=$(realpath "$dir")
step "result"
caveat
if [ -n "$dir" ] && [ -f "$dir/report/report.md" ]; then
	# The report's headlines and its mode-by-mode comparison, as text for this terminal (report.md is Markdown, with
	# HTML anchors); the run already wrote the report files.
	"$MESHBENCH" report "$dir" --no-files --show headlines,modes || echo "(meshbench report --show failed: read $dir/report/report.md)" >&2
	echo
	echo "report: $dir/report/report.html (self-contained: open it in a browser)"
	echo "results: $dir (run.json, samples.jsonl, cases.jsonl, summary.json; see docs/results.md)"
else
	echo "no report was written (meshbench run exited $rc): see the messages above" >&2
fi
step "demo done in $(((SECONDS - t0) / 60))m$(((SECONDS - t0) % 60))s (meshbench run exit $rc); the cluster stays up: make cluster-down removes it"
exit "$rc"

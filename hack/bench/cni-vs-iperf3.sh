#!/usr/bin/env bash
# cni-vs-iperf3.sh: does `meshbench cni` report what iperf3 itself measures? Against the local cluster
# (make cluster-up), it runs `meshbench cni` on the cross-node path (iperf3 TCP, SAMPLES x DURATION), keeps the
# test pods (--keep), then runs the same iperf3 command by hand (kubectl exec) in the same client pod against the
# same server pod, and prints both means in Gbit/s and their ratio. Exit 1 when they differ by more than TOLERANCE
# percent (default 3). The test namespace is deleted at the end in every case.
#
# The hand-run command is exactly the one meshbench execs (internal/nettool.Args: -J -c -p -t -O -P
# --get-server-output), so any difference is the harness's own cost or noise. On a small shared machine, noise
# dominates: use SAMPLES >= 5.
#
# Usage: hack/bench/cni-vs-iperf3.sh   (env: SAMPLES=5 DURATION=10 OMIT=1 TOLERANCE=3 MESHBENCH=path/to/meshbench)
set -euo pipefail

SAMPLES=${SAMPLES:-5}
DURATION=${DURATION:-10}
OMIT=${OMIT:-1}
TOLERANCE=${TOLERANCE:-3}
CLUSTER_DIR=${MESHBENCH_CLUSTER_DIR:-/var/lib/meshbench/localcluster}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

die() { echo "cni-vs-iperf3: $*" >&2; exit 2; }
[ -f "$CLUSTER_DIR/cluster.env" ] || die "no local cluster ($CLUSTER_DIR/cluster.env): run make cluster-up"
set -a
# shellcheck disable=SC1091
. "$CLUSTER_DIR/cluster.env"
set +a
command -v jq >/dev/null || die "jq is required"
KUBECTL=${KUBECTL:-$CLUSTER_DIR/bin/k8s/kubectl}
[ -x "$KUBECTL" ] || KUBECTL=kubectl

work=$(mktemp -d)
ns=""
cleanup() {
	if [ -n "$ns" ]; then
		"$KUBECTL" delete namespace "$ns" --wait=true --timeout=3m >/dev/null 2>&1 || echo "warning: delete namespace $ns failed" >&2
	fi
	rm -rf "$work"
}
trap cleanup EXIT

MESHBENCH=${MESHBENCH:-}
if [ -z "$MESHBENCH" ]; then
	MESHBENCH=$work/meshbench
	(cd "$REPO" && go build -o "$MESHBENCH" ./cmd/meshbench)
fi

cat >"$work/scenario.yaml" <<EOF
apiVersion: meshbench.dev/v1alpha1
kind: Scenario
metadata:
  name: cni-vs-iperf3
spec:
  profile: localcluster
  cni:
    tests: [tcp]
    paths: [cross-node]
    duration: ${DURATION}s
    samples: $SAMPLES
    streams: 1
    omit: ${OMIT}s
EOF

echo "== meshbench cni: cross-node iperf3 TCP, $SAMPLES x ${DURATION}s (omit ${OMIT}s)"
"$MESHBENCH" cni -f "$work/scenario.yaml" --output-dir "$work/runs" --keep -o json -q >"$work/report.json"
ns=$(jq -r .namespace "$work/report.json")
mb=$(jq -r '.rows[] | select(.path=="cross-node" and .test=="tcp") | .mean' "$work/report.json")
mb_values=$(jq -r '.rows[] | select(.path=="cross-node" and .test=="tcp") | .values | map(tostring) | join(" ")' "$work/report.json")
server=$(jq -r '.pods[] | select(.role=="server-remote") | .ip' "$work/report.json")
[ -n "$ns" ] && [ "$mb" != "null" ] && [ -n "$server" ] || die "meshbench produced no cross-node tcp result: $(cat "$work/report.json")"
echo "   meshbench: $mb Gbit/s (samples: $mb_values) in namespace $ns, server-remote $server"

echo "== iperf3 by hand in the same pods: iperf3 -J -c $server -p 5201 -t $DURATION -O $OMIT -P 1 --get-server-output"
sum=0
hand_values=""
for i in $(seq 1 "$SAMPLES"); do
	bps=$("$KUBECTL" -n "$ns" exec client -c net -- iperf3 -J -c "$server" -p 5201 -t "$DURATION" -O "$OMIT" -P 1 --get-server-output |
		jq -r '.end.sum_received.bits_per_second')
	g=$(echo "$bps / 1000000000" | bc -l)
	hand_values="$hand_values $(printf '%.3f' "$g")"
	sum=$(echo "$sum + $g" | bc -l)
done
hand=$(echo "$sum / $SAMPLES" | bc -l)
echo "   by hand:   $(printf '%.3f' "$hand") Gbit/s (samples:$hand_values)"

ratio=$(echo "$mb / $hand" | bc -l)
dev=$(echo "($ratio - 1) * 100" | bc -l)
printf '== meshbench %.3f Gbit/s, iperf3 by hand %.3f Gbit/s, ratio %.4f (%+.2f %%; tolerance %s %%)\n' "$mb" "$hand" "$ratio" "$dev" "$TOLERANCE"
within=$(echo "define abs(x) { if (x < 0) return -x; return x; }; abs($dev) <= $TOLERANCE" | bc -l)
if [ "$within" != 1 ]; then
	echo "FAIL: meshbench and iperf3 differ by more than $TOLERANCE %" >&2
	exit 1
fi
echo "OK: within $TOLERANCE %"

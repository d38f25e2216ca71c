#!/usr/bin/env bash
# Captures the real iperf3 JSON fixtures in this directory (root needed; traffic stays inside two network
# namespaces this script creates and deletes). iperf3 must be Debian's 3.12 (`iperf3 --version`).
#
#   client ns mbcap-a 10.254.77.1/24  <--veth-->  server ns mbcap-b 10.254.77.2/24
#   "ClusterIP" 10.254.78.10:{5201,5202} in mbcap-a = iptables OUTPUT DNAT to 10.254.77.2 (like kube-proxy)
#
# Usage: sudo ./capture.sh [outdir]   (default: the directory of this script)
set -euo pipefail
out=${1:-$(cd "$(dirname "$0")" && pwd)}
A=mbcap-a B=mbcap-b VIP=10.254.78.10
cleanup() {
	[ -n "${srv:-}" ] && kill "$srv" 2>/dev/null || true
	[ -n "${srv2:-}" ] && kill "$srv2" 2>/dev/null || true
	ip netns del "$A" 2>/dev/null || true
	ip netns del "$B" 2>/dev/null || true
}
trap cleanup EXIT
ip netns add "$A"
ip netns add "$B"
ip link add mbcap-va netns "$A" type veth peer name mbcap-vb netns "$B"
ip -n "$A" addr add 10.254.77.1/24 dev mbcap-va
ip -n "$B" addr add 10.254.77.2/24 dev mbcap-vb
for ns in "$A" "$B"; do ip -n "$ns" link set lo up; done
ip -n "$A" link set mbcap-va up
ip -n "$B" link set mbcap-vb up
ip -n "$A" route add 10.254.78.0/24 dev mbcap-va
for proto in tcp udp; do
	for port in 5201 5202; do
		ip netns exec "$A" iptables -t nat -A OUTPUT -d "$VIP" -p "$proto" --dport "$port" -j DNAT --to-destination "10.254.77.2:$port"
	done
done
ip netns exec "$B" iperf3 -s -J -p 5201 >/dev/null 2>&1 &   # -J: clients get server_output_json
srv=$!
ip netns exec "$B" iperf3 -s -p 5202 >/dev/null 2>&1 &   # text server: clients get server_output_text
srv2=$!
sleep 1
c() { ip netns exec "$A" iperf3 "$@"; }
# Args as internal/nettool builds them (see iperf3.go); --get-server-output where the orchestration uses it.
c -J -c 10.254.77.2 -p 5201 -t 3 -O 1 -P 1 --get-server-output >"$out/iperf3-tcp-p1.json"
c -J -c 10.254.77.2 -p 5201 -t 3 -O 1 -P 4 --get-server-output >"$out/iperf3-tcp-p4.json"
c -J -c "$VIP" -p 5201 -t 3 -O 1 -P 1 --get-server-output >"$out/iperf3-tcp-clusterip.json"
c -J -c "$VIP" -p 5202 -t 3 -O 1 -P 1 --get-server-output >"$out/iperf3-tcp-clusterip-servertext.json"
# UDP without -O: iperf3 3.12 over-counts lost packets on the client side when --omit is used (kept as a fixture).
c -J -c 10.254.77.2 -p 5201 -t 3 -u -b 1G --get-server-output >"$out/iperf3-udp-1g.json"
c -J -c 10.254.77.2 -p 5201 -t 3 -u -b 1G -l 1400 >"$out/iperf3-udp-1g-l1400.json"
c -J -c "$VIP" -p 5201 -t 3 -u -b 500M --get-server-output >"$out/iperf3-udp-clusterip.json"
c -J -c 10.254.77.2 -p 5201 -t 3 -O 1 -u -b 1G --get-server-output >"$out/iperf3-udp-1g-omit-bug.json"
# What study B did: no -b, so iperf3 sends at its 1 Mibit/s default (Parse must refuse this when -b was asked).
c -J -c 10.254.77.2 -p 5201 -t 3 -u >"$out/iperf3-udp-default-bitrate.json"
# Failures: nothing listening; server busy (second client while the first runs).
c -J -c 10.254.77.2 -p 5999 -t 1 >"$out/iperf3-error-refused.json" || true
c -J -c 10.254.77.2 -p 5202 -t 4 >/dev/null &
first=$!
sleep 1
c -J -c 10.254.77.2 -p 5202 -t 1 >"$out/iperf3-error-busy.json" || true
wait "$first" || true
iperf3 --version | head -1 >"$out/iperf3-version.txt"
echo "captured into $out"

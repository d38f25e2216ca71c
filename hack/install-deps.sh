#!/usr/bin/env bash
# Installs the Debian packages meshbench's tests and local cluster need, once (apt-get only when something is
# missing, so a warm machine skips it). Run as root on Debian 12.
set -euo pipefail
# shellcheck source=hack/heartbeat.sh
source "$(dirname "${BASH_SOURCE[0]}")/heartbeat.sh"
pkgs=(
  containerd runc iptables conntrack socat ebtables ethtool ipset busybox-static iproute2  # local cluster nodes
  openssl jq bc curl nftables                                                             # PKI and scripts
  prometheus                                                                              # real Prometheus for tests and the harness
  docker-registry                                                                         # the local cluster's OCI registry (distribution 2.8.2)
  iperf3 wrk                                                                              # network tests, loadgen bench peer
  postgresql-15                                                                           # the local cluster's postgres image (Bank of Anthos databases)
  chromium                                                                                # report rendering test
)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  with_heartbeat "updating the package lists (apt-get update)" apt-get update -qq
  # chromium and postgresql-15 with their dependencies: minutes on a fresh machine.
  with_heartbeat "installing ${#missing[@]} Debian packages (apt-get install)" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
echo "deps ok"

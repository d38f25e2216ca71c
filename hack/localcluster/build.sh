#!/usr/bin/env bash
# build.sh: builds (once) and caches every binary and image tarball the local cluster needs under $S/bin, then builds
# the project's meshbench CLI into $S/build (always: up.sh pushes meshbench's own images with `meshbench images push`,
# which builds them from this source tree).
#
# A component is rebuilt only when its stamp ($S/bin/stamps/NAME) differs: the stamp is version + Go version +
# hash of the Go module that builds it (+ the inputs of images). Sourced by up.sh; can also run on its own.
#
# Cold on 2 cores (see README.md, measured): Kubernetes 6-38 min (363 s on a quiet machine, 855 s in a cold
# `make demo`, 1645 s while other builds shared the cores), CoreDNS 2-3 min, etcd 1-4 min, CNI < 1 min, tools 2-3 min.

# shellcheck source=lib.sh
[ -n "${LC_DIR:-}" ] || source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

K8S_LDFLAGS="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37 -X k8s.io/component-base/version.gitTreeState=clean -X k8s.io/component-base/version.buildDate=1970-01-01T00:00:00Z"

# module_hash DIR: hash of a Go module's go.mod, go.sum and sources, so an edited main or a changed pin rebuilds.
module_hash() {
	(cd "$1" && find . \( -name '*.go' -o -name go.mod -o -name go.sum \) -type f | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-16)
}
file_hash() { cat "$@" | sha256sum | cut -c1-16; }

stamp_ok() {
	local name=$1 want=$2
	shift 2
	[ "$(cat "$S/bin/stamps/$name" 2>/dev/null)" = "$want" ] || return 1
	for o in "$@"; do [ -e "$o" ] || return 1; done
}
stamp_write() { mkdir -p "$S/bin/stamps" && echo "$2" >"$S/bin/stamps/$1"; }

# timed NAME CMD...: run a build step and log how long it took.
timed() {
	local name=$1 t0
	shift
	t0=$(date +%s.%N)
	with_heartbeat "building $name" "$@" || die "build of $name failed"
	log "built $name in $(echo "$(date +%s.%N) - $t0" | bc | xargs printf '%.1f')s"
}

build_k8s() {
	local st out="$S/bin/k8s"
	st="k8s $K8S_VERSION $(go env GOVERSION) $(module_hash "$LC_DIR/k8s") $(echo "$K8S_LDFLAGS" | sha256sum | cut -c1-8)"
	stamp_ok k8s "$st" "$out"/{kube-apiserver,kube-controller-manager,kube-scheduler,kubelet,kube-proxy,kubectl} && return 0
	log "building Kubernetes $K8S_VERSION (apiserver, controller-manager, scheduler, kubelet, kube-proxy, kubectl): cold 6-38 min on 2 cores (363-2252 s measured), a progress line every minute"
	mkdir -p "$out"
	# One go build for all mains: the shared packages are compiled once. CGO stays on (the upstream default).
	timed kubernetes bash -c "cd '$LC_DIR/k8s' && go build -trimpath -ldflags '$K8S_LDFLAGS' -o '$out/' ./cmd/..."
	stamp_write k8s "$st"
}

build_etcd() {
	local st
	st="etcd $ETCD_VERSION $(go env GOVERSION) $(module_hash "$LC_DIR/etcd")"
	stamp_ok etcd "$st" "$S/bin/etcd" && return 0
	log "building etcd $ETCD_VERSION"
	timed etcd bash -c "cd '$LC_DIR/etcd' && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o '$S/bin/etcd' ."
	stamp_write etcd "$st"
}

build_coredns() {
	local st
	st="coredns $COREDNS_VERSION $(go env GOVERSION) $(module_hash "$LC_DIR/coredns")"
	stamp_ok coredns "$st" "$S/bin/coredns" && return 0
	log "building CoreDNS $COREDNS_VERSION (minimal plugin set)"
	timed coredns bash -c "cd '$LC_DIR/coredns' && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o '$S/bin/coredns' ."
	stamp_write coredns "$st"
}

build_cni() {
	local st m=github.com/containernetworking/plugins/plugins
	st="cni $CNI_VERSION $(go env GOVERSION)"
	stamp_ok cni "$st" "$S"/bin/cni/{bridge,host-local,loopback,portmap} && return 0
	log "building CNI plugins $CNI_VERSION (bridge, host-local, loopback, portmap)"
	mkdir -p "$S/bin/cni"
	timed cni env GOBIN="$S/bin/cni" CGO_ENABLED=0 go install -trimpath -ldflags '-s -w' \
		"$m/main/bridge@$CNI_VERSION" "$m/ipam/host-local@$CNI_VERSION" "$m/main/loopback@$CNI_VERSION" "$m/meta/portmap@$CNI_VERSION"
	stamp_write cni "$st"
}

build_tools() {
	local st
	st="tools $(go env GOVERSION) $(module_hash "$LC_DIR/tools")"
	stamp_ok tools "$st" "$S"/bin/tools/{mkimage,pause,mbctl,regpush} && return 0
	log "building harness tools (mkimage, pause, mbctl, regpush)"
	mkdir -p "$S/bin/tools"
	timed tools bash -c "cd '$LC_DIR/tools' && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o '$S/bin/tools/' ./cmd/..."
	stamp_write tools "$st"
}

# busybox_links: every busybox applet as /bin/<applet> -> /bin/busybox, so `sh`, `wget`, `nslookup`, `ip`, ... work
# in exec sessions.
busybox_links() {
	/bin/busybox --list | grep -v -x busybox | sed 's|.*|/bin/&=/bin/busybox|' | paste -sd, -
}

mkimage() { "$S/bin/tools/mkimage" "$@"; }
# shellcheck source=postgres-image.sh
[ -f "$LC_DIR/postgres-image.sh" ] && source "$LC_DIR/postgres-image.sh"

build_images() {
	local st out="$S/bin/images" libs=() l
	mkdir -p "$out"

	st="pause $IMG_PAUSE $(file_hash "$S/bin/tools/pause" "$S/bin/tools/mkimage")"
	if ! stamp_ok image-pause "$st" "$out/pause.tar"; then
		mkimage -ref "$IMG_PAUSE" -out "$out/pause.tar" -entrypoint /pause -user 65535:65535 \
			-label org.opencontainers.image.title=meshbench-pause "$S/bin/tools/pause=/pause"
		stamp_write image-pause "$st"
		log "packed $IMG_PAUSE"
	fi

	st="coredns $IMG_COREDNS $(file_hash "$S/bin/coredns" "$S/bin/tools/mkimage")"
	if ! stamp_ok image-coredns "$st" "$out/coredns.tar"; then
		mkimage -ref "$IMG_COREDNS" -out "$out/coredns.tar" -entrypoint /coredns \
			-label org.opencontainers.image.title=coredns -label org.opencontainers.image.version="$COREDNS_VERSION" \
			"$S/bin/coredns=/coredns"
		stamp_write image-coredns "$st"
		log "packed $IMG_COREDNS"
	fi

	# iperf3 from Debian with its shared-library closure (ldd, including the dynamic loader) plus busybox.
	while read -r l; do libs+=("$l=$l"); done < <(ldd /usr/bin/iperf3 | awk '/=> \// { print $3 } /^\t\// { print $1 }')
	st="iperf3 $IMG_IPERF3 $(dpkg-query -W -f '${Version}' iperf3 libiperf0 libc6 libssl3 busybox-static 2>/dev/null) $(file_hash /usr/bin/iperf3 /bin/busybox "$S/bin/tools/mkimage" "${libs[@]%%=*}")"
	if ! stamp_ok image-iperf3 "$st" "$out/iperf3.tar"; then
		mkimage -ref "$IMG_IPERF3" -out "$out/iperf3.tar" -entrypoint /usr/bin/iperf3 \
			-label org.opencontainers.image.title=iperf3 \
			-label "org.opencontainers.image.version=$(dpkg-query -W -f '${Version}' iperf3)" \
			-symlinks "$(busybox_links)" /usr/bin/iperf3=/usr/bin/iperf3 /bin/busybox=/bin/busybox "${libs[@]}"
		stamp_write image-iperf3 "$st"
		log "packed $IMG_IPERF3 (iperf3 + ${#libs[@]} shared objects + busybox)"
	fi

	# toolbox: static busybox with every applet, for test pods that need a shell (httpd, nslookup, wget); meshbench's
	# own agent image has no shell.
	st="toolbox $IMG_TOOLBOX $(dpkg-query -W -f '${Version}' busybox-static 2>/dev/null) $(file_hash /bin/busybox "$S/bin/tools/mkimage")"
	if ! stamp_ok image-toolbox "$st" "$out/toolbox.tar"; then
		mkimage -ref "$IMG_TOOLBOX" -out "$out/toolbox.tar" -entrypoint /bin/sh \
			-label org.opencontainers.image.title=meshbench-toolbox \
			-label "org.opencontainers.image.version=$(dpkg-query -W -f '${Version}' busybox-static)" \
			-symlinks "$(busybox_links)" /bin/busybox=/bin/busybox
		stamp_write image-toolbox "$st"
		log "packed $IMG_TOOLBOX (busybox)"
	fi

	if declare -F build_postgres_image >/dev/null; then
		build_postgres_image "$out/postgres.tar" "$IMG_POSTGRES"
	fi
}

# build_meshbench: the CLI from the MAIN module with the Makefile's version stamping (cheap when nothing changed). Its
# version is the tag of the meshbench images it pushes (`meshbench images push`), so the CLI and the agent match.
build_meshbench() {
	timed meshbench bash -c "cd '$REPO_ROOT' && make -s build BIN='$S/build' >/dev/null"
}

build_all() {
	command -v go >/dev/null || die "go not found in PATH"
	build_k8s
	build_etcd
	build_cni
	build_tools
	build_coredns
	build_images
	build_meshbench
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	build_all
	log "all components built; cache in $S/bin"
fi

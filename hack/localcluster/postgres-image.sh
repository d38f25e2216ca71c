# shellcheck shell=bash
# postgres-image.sh: the local cluster's postgres image, for Bank of Anthos' accounts-db and ledger-db (whose
# upstream images, postgres:16-alpine plus init scripts, cannot be pulled here). Sourced by build.sh, which provides
# $S, $LC_DIR, mkimage, busybox_links, stamp_ok, stamp_write, file_hash and log.
#
# It packs Debian's real PostgreSQL 15 (package postgresql-15: server, initdb, pg_ctl, psql, pg_isready, the
# server's loadable modules and share files) with the shared-library closure of every ELF file (ldd, as build.sh
# does for iperf3), the C.UTF-8 locale, the time zone database and busybox-static for sh and the entrypoint's tools.
# The entrypoint (postgres/docker-entrypoint.sh) keeps the contract of the official image's docker-entrypoint.sh;
# the image config mirrors the official Dockerfile: no USER (root: the entrypoint chowns PGDATA and drops to
# postgres), PGDATA=/var/lib/postgresql/data, PG_MAJOR, CMD postgres, listen_addresses = '*' in the sample config.
# postgres is uid/gid 70 as in the alpine images Bank of Anthos builds on. Not expressible with mkimage:
# STOPSIGNAL SIGINT (postgres gets the runtime's SIGTERM: a "smart" shutdown) and the image's VOLUME.

PG_IMAGE_MAJOR=15

# build_postgres_image OUT_TAR REF: writes the docker-archive OUT_TAR tagged REF, unless its stamp is current.
# The stamp hashes every packed file. Finding them needs ldd on ~80 ELF files (15 s on a loaded 2-core machine), so
# the check reuses the list of the last build: a changed file changes the hash, and the rebuild lists afresh.
build_postgres_image() {
	local out=$1 ref=$2 src="$S/bin/images/postgres-src" st files=()
	local pgver
	pgver=$(dpkg-query -W -f '${Version}' "postgresql-$PG_IMAGE_MAJOR" 2>/dev/null) ||
		die "postgres image: package postgresql-$PG_IMAGE_MAJOR is not installed (hack/install-deps.sh)"
	_pg_image_generated "$src"
	if [ -s "$src/files.txt" ]; then
		mapfile -t files <"$src/files.txt"
		# A list naming files that are gone (another clone's entrypoint, e.g. CI's) is made afresh.
		_pg_image_all_exist "${files[@]}" || files=()
	fi
	if [ ${#files[@]} -gt 0 ]; then
		st=$(_pg_image_stamp "$ref" "${files[@]}")
		if stamp_ok image-postgres "$st" "$out"; then
			return 0
		fi
	fi
	_pg_image_files "$src" >"$src/files.txt"
	mapfile -t files <"$src/files.txt"
	st=$(_pg_image_stamp "$ref" "${files[@]}")
	mkimage -ref "$ref" -out "$out" -entrypoint /usr/local/bin/docker-entrypoint.sh -cmd postgres -user 0:0 \
		-env "PG_MAJOR=$PG_IMAGE_MAJOR" -env PGDATA=/var/lib/postgresql/data -env LANG=C.UTF-8 \
		-label org.opencontainers.image.title=meshbench-postgres -label "org.opencontainers.image.version=$pgver" \
		-symlinks "$(_pg_image_links)" "${files[@]}" ||
		die "postgres image: mkimage failed"
	stamp_write image-postgres "$st"
	log "packed $ref (PostgreSQL $pgver: ${#files[@]} files + busybox)"
}

_pg_image_all_exist() {
	local f
	for f in "$@"; do [ -e "${f%%=*}" ] || return 1; done
}

_pg_image_bin() { echo "/usr/lib/postgresql/$PG_IMAGE_MAJOR/bin"; }

# _pg_image_stamp REF SRC=DST...: what the image is made of.
_pg_image_stamp() {
	local ref=$1
	shift
	echo "postgres $ref $(dpkg-query -W -f '${Version} ' "postgresql-$PG_IMAGE_MAJOR" libc6 tzdata busybox-static 2>/dev/null)" \
		"$(file_hash "$S/bin/tools/mkimage" "${@%%=*}")" "$(_pg_image_links | sha256sum | cut -c1-16)"
}

# _pg_image_links: busybox's applets in /bin (sh, su, find, ...) and the client/server binaries in /usr/local/bin
# (on PATH, for `kubectl exec ... psql`; initdb and pg_ctl resolve the link to find postgres and the share files).
_pg_image_links() {
	local f links
	links=$(busybox_links)
	for f in postgres initdb pg_ctl psql pg_isready; do links+=",/usr/local/bin/$f=$(_pg_image_bin)/$f"; done
	echo "$links"
}

# _pg_image_generated DIR: the files the image gets that are not the host's: the users (postgres is 70:70), the
# sample config with listen_addresses = '*' (as the official Dockerfile does, "make the sample config easier to
# munge (and correct by default)").
_pg_image_generated() {
	local dir=$1 share=/usr/share/postgresql/$PG_IMAGE_MAJOR
	mkdir -p "$dir"
	printf 'root:x:0:0:root:/root:/bin/sh\npostgres:x:70:70:PostgreSQL:/var/lib/postgresql:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$dir/passwd"
	printf 'root:x:0:\npostgres:x:70:\nnobody:x:65534:\n' >"$dir/group"
	sed -r "s!^#?(listen_addresses)\s*=\s*\S+.*!\1 = '*'!" "$share/postgresql.conf.sample" >"$dir/postgresql.conf.sample"
	grep -qF "listen_addresses = '*'" "$dir/postgresql.conf.sample" ||
		die "postgres image: could not set listen_addresses in $share/postgresql.conf.sample"
}

# _pg_image_files DIR: every SRC=DST the image packs, one per line (DIR holds the generated ones).
_pg_image_files() {
	local dir=$1 bin lib share=/usr/share/postgresql/$PG_IMAGE_MAJOR f elfs=()
	bin=$(_pg_image_bin)
	lib=${bin%/bin}/lib
	[ -x "$bin/postgres" ] || die "postgres image: $bin/postgres not found (install postgresql-$PG_IMAGE_MAJOR: hack/install-deps.sh)"
	# The binaries and the server's loadable modules; llvmjit (JIT, 100+ MB of libLLVM; postgres runs without it)
	# and sepgsql (SELinux) are left out. Then their shared-library closure, the dynamic loader included.
	for f in postgres initdb pg_ctl psql pg_isready; do elfs+=("$bin/$f"); done
	for f in "$lib"/*.so; do
		case "$f" in */llvmjit.so | */sepgsql.so) continue ;; esac
		elfs+=("$f")
	done
	{
		printf '%s\n' "${elfs[@]}"
		for f in "${elfs[@]}"; do ldd "$f"; done | awk '/=> \// { print $3 } /^\t\// { print $1 }'
		# Share files (catalog bootstrap, extension scripts, time zone abbreviations, text search data) minus the
		# man pages and the sample config (generated); Debian builds --with-system-tzdata=/usr/share/zoneinfo (the
		# right/ and posix/ copies are not needed); the C.UTF-8 locale of LANG.
		find "$share" \( -type f -o -type l \) ! -path "$share/man/*" ! -name postgresql.conf.sample
		find /usr/share/zoneinfo \( -type f -o -type l \) ! -path '*/right/*' ! -path '*/posix/*' ! -name localtime
		find /usr/lib/locale/C.utf8 -type f
	} | LC_ALL=C sort -u | sed 's/.*/&=&/'
	printf '%s\n' "$dir/passwd=/etc/passwd" "$dir/group=/etc/group" "$dir/postgresql.conf.sample=$share/postgresql.conf.sample" \
		"$LC_DIR/postgres/docker-entrypoint.sh=/usr/local/bin/docker-entrypoint.sh" /bin/busybox=/bin/busybox
}

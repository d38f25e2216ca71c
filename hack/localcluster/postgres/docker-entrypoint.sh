#!/bin/sh
# docker-entrypoint.sh of the local cluster's postgres image (built by ../postgres-image.sh): Debian's real
# PostgreSQL behind the contract of the official image's entrypoint, so that Bank of Anthos' accounts-db and
# ledger-db StatefulSets run here exactly as upstream writes them (no securityContext: the container starts as root).
#
# The contract is docker-library/postgres docker-entrypoint.sh (the template every 14-18 image copies; read at
# commit 6edb0a8c4def40c371514b34aef9037ec82d9110), rewritten for busybox sh: no bash arrays, no gosu (busybox `su`
# drops privileges and execs, as gosu does), no process substitution (the password goes through a 0600 temp file).
#
#   as root:  create PGDATA (0700) and /var/run/postgresql (03775), chown what is not postgres's to postgres, and
#             re-exec this script as postgres. The kubelet creates a subPath mount point root-owned: this is what
#             makes it usable, and why the databases must not run with runAsUser/runAsNonRoot.
#   empty PGDATA (no PG_VERSION):
#             initdb --username=$POSTGRES_USER --pwfile=<$POSTGRES_PASSWORD> $POSTGRES_INITDB_ARGS; append
#             "host all all all <password_encryption>" (or $POSTGRES_HOST_AUTH_METHOD) to pg_hba.conf; start a
#             socket-only temporary server; CREATE DATABASE $POSTGRES_DB unless it exists; run
#             /docker-entrypoint-initdb.d/* in name order (*.sh run when executable, sourced otherwise; *.sql,
#             *.sql.gz, *.sql.xz through psql; anything else ignored); stop the temporary server.
#   always:   exec "$@" (CMD postgres). listen_addresses = '*' comes from the image's postgresql.conf.sample, which
#             postgres-image.sh patches as the official Dockerfile does.
#
# Env as upstream: POSTGRES_PASSWORD (required unless POSTGRES_HOST_AUTH_METHOD=trust), POSTGRES_USER (default
# postgres), POSTGRES_DB (default $POSTGRES_USER), POSTGRES_INITDB_ARGS, POSTGRES_INITDB_WALDIR,
# POSTGRES_HOST_AUTH_METHOD, the *_FILE variants of the first four, PGDATA, PGPORT.
# Left out: nss_wrapper for arbitrary --user uids (the image's passwd has postgres), *.sql.zst (no zstd in busybox),
# the 18+ check for data in pre-18 locations (this is PostgreSQL 15).
set -e

export PATH="/usr/lib/postgresql/${PG_MAJOR:-15}/bin:$PATH"

# file_env VAR [DEFAULT]: VAR from $VAR, else from the file named by $VAR_FILE, else DEFAULT (exclusive).
file_env() {
	fe_var=$1
	fe_def=${2:-}
	eval "fe_val=\${$fe_var:-} fe_file=\${${fe_var}_FILE:-}"
	if [ -n "$fe_val" ] && [ -n "$fe_file" ]; then
		printf >&2 'error: both %s and %s_FILE are set (but are exclusive)\n' "$fe_var" "$fe_var"
		exit 1
	fi
	if [ -z "$fe_val" ]; then
		if [ -n "$fe_file" ]; then
			fe_val=$(cat "$fe_file")
		else
			fe_val=$fe_def
		fi
	fi
	export "$fe_var=$fe_val"
	unset "${fe_var}_FILE"
}

docker_setup_env() {
	file_env POSTGRES_PASSWORD
	file_env POSTGRES_USER postgres
	file_env POSTGRES_DB "$POSTGRES_USER"
	file_env POSTGRES_INITDB_ARGS
	: "${POSTGRES_HOST_AUTH_METHOD:=}"
	DATABASE_ALREADY_EXISTS=
	if [ -s "$PGDATA/PG_VERSION" ]; then
		DATABASE_ALREADY_EXISTS=true
	fi
}

docker_create_db_directories() {
	mkdir -p "$PGDATA"
	# ignore failure: PostgreSQL checks the permissions itself later
	chmod 00700 "$PGDATA" || :
	mkdir -p /var/run/postgresql || :
	chmod 03775 /var/run/postgresql || :
	if [ -n "${POSTGRES_INITDB_WALDIR:-}" ]; then
		mkdir -p "$POSTGRES_INITDB_WALDIR"
		if [ "$(id -u)" = 0 ]; then
			find "$POSTGRES_INITDB_WALDIR" \! -user postgres -exec chown postgres '{}' +
		fi
		chmod 700 "$POSTGRES_INITDB_WALDIR"
	fi
	if [ "$(id -u)" = 0 ]; then
		# The official image ships an empty /docker-entrypoint-initdb.d; mkimage packs files only, so make it here.
		mkdir -p /docker-entrypoint-initdb.d
		find "$PGDATA" \! -user postgres -exec chown postgres '{}' +
		find /var/run/postgresql \! -user postgres -exec chown postgres '{}' +
	fi
}

docker_init_database_dir() {
	if [ -n "${POSTGRES_INITDB_WALDIR:-}" ]; then
		set -- --waldir "$POSTGRES_INITDB_WALDIR" "$@"
	fi
	# --pwfile refuses a properly empty file, hence the newline (docker-library/postgres issue 1025).
	pwfile=$(mktemp)
	printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
	eval 'initdb --username="$POSTGRES_USER" --pwfile="$pwfile" '"$POSTGRES_INITDB_ARGS"' "$@"'
	rm -f "$pwfile"
}

docker_verify_minimum_env() {
	if [ -z "$POSTGRES_PASSWORD" ] && [ "$POSTGRES_HOST_AUTH_METHOD" != trust ]; then
		cat >&2 <<'EOE'
Error: Database is uninitialized and superuser password is not specified.
       You must specify POSTGRES_PASSWORD to a non-empty value for the
       superuser, or POSTGRES_HOST_AUTH_METHOD=trust (not recommended).
EOE
		exit 1
	fi
	if [ "$POSTGRES_HOST_AUTH_METHOD" = trust ]; then
		echo >&2 'WARNING: POSTGRES_HOST_AUTH_METHOD has been set to "trust": every connection is accepted without a password.'
	fi
}

# docker_process_sql [psql args]: psql as $POSTGRES_USER on $POSTGRES_DB over the socket; init scripts that are
# sourced may call it, as with the official image.
docker_process_sql() {
	psql_db "$POSTGRES_DB" "$@"
}

# psql_db DB [psql args]: docker_process_sql on another database (the official script prefixes POSTGRES_DB= to a
# function call, which POSIX sh does not scope to the call).
psql_db() {
	pd_db=$1
	shift
	PGHOST='' PGHOSTADDR='' psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --no-password --no-psqlrc --dbname "$pd_db" "$@"
}

docker_process_init_files() {
	printf '\n'
	for f; do
		case "$f" in
		*.sh)
			if [ -x "$f" ]; then
				printf '%s: running %s\n' "$0" "$f"
				"$f"
			else
				printf '%s: sourcing %s\n' "$0" "$f"
				# shellcheck disable=SC1090
				. "$f"
			fi
			;;
		*.sql)
			printf '%s: running %s\n' "$0" "$f"
			docker_process_sql -f "$f"
			printf '\n'
			;;
		*.sql.gz)
			printf '%s: running %s\n' "$0" "$f"
			gunzip -c "$f" | docker_process_sql
			printf '\n'
			;;
		*.sql.xz)
			printf '%s: running %s\n' "$0" "$f"
			xzcat "$f" | docker_process_sql
			printf '\n'
			;;
		*) printf '%s: ignoring %s\n' "$0" "$f" ;;
		esac
		printf '\n'
	done
}

docker_setup_db() {
	db_exists=$(psql_db postgres --set db="$POSTGRES_DB" --tuples-only <<'EOSQL'
SELECT 1 FROM pg_database WHERE datname = :'db' ;
EOSQL
)
	if [ -z "$db_exists" ]; then
		psql_db postgres --set db="$POSTGRES_DB" <<'EOSQL'
CREATE DATABASE :"db" ;
EOSQL
		printf '\n'
	fi
}

pg_setup_hba_conf() {
	if [ "${1:-}" = postgres ]; then
		shift
	fi
	auth=$(postgres -C password_encryption "$@")
	: "${POSTGRES_HOST_AUTH_METHOD:=$auth}"
	{
		printf '\n'
		if [ "$POSTGRES_HOST_AUTH_METHOD" = trust ]; then
			printf '# warning trust is enabled for all connections\n'
		fi
		printf 'host all all all %s\n' "$POSTGRES_HOST_AUTH_METHOD"
	} >>"$PGDATA/pg_hba.conf"
}

# quote ARG: ARG single-quoted for the shell pg_ctl hands its -o options to (the official script uses printf %q).
quote() {
	printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"
}

docker_temp_server_start() {
	if [ "${1:-}" = postgres ]; then
		shift
	fi
	opts=
	for a; do
		opts="$opts $(quote "$a")"
	done
	# socket only: no TCP until the init scripts are done
	opts="$opts -c listen_addresses='' -p ${PGPORT:-5432}"
	NOTIFY_SOCKET='' PGUSER="${PGUSER:-$POSTGRES_USER}" pg_ctl -D "$PGDATA" -o "$opts" -w start
}

docker_temp_server_stop() {
	PGUSER="${PGUSER:-postgres}" pg_ctl -D "$PGDATA" -m fast -w stop
}

# _pg_want_help ARGS: true when an argument makes postgres print something and exit.
_pg_want_help() {
	for arg; do
		case "$arg" in
		-'?' | --help | --describe-config | -V | --version) return 0 ;;
		esac
	done
	return 1
}

_main() {
	# a first argument that looks like a flag means: run postgres with it
	case "${1:-}" in
	-*) set -- postgres "$@" ;;
	esac

	if [ "${1:-}" = postgres ] && ! _pg_want_help "$@"; then
		docker_setup_env
		docker_create_db_directories
		if [ "$(id -u)" = 0 ]; then
			# restart this script as postgres, keeping the environment (gosu in the official image)
			exec su -p -s /bin/sh postgres -c 'exec "$0" "$@"' "$0" "$@"
		fi

		if [ -z "$DATABASE_ALREADY_EXISTS" ]; then
			docker_verify_minimum_env
			# check dir permissions to reduce the likelihood of a half-initialized database
			ls /docker-entrypoint-initdb.d/ >/dev/null
			docker_init_database_dir
			pg_setup_hba_conf "$@"
			# for psql when local connections need a password (e.g. --auth-local=md5 in POSTGRES_INITDB_ARGS)
			export PGPASSWORD="${PGPASSWORD:-$POSTGRES_PASSWORD}"
			docker_temp_server_start "$@"
			docker_setup_db
			docker_process_init_files /docker-entrypoint-initdb.d/*
			docker_temp_server_stop
			unset PGPASSWORD
			printf '\nPostgreSQL init process complete; ready for start up.\n\n'
		else
			printf '\nPostgreSQL Database directory appears to contain a database; Skipping initialization\n\n'
		fi
	fi

	exec "$@"
}

_main "$@"

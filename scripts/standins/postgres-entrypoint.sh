#!/usr/bin/env bash
# The stand-in postgres image's entrypoint, written to the official image's
# contract (the parts docker-compose.yml and testcontainers use):
#   - `postgres [ARGS]` (or ARGS starting with -) runs the server as the
#     postgres user; anything else is run as given;
#   - on an empty PGDATA: initdb with POSTGRES_USER (default postgres) and
#     POSTGRES_PASSWORD (required unless POSTGRES_HOST_AUTH_METHOD=trust),
#     trust inside the container and POSTGRES_HOST_AUTH_METHOD (default
#     scram-sha-256) from anywhere else; then a server listening on its Unix
#     socket only creates POSTGRES_DB (default: the user's name) and runs
#     /docker-entrypoint-initdb.d/*.sh, *.sql and *.sql.gz in name order, and
#     stops. Nothing outside the container can connect before that is done;
#   - the server then starts with the given arguments, so "database system is
#     ready to accept connections" is logged twice on a first start, once after.
set -Eeuo pipefail

if [ "${1:0:1}" = '-' ]; then
	set -- postgres "$@"
fi

if [ "$1" != postgres ]; then
	exec "$@"
fi

if [ "$(id -u)" = 0 ]; then
	mkdir -p "$PGDATA" /var/run/postgresql
	chown postgres:postgres "$PGDATA" /var/run/postgresql
	chmod 700 "$PGDATA"
	exec setpriv --reuid=postgres --regid=postgres --init-groups "${BASH_SOURCE[0]}" "$@"
fi

user="${POSTGRES_USER:-postgres}"
db="${POSTGRES_DB:-$user}"

if [ ! -s "$PGDATA/PG_VERSION" ]; then
	if [ -z "${POSTGRES_PASSWORD:-}" ] && [ "${POSTGRES_HOST_AUTH_METHOD:-}" != trust ]; then
		echo 'Error: the database is uninitialized and POSTGRES_PASSWORD is not set.' >&2
		echo '       Set POSTGRES_PASSWORD, or POSTGRES_HOST_AUTH_METHOD=trust to allow every connection without one.' >&2
		exit 1
	fi
	# shellcheck disable=SC2086 # POSTGRES_INITDB_ARGS is a list of arguments
	initdb --username="$user" --pwfile=<(printf '%s\n' "${POSTGRES_PASSWORD:-}") ${POSTGRES_INITDB_ARGS:-}
	printf '\nhost all all all %s\n' "${POSTGRES_HOST_AUTH_METHOD:-scram-sha-256}" >>"$PGDATA/pg_hba.conf"

	pg_ctl -D "$PGDATA" -o "-c listen_addresses='' -p 5432" -w start
	run_sql() { psql -v ON_ERROR_STOP=1 --no-psqlrc --username "$user" --no-password "$@"; }
	if [ "$db" != postgres ]; then
		run_sql --dbname postgres --set db="$db" <<<'CREATE DATABASE :"db";'
	fi
	for f in /docker-entrypoint-initdb.d/*; do
		case "$f" in
		*.sh)
			echo "$0: running $f"
			# shellcheck disable=SC1090 # the scripts the image is given
			if [ -x "$f" ]; then "$f"; else . "$f"; fi
			;;
		*.sql)
			echo "$0: running $f"
			run_sql --dbname "$db" -f "$f"
			;;
		*.sql.gz)
			echo "$0: running $f"
			gunzip -c "$f" | run_sql --dbname "$db"
			;;
		*/\*) ;; # an empty directory
		*) echo "$0: ignoring $f" ;;
		esac
	done
	pg_ctl -D "$PGDATA" -m fast -w stop
	echo 'PostgreSQL init process complete; ready for start up.'
fi

exec "$@"

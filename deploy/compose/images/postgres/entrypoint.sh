#!/bin/sh
# Starts PostgreSQL in the foreground. The first start (an empty $PGDATA)
# runs initdb with POSTGRES_USER as the superuser and the password from
# POSTGRES_PASSWORD_FILE, creates POSTGRES_DB, and allows password
# (scram-sha-256) connections from the container network; the Unix socket
# inside the container trusts local users (pg_isready, psql by hand).
set -eu
: "${POSTGRES_USER:=postgres}"
: "${POSTGRES_DB:=$POSTGRES_USER}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
	if [ -z "${POSTGRES_PASSWORD_FILE:-}" ] || [ ! -s "$POSTGRES_PASSWORD_FILE" ]; then
		echo "lcm-postgres: POSTGRES_PASSWORD_FILE must name a file holding the password" >&2
		exit 1
	fi
	initdb -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$POSTGRES_PASSWORD_FILE" -E UTF8 --locale=C.UTF-8 \
		--auth-local=trust --auth-host=scram-sha-256 >/dev/null
	echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
	if [ "$POSTGRES_DB" != "postgres" ]; then
		echo "CREATE DATABASE \"$POSTGRES_DB\" OWNER \"$POSTGRES_USER\";" |
			postgres --single -D "$PGDATA" -j postgres >/dev/null
	fi
	echo "lcm-postgres: initialised $PGDATA (user $POSTGRES_USER, database $POSTGRES_DB)" >&2
fi
exec postgres -D "$PGDATA" -c listen_addresses='*' -c unix_socket_directories=/run/postgresql "$@"

#!/bin/sh
# Runs nginx in the foreground as an unprivileged user. nginx resolves the
# upstream names (LCM_PROXY_UPSTREAMS, default "api-1 api-2") when it
# loads its configuration, and a container that restarts comes back with
# another address: every 5 s this loop looks the names up and reloads
# nginx when an address changed. Until then nginx passes requests the old
# address refuses on to the other replica (proxy_next_upstream).
set -eu
conf=${LCM_PROXY_CONF:-/etc/lcm-proxy/nginx.conf}
upstreams=${LCM_PROXY_UPSTREAMS:-api-1 api-2}
addresses() {
	for h in $upstreams; do
		getent hosts "$h" | awk '{print $1; exit}'
	done | tr '\n' ' '
}
nginx -e stderr -c "$conf" -g 'daemon off;' &
pid=$!
trap 'kill -TERM "$pid" 2>/dev/null; wait "$pid"; exit 0' TERM INT
last=$(addresses)
while kill -0 "$pid" 2>/dev/null; do
	sleep 5 &
	wait $! || true
	now=$(addresses)
	if [ "$now" != "$last" ]; then
		echo "lcm-proxy: upstream addresses changed ($last-> $now), reloading nginx" >&2
		nginx -e stderr -c "$conf" -s reload || true
		last=$now
	fi
done
wait "$pid"

#!/usr/bin/env bash
# Creates the secrets of the compose stack in deploy/compose/secrets/ (or
# LCM_COMPOSE_SECRETS): random passwords (PostgreSQL, one NATS account per
# process, the NATS route account), the JWT secret, the master key lcm.key
# both lcm-api replicas share, the backup passphrase, a CA and the TLS
# certificates of the replicas, the proxy and the agent gateway, and the
# NATS server's account file (`lcm-api nats-auth`: bcrypt hashes and each
# process's least-privilege permissions).
#
# Safe to run again: an existing secret is never replaced (lcm.key above
# all: the database is encrypted with it); the NATS files are rewritten from
# the password files. To rotate a password, delete its file and run again.
#
# Needs openssl, podman and the image localhost/lcm/lcm-api (make images).
# Run it as root: the files are handed to uid 65532, the user of every
# image, with mode 0400. (Rootless podman: `podman unshare ./setup.sh`.)
#
# Environment:
#   LCM_PUBLIC_HOST      the name browsers and agents use for this machine
#                        (default localhost; it goes into the proxy's and the
#                        gateway's certificates)
#   LCM_COMPOSE_WORKERS  the worker accounts, "USER:SEGMENT[,SEGMENT] ..."
#                        (default "worker-dc1:dc1,default worker-dc2:dc2");
#                        kept in secrets/workers, so a later run without it
#                        keeps the list. USER's password is secrets/nats_USER
#                        with "-" as "_" (worker-dc3: nats_worker_dc3).
#   LCM_IMAGE_TAG        default latest
set -euo pipefail
cd "$(dirname "$0")"
secrets=${LCM_COMPOSE_SECRETS:-$PWD/secrets}
public=${LCM_PUBLIC_HOST:-localhost}
image=localhost/lcm/lcm-api:${LCM_IMAGE_TAG:-latest}
owner=65532:65532
# The machine's podman quirks (scripts/podman-env.sh), when run from the
# repository.
if [[ -f ../../scripts/podman-env.sh ]]; then
	# shellcheck source=../../scripts/podman-env.sh
	source ../../scripts/podman-env.sh
fi

die() { printf 'setup.sh: %s\n' "$*" >&2; exit 1; }
command -v openssl >/dev/null || die "openssl is not installed"
command -v podman >/dev/null || die "podman is not installed"
podman image exists "$image" || die "$image is missing: run 'make images' first"
[[ $(id -u) -eq 0 ]] || die "run as root (the secrets are handed to uid 65532), or under 'podman unshare'"

umask 077
mkdir -p "$secrets"
chmod 0700 "$secrets"
created=()

# put NAME COMMAND...: the command's output becomes secrets/NAME, unless
# that file exists.
put() {
	local f=$secrets/$1
	shift
	[[ -s $f ]] && return
	"$@" >"$f.tmp" || die "generating $(basename "$f") failed"
	[[ -s $f.tmp ]] || die "generating $(basename "$f") gave nothing"
	mv "$f.tmp" "$f"
	created+=("$(basename "$f")")
}
password() { openssl rand -hex 24; }
jwt() { openssl rand -base64 48 | tr -d '\n'; }
# lcm.key in lcm-api's master-key file format: 32 random bytes.
masterkey() { printf 'lcm-master-key-v1:%s\n' "$(openssl rand -base64 32)"; }
passphrase() { openssl rand -base64 30 | tr -d '\n'; }

put pg_password password
put jwt_secret jwt
put lcm.key masterkey
put backup_passphrase passphrase
workers=${LCM_COMPOSE_WORKERS:-}
if [[ -z $workers && -s $secrets/workers ]]; then
	workers=$(cat "$secrets/workers")
fi
workers=${workers:-worker-dc1:dc1,default worker-dc2:dc2}
for w in $workers; do
	[[ $w =~ ^[a-z0-9][a-z0-9-]*:[A-Za-z0-9_,-]+$ ]] || die "LCM_COMPOSE_WORKERS: \"$w\" is not USER:SEGMENT[,SEGMENT]"
done
printf '%s\n' "$workers" >"$secrets/workers"
secretname() { echo "nats_${1//-/_}"; }
for account in api scanner agentgw route; do
	put "nats_$account" password
done
for w in $workers; do
	put "$(secretname "${w%%:*}")" password
done

# A CA for the stack; the replicas, the proxy and the gateway get
# certificates from it (EC P-256, 825 days; the CA 10 years).
if [[ ! -s $secrets/ca.key ]]; then
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 \
		-subj "/O=LCM/CN=LCM compose CA" -keyout "$secrets/ca.key" -out "$secrets/ca.crt" 2>/dev/null
	rm -f "$secrets"/{api,proxy,agentgw}.{crt,key}
	created+=(ca.crt)
fi
cert() { # name, subjectAltName
	[[ -s $secrets/$1.crt && -s $secrets/$1.key ]] && return
	local csr ext
	csr=$(mktemp) ext=$(mktemp)
	printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\nkeyUsage=digitalSignature\nbasicConstraints=CA:FALSE\n' "$2" >"$ext"
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/O=LCM/CN=$1" \
		-keyout "$secrets/$1.key" -out "$csr" 2>/dev/null
	openssl x509 -req -in "$csr" -CA "$secrets/ca.crt" -CAkey "$secrets/ca.key" -CAcreateserial \
		-days 825 -extfile "$ext" -out "$secrets/$1.crt" 2>/dev/null
	rm -f "$csr" "$ext"
	created+=("$1.crt")
}
san() { # host names..., as a subjectAltName value
	local out=() h
	for h in "$@"; do
		if [[ $h =~ ^[0-9.]+$ ]]; then out+=("IP:$h"); else out+=("DNS:$h"); fi
	done
	local IFS=,
	echo "${out[*]}"
}
cert api "$(san api-1 api-2 localhost 127.0.0.1)"
cert proxy "$(san "$public" localhost 127.0.0.1)"
cert agentgw "$(san "$public" agentgw localhost 127.0.0.1)"

# Everything belongs to the containers' user, readable by it only; the
# CA key stays root's and is mounted nowhere.
for f in "$secrets"/*; do
	[[ $f == "$secrets/ca.key" || $f == "$secrets/ca.srl" ]] && continue
	chown "$owner" "$f"
	chmod 0400 "$f"
done
chmod 0400 "$secrets/ca.key"

# The NATS servers' accounts: lcm-api writes them with the permissions
# its processes need (the same a listening embedded NATS gives them).
mounts=() workerflags=()
for f in nats_api nats_scanner nats_agentgw; do
	mounts+=(-v "$secrets/$f:/s/$f:ro")
done
for w in $workers; do
	f=$(secretname "${w%%:*}")
	mounts+=(-v "$secrets/$f:/s/$f:ro")
	workerflags+=(-worker "$w=/s/$f")
done
podman run --rm --network none --entrypoint /usr/local/bin/lcm-api "${mounts[@]}" "$image" nats-auth \
	-api api=/s/nats_api "${workerflags[@]}" \
	-scanner scanner=/s/nats_scanner \
	-agentgw agentgw=/s/nats_agentgw >"$secrets/nats-auth.conf.tmp" || die "lcm-api nats-auth failed"
route=$(cat "$secrets/nats_route")
{
	echo "# The route account of the NATS cluster and its three routes (setup.sh)."
	printf 'authorization { user: "route", password: "%s" }\n' "$route"
	printf 'routes: ["nats://route:%s@nats-1:6222", "nats://route:%s@nats-2:6222", "nats://route:%s@nats-3:6222"]\n' "$route" "$route" "$route"
} >"$secrets/nats-routes.conf.tmp"
# Rewritten in place, not renamed: a running NATS container has the file
# bind-mounted (by inode) and reads the new accounts on SIGHUP.
for f in nats-auth.conf nats-routes.conf; do
	if [[ -e $secrets/$f ]]; then
		cat "$secrets/$f.tmp" >"$secrets/$f"
		rm -f "$secrets/$f.tmp"
	else
		mv "$secrets/$f.tmp" "$secrets/$f"
	fi
done
chown "$owner" "$secrets/nats-auth.conf" "$secrets/nats-routes.conf"
chmod 0400 "$secrets/nats-auth.conf" "$secrets/nats-routes.conf"

if ((${#created[@]})); then
	echo "created in $secrets: ${created[*]}"
else
	echo "secrets in $secrets are complete (nothing replaced; NATS account files rewritten)"
fi
echo "next: cd $(pwd) && podman-compose -p lcm up -d"

#!/bin/sh
# Installs LCM's control plane on this host as a systemd service and, unless
# opted out, prepares the self-management of this host (spec part 1, the
# self-registration table):
#
#   install.sh [--bin DIR] [--no-self-manage] [--no-start]
#
#   --bin DIR          where lcm-api (and lcm-worker) were built (default: ./bin)
#   --no-self-manage   installation-time opt-out (also LCM_NO_SELF_MANAGE=1):
#                      no management account, no sudoers rule, no handover
#                      file; an opt-out marker makes lcm-api skip the entry
#   --no-start         install only; do not enable or start the service
#
# Self-management creates the management account `lcm` (the same account
# LCM creates on every server it joins: key login only, sudo through
# /etc/sudoers.d/lcm validated with visudo), generates its ed25519 key and
# hands the private key to lcm-api in /var/lib/lcm/selfmanage.key (0600,
# owned by the service account). On its next start lcm-api encrypts the key
# into the database, pins the host key of 127.0.0.1:22 and deletes the
# file, whether it registers the host or not. The service itself runs as
# the unprivileged `lcm-api` account, never as `lcm`.
#
# Idempotent: a second run keeps existing accounts and keys and never
# writes a new handover file over one lcm-api has not consumed yet.
set -eu

BIN=./bin
SELF=1
START=1
[ "${LCM_NO_SELF_MANAGE:-}" = 1 ] && SELF=0
while [ $# -gt 0 ]; do
	case "$1" in
	--bin) BIN=$2; shift 2 ;;
	--no-self-manage) SELF=0; shift ;;
	--no-start) START=0; shift ;;
	-h | --help) sed -n '2,/^$/s/^# \{0,1\}//p' "$0"; exit 0 ;;
	*) echo "install.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
	esac
done

say() { printf 'lcm-install: %s\n' "$*"; }
die() { printf 'lcm-install: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "run as root"
[ -x "$BIN/lcm-api" ] || die "$BIN/lcm-api not found (build with: make build)"
HERE=$(cd "$(dirname "$0")" && pwd)
UNITS=$HERE/../systemd

SVC=lcm-api        # the service account
MGMT=lcm           # the management account (domain.ManagementUser)
STATE=/var/lib/lcm # the data directory (-data-dir in the unit)
CONF=/etc/lcm
SUDOERS=/etc/sudoers.d/lcm
HANDOVER=$STATE/selfmanage.key
OPTOUT=$STATE/selfmanage.disabled

# The service account and its directories.
if ! id "$SVC" >/dev/null 2>&1; then
	useradd --system --home-dir "$STATE" --no-create-home --shell /usr/sbin/nologin "$SVC"
	say "created service account $SVC"
fi
install -d -m 0700 -o "$SVC" -g "$SVC" "$STATE" "$CONF"
install -d -m 0755 /usr/lib/lcm
for b in lcm-api lcm-worker lcm-scanner lcm-helper lcm-helper-linux-amd64 lcm-helper-linux-arm64; do
	[ -x "$BIN/$b" ] && install -m 0755 "$BIN/$b" "/usr/lib/lcm/$b"
done
say "installed $(ls /usr/lib/lcm | tr '\n' ' ')into /usr/lib/lcm"
if [ -d /etc/systemd/system ] && [ -f "$UNITS/lcm-api.service" ]; then
	install -m 0644 "$UNITS/lcm-api.service" /etc/systemd/system/lcm-api.service
fi

if [ "$SELF" = 0 ]; then
	# Opted out: nothing of the self entry exists, and lcm-api is told so.
	rm -f "$HANDOVER"
	: >"$OPTOUT"
	chown "$SVC:$SVC" "$OPTOUT"
	say "self-management opted out: no account, no sudoers rule, no handover file"
else
	rm -f "$OPTOUT"
	if ! id "$MGMT" >/dev/null 2>&1; then
		useradd --create-home --shell /bin/sh "$MGMT"
		# useradd locks the password ("!"); sshd without PAM refuses locked
		# accounts even for keys. "*": no password login, keys work.
		usermod -p '*' "$MGMT"
		say "created management account $MGMT"
	fi
	H=$(getent passwd "$MGMT" | cut -d: -f6)
	G=$(id -gn "$MGMT")
	install -d -m 0700 -o "$MGMT" -g "$G" "$H/.ssh"
	AK=$H/.ssh/authorized_keys
	touch "$AK"
	chown "$MGMT:$G" "$AK"
	chmod 0600 "$AK"
	if [ -e "$HANDOVER" ]; then
		say "$HANDOVER is still waiting for lcm-api; key left as it is"
	elif grep -q ' lcm-management$' "$AK"; then
		say "$MGMT already has a management key; no new handover (re-run or upgrade)"
	else
		T=$(mktemp -d)
		trap 'rm -rf "$T"' EXIT
		ssh-keygen -q -t ed25519 -N '' -C lcm-management -f "$T/key"
		cat "$T/key.pub" >>"$AK"
		install -m 0600 -o "$SVC" -g "$SVC" "$T/key" "$HANDOVER"
		rm -rf "$T"
		say "management key generated; handed over in $HANDOVER (0600)"
	fi
	T=$(mktemp /etc/sudoers.d/.lcm.XXXXXX)
	printf '%s ALL=(ALL:ALL) NOPASSWD: ALL\n' "$MGMT" >"$T"
	chmod 0440 "$T"
	if ! visudo -cf "$T" >/dev/null; then
		rm -f "$T"
		die "the sudo rule failed visudo validation; nothing installed"
	fi
	mv -f "$T" "$SUDOERS"
	if ! visudo -c >/dev/null; then
		rm -f "$SUDOERS"
		die "sudoers invalid with the new rule; rule removed"
	fi
	say "sudo rule $SUDOERS validated"
fi

if [ "$START" = 1 ] && [ -d /run/systemd/system ]; then
	systemctl daemon-reload
	systemctl enable --now lcm-api
	say "lcm-api started; the admin password: journalctl -u lcm-api | grep password:"
else
	say "not started (--no-start or no systemd); start: /usr/lib/lcm/lcm-api -config $CONF/config.json -data-dir $STATE"
fi

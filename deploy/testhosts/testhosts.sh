#!/usr/bin/env bash
# testhosts.sh — real Debian bookworm test hosts on 127.0.0.2:22, 127.0.0.3:22, …
#
# Each host is a debootstrap'ed rootfs (built once, cached outside the repo)
# seen through its own overlayfs, running its own sshd in its own mount, UTS
# and PID namespace. It shares the machine's network namespace: 127.0.0.0/8 is
# all loopback on Linux, so every host gets its own address without any
# network setup. See docs/testing.md, section "Debian test hosts".
#
# Usage: testhosts.sh up [N] | up-netns I | down | status | env | reset I
#
# Host I (1-based) has hostname lcm-test-I and address 127.0.0.(I+1):22.
#
# up-netns I starts host I in its OWN network namespace (lcm-test-I) instead:
# a veth pair lcmvI (machine side, 198.18.I.1/24) <-> eth0 (host side,
# 198.18.I.2/24), sshd on 198.18.I.2:22, ufw, nftables and iptables
# installed. Firewall tests run there: what they change never reaches the
# machine's own firewall. The choice is kept (hosts/I/netns) across reset.
#
# Environment:
#   LCM_TESTHOSTS_CACHE  cache and state directory (default /var/cache/lcm-testhosts)
#   LCM_TESTHOSTS_MIRROR Debian mirror for debootstrap (default: the host's own,
#                        read from /etc/apt/sources.list.d/debian.sources)
#   LCM_TESTHOSTS_NO_OVERLAY=1  use a full copy of the base per host instead
#                        of overlayfs (automatic when the overlay mount fails)

set -euo pipefail

readonly SUITE=bookworm
readonly INCLUDE=openssh-server,sudo,ca-certificates
readonly CACHE=${LCM_TESTHOSTS_CACHE:-/var/cache/lcm-testhosts}
readonly BASE=$CACHE/base-$SUITE
readonly HOSTS_DIR=$CACHE/hosts
readonly KEY=$CACHE/bootstrap_ed25519
readonly PASSWORD_FILE=$CACHE/bootstrap_password
readonly KNOWN_HOSTS=$CACHE/known_hosts
readonly COUNT_FILE=$CACHE/count
readonly ENV_FILE=$CACHE/env
readonly BOOTSTRAP_USER=bootstrap
# Absolute path of this script: the namespaced helper re-executes it.
SELF=$(readlink -f "${BASH_SOURCE[0]}")
readonly SELF

log() { printf 'testhosts: %s\n' "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}

hostdir_of() { printf '%s/%d' "$HOSTS_DIR" "$1"; }
# is_netns I: host I runs in its own network namespace (up-netns).
is_netns() { [[ -f $(hostdir_of "$1")/netns ]]; }
addr_of() {
	if is_netns "$1"; then
		printf '198.18.%d.2' "$1"
	else
		printf '127.0.0.%d' "$(($1 + 1))"
	fi
}
netns_of() { printf 'lcm-test-%d' "$1"; }
# Packages a netns host gets on top of the base: the firewall tools.
readonly NETNS_PACKAGES="ufw nftables iptables iproute2"

# ensure_netns I creates host I's network namespace and veth pair (idempotent).
ensure_netns() {
	local i=$1 ns veth
	ns=$(netns_of "$i")
	veth=lcmv$i
	command -v ip >/dev/null 2>&1 || die "up-netns needs ip (iproute2)"
	((i >= 1 && i <= 254)) || die "up-netns: I must be 1..254"
	if [[ ! -e /run/netns/$ns ]]; then
		ip netns add "$ns"
	fi
	if ! ip link show "$veth" >/dev/null 2>&1; then
		ip link add "$veth" type veth peer name eth0 netns "$ns"
	fi
	ip addr replace "198.18.$i.1/24" dev "$veth"
	ip link set "$veth" up
	ip -n "$ns" addr replace "198.18.$i.2/24" dev eth0
	ip -n "$ns" link set eth0 up
	ip -n "$ns" link set lo up
}

# drop_netns I removes host I's namespace and veth pair.
drop_netns() {
	local i=$1
	ip link del "lcmv$i" 2>/dev/null || true
	ip netns del "$(netns_of "$i")" 2>/dev/null || true
}

require_root() {
	[[ $(id -u) -eq 0 ]] || die "must run as root (mounts, namespaces, chroot)"
}

require_tools() {
	local t missing=()
	for t in debootstrap unshare chroot mount umount flock ssh ssh-keygen ss setsid pgrep timeout; do
		command -v "$t" >/dev/null 2>&1 || missing+=("$t")
	done
	((${#missing[@]} == 0)) || die "missing tools: ${missing[*]} (see .ci/testhosts-packages.txt)"
}

# Serialise every state-changing command (up, down, reset) with one lock, so
# parallel CI jobs or test packages cannot build the base twice or start the
# same host twice. fd 9 must not leak into the long-lived host processes
# (they would hold the lock forever), hence the 9>&- where they start.
take_lock() {
	mkdir -p "$CACHE"
	chmod 700 "$CACHE"
	exec 9>"$CACHE/.lock"
	if ! flock -w 900 9; then
		die "could not get $CACHE/.lock within 15 minutes"
	fi
}

# The mirror the machine itself uses, so the build works wherever the
# machine's apt works (CI has no general internet access).
host_mirror() {
	if [[ -n ${LCM_TESTHOSTS_MIRROR:-} ]]; then
		printf '%s\n' "$LCM_TESTHOSTS_MIRROR"
		return
	fi
	local uri=""
	if [[ -r /etc/apt/sources.list.d/debian.sources ]]; then
		# First URI of a stanza that is not the security archive.
		uri=$(awk 'tolower($1) == "uris:" { for (i = 2; i <= NF; i++) if ($i !~ /security/) { print $i; exit } }' \
			/etc/apt/sources.list.d/debian.sources)
	fi
	if [[ -z $uri && -r /etc/apt/sources.list ]]; then
		uri=$(awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^(https?|file):/ && $i !~ /security/) { print $i; exit } }' \
			/etc/apt/sources.list)
	fi
	printf '%s\n' "${uri:-http://deb.debian.org/debian}"
}

# build_base creates the cached rootfs once. It builds into a temporary
# directory next to the final one and renames it at the end, so an
# interrupted build never leaves a half-built base that later runs would use.
build_base() {
	[[ -f $BASE/.lcm-testhosts-base ]] && return 0
	local mirror tmp start
	mirror=$(host_mirror)
	tmp=$(mktemp -d "$CACHE/base-$SUITE.tmp.XXXXXX")
	start=$(date +%s)
	log "building base rootfs ($SUITE, minbase + $INCLUDE) from $mirror into $tmp; takes about a minute"
	if ! debootstrap --variant=minbase --include="$INCLUDE" "$SUITE" "$tmp" "$mirror" >"$CACHE/debootstrap.log" 2>&1; then
		rm -rf --one-file-system "$tmp"
		die "debootstrap failed, see $CACHE/debootstrap.log"
	fi
	# mktemp made it 0700; as "/" of the chroot that locks out apt's _apt
	# user (and sshd's privilege-separated child).
	chmod 755 "$tmp"

	# Same apt sources as the machine: the security suite is reachable, so
	# the fresh rootfs shows pending security upgrades. That is deliberate:
	# LCM's patch tests need something to patch. Do NOT upgrade the base.
	rm -f "$tmp/etc/apt/sources.list"
	if [[ -f /etc/apt/sources.list.d/debian.sources ]]; then
		cp /etc/apt/sources.list.d/debian.sources "$tmp/etc/apt/sources.list.d/debian.sources"
	fi
	if [[ -f /etc/apt/sources.list ]]; then
		cp /etc/apt/sources.list "$tmp/etc/apt/sources.list"
	fi
	if [[ ! -f $tmp/etc/apt/sources.list.d/debian.sources && ! -f $tmp/etc/apt/sources.list ]]; then
		printf 'deb %s %s main\n' "$mirror" "$SUITE" >"$tmp/etc/apt/sources.list"
	fi
	cp /etc/resolv.conf "$tmp/etc/resolv.conf"

	# Package scripts must not start daemons: the hosts share the machine's
	# network namespace, and an upgrade of openssh-server would otherwise try
	# to restart "ssh" on 0.0.0.0:22. 101 = "action forbidden by policy".
	printf '#!/bin/sh\n# testhosts.sh: no service starts inside test hosts\nexit 101\n' >"$tmp/usr/sbin/policy-rc.d"
	chmod 755 "$tmp/usr/sbin/policy-rc.d"

	# Host keys and machine-id are per host; the ones the openssh-server
	# postinst generated would be shared by every host.
	rm -f "$tmp"/etc/ssh/ssh_host_*
	: >"$tmp/etc/machine-id"

	# Package lists, so "apt-get -s upgrade" works without a first update.
	if ! chroot "$tmp" apt-get -q update >>"$CACHE/debootstrap.log" 2>&1; then
		rm -rf --one-file-system "$tmp"
		die "apt-get update in the base failed, see $CACHE/debootstrap.log"
	fi
	chroot "$tmp" apt-get clean
	printf 'suite=%s\nmirror=%s\ninclude=%s\nbuilt=%s\nseconds=%d\n' \
		"$SUITE" "$mirror" "$INCLUDE" "$(date -u +%FT%TZ)" "$(($(date +%s) - start))" >"$tmp/.lcm-testhosts-base"
	mv -T "$tmp" "$BASE"
	log "base rootfs ready in $(($(date +%s) - start)) s: $BASE"
}

# Credentials shared by all hosts, generated once so that CI caches and
# developers' shells keep working across "down"/"up".
ensure_credentials() {
	if [[ ! -f $KEY ]]; then
		ssh-keygen -q -t ed25519 -N '' -C lcm-testhosts-bootstrap -f "$KEY"
	fi
	chmod 600 "$KEY"
	if [[ ! -s $PASSWORD_FILE ]]; then
		(
			umask 077
			# 18 random bytes = 24 base64 characters; + and / replaced so the
			# password is plain alphanumeric (no shell or chpasswd surprises).
			head -c 18 /dev/urandom | base64 | tr '+/' 'xy' >"$PASSWORD_FILE"
		)
	fi
	chmod 600 "$PASSWORD_FILE"
}

# Host keys live outside the overlay so a host keeps its identity across
# restarts and "reset": known_hosts files held by tests stay valid.
ensure_host_keys() {
	local i=$1 dir
	dir=$(hostdir_of "$i")/hostkeys
	mkdir -p "$dir/etc/ssh"
	# ssh-keygen -A -f PREFIX writes PREFIX/etc/ssh/ssh_host_*_key.
	ssh-keygen -q -A -f "$dir" >/dev/null
}

# alive PID: the process exists and is not a zombie. Our unshare processes
# are reparented to the machine's PID 1, which may reap them late; a zombie
# must count as stopped.
alive() {
	local state
	state=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) || return 1
	[[ -n $state && $state != Z && $state != X ]]
}

host_pid() {
	local pidfile pid
	pidfile=$(hostdir_of "$1")/pid
	[[ -f $pidfile ]] || return 1
	pid=$(<"$pidfile")
	# Guard against a recycled pid: it must still be our unshare.
	[[ -r /proc/$pid/cmdline ]] || return 1
	tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF "testhosts.sh _inner $1 " || return 1
	printf '%s\n' "$pid"
}

# ssh_banner succeeds when something on ADDR:22 speaks SSH.
ssh_banner() {
	local line
	# shellcheck disable=SC2016 # $1 is expanded by the inner bash, on purpose.
	line=$(timeout 2 bash -c 'exec 3<>"/dev/tcp/$1/22" && head -c 4 <&3' _ "$1" 2>/dev/null) || return 1
	[[ $line == SSH- ]]
}

host_up() {
	host_pid "$1" >/dev/null && ssh_banner "$(addr_of "$1")"
}

# Refuse to start when something else owns the port: a machine-wide sshd on
# 0.0.0.0:22 would receive every connection meant for the test hosts.
check_port_free() {
	local i=$1 addr listeners
	# A netns host has its own port 22: nothing of the machine's can take it.
	is_netns "$i" && return 0
	addr=$(addr_of "$i")
	listeners=$(ss -Hltnp 'sport = :22' 2>/dev/null || true)
	if grep -Eq '(^|[[:space:]])(0\.0\.0\.0|\*):22[[:space:]]' <<<"$listeners"; then
		die "this machine has a service listening on 0.0.0.0:22 (probably its own sshd), which takes" \
			"127.0.0.x:22 for every x. Make it listen on specific addresses only (e.g. 'ListenAddress 127.0.0.1'" \
			"in /etc/ssh/sshd_config.d/) or stop it, then rerun. Listener: $(grep -E '(0\.0\.0\.0|\*):22' <<<"$listeners" | head -n1)"
	fi
	if grep -Fq " $addr:22 " <<<"$listeners"; then
		die "$addr:22 is already in use by something that is not test host $i: $(grep -F "$addr:22" <<<"$listeners")"
	fi
}

start_host() {
	local i=$1 dir addr
	dir=$(hostdir_of "$i")
	addr=$(addr_of "$i")
	mkdir -p "$dir/upper" "$dir/work" "$dir/root"
	ensure_host_keys "$i"
	check_port_free "$i"
	# A netns host gets a fresh namespace at every start: whatever firewall
	# a test left in the kernel is gone with the old one.
	if is_netns "$i"; then
		drop_netns "$i"
		ensure_netns "$i"
	fi
	# setsid: detach from the caller's session so a Ctrl-C or a finished
	# "go test" does not take the host down. --kill-child: if unshare is
	# killed, its child (PID 1 of the host) gets SIGTERM and cleans up.
	setsid unshare --mount --uts --pid --fork --kill-child=TERM --propagation private \
		bash "$SELF" _inner "$i" </dev/null >>"$dir/sshd.log" 2>&1 9>&- &
	echo "$!" >"$dir/pid"
	# A netns host installs its firewall tools on the first start after a
	# reset (from the mirror, before sshd moves into the namespace).
	local deadline=$((SECONDS + 30))
	is_netns "$i" && deadline=$((SECONDS + 300))
	local started=$!
	until ssh_banner "$addr"; do
		# kill -0, not host_pid: right after the fork the child may not have
		# exec'd unshare yet, so its cmdline does not name the host yet.
		if ! kill -0 "$started" 2>/dev/null; then
			tail -n 20 "$dir/sshd.log" >&2 || true
			die "host $i exited during start, see $dir/sshd.log"
		fi
		((SECONDS < deadline)) || die "host $i: no ssh on $addr:22 in time, see $dir/sshd.log"
		sleep 0.1
	done
}

stop_host() {
	local i=$1 pid child dir deadline
	dir=$(hostdir_of "$i")
	if pid=$(host_pid "$i"); then
		# TERM to the host's PID 1 (unshare's child): it stops sshd, kills the
		# host's remaining processes and unmounts; the mount namespace then
		# disappears, so nothing can stay mounted on the machine.
		child=$(pgrep -P "$pid" | head -n1 || true)
		kill -TERM "${child:-$pid}" 2>/dev/null || true
		deadline=$((SECONDS + 10))
		while alive "$pid" && ((SECONDS < deadline)); do sleep 0.05; done
		if alive "$pid"; then
			log "host $i did not stop within 10 s; killing it"
			# SIGKILL to PID 1 of a PID namespace kills the whole namespace.
			[[ -n ${child:-} ]] && kill -KILL "$child" 2>/dev/null
			kill -KILL "$pid" 2>/dev/null || true
			while alive "$pid"; do sleep 0.05; done
		fi
	fi
	rm -f "$dir/pid"
}

# write_env records the host list, known_hosts and shell exports, so tests
# can find the hosts without running this script (and without root).
write_env() {
	local count=$1 i addrs="" kh
	kh=$(mktemp "$CACHE/known_hosts.XXXXXX")
	for ((i = 1; i <= count; i++)); do
		addrs+="${addrs:+,}$(addr_of "$i"):22"
		local pub
		for pub in "$(hostdir_of "$i")"/hostkeys/etc/ssh/ssh_host_*_key.pub; do
			# Port 22 is written without brackets, as ssh and x/crypto's
			# knownhosts both expect.
			awk -v h="$(addr_of "$i")" '{ print h, $1, $2 }' "$pub" >>"$kh"
		done
	done
	chmod 644 "$kh"
	mv -f "$kh" "$KNOWN_HOSTS"
	printf '%d\n' "$count" >"$COUNT_FILE"
	{
		printf "export LCM_TESTHOSTS='%s'\n" "$addrs"
		printf "export LCM_TESTHOSTS_KEY='%s'\n" "$KEY"
		printf "export LCM_TESTHOSTS_PASSWORD_FILE='%s'\n" "$PASSWORD_FILE"
		printf "export LCM_TESTHOSTS_KNOWN_HOSTS='%s'\n" "$KNOWN_HOSTS"
		printf "export LCM_TESTHOSTS_CACHE='%s'\n" "$CACHE"
	} >"$ENV_FILE.tmp"
	mv -f "$ENV_FILE.tmp" "$ENV_FILE"
}

current_count() {
	if [[ -f $COUNT_FILE ]]; then cat "$COUNT_FILE"; else echo 0; fi
}

cmd_up() {
	local n=${1:-3} i count start t0
	if ! [[ $n =~ ^[0-9]+$ ]] || ((n < 1 || n > 250)); then
		die "up: N must be 1..250, got '$n'"
	fi
	require_root
	require_tools
	take_lock
	build_base
	ensure_credentials
	start=$(date +%s.%N)
	local todo=()
	for ((i = 1; i <= n; i++)); do
		if host_up "$i"; then
			log "host $i (lcm-test-$i, $(addr_of "$i"):22) already up"
			continue
		fi
		# A host whose sshd died leaves an exited namespace (or a stale
		# pid file): clean that up and start it again.
		stop_host "$i"
		todo+=("$i")
	done
	# Check every port before starting anything, so a conflict does not
	# leave a half-started set behind.
	for i in "${todo[@]}"; do check_port_free "$i"; done
	for i in "${todo[@]}"; do
		t0=$(date +%s.%N)
		start_host "$i"
		log "host $i (lcm-test-$i, $(addr_of "$i"):22) up in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }') s"
	done
	# Hosts beyond N that are still running stay listed (other users may rely on them).
	count=$(current_count)
	((count > n)) || count=$n
	write_env "$count"
	log "all $n hosts up in $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }') s; eval \"\$($SELF env)\" to use them"
}

# up-netns I: host I in its own network namespace (see the header).
cmd_up_netns() {
	local i=${1:-} count
	if ! [[ $i =~ ^[0-9]+$ ]] || ((i < 1 || i > 250)); then
		die "up-netns: I must be 1..250, got '$i'"
	fi
	require_root
	require_tools
	command -v nsenter >/dev/null 2>&1 || die "up-netns needs nsenter (util-linux)"
	take_lock
	build_base
	ensure_credentials
	mkdir -p "$(hostdir_of "$i")"
	if ! is_netns "$i"; then
		# A host that ran on the loopback before is restarted in its namespace.
		stop_host "$i"
		touch "$(hostdir_of "$i")/netns"
	fi
	if host_up "$i"; then
		log "host $i (lcm-test-$i, $(addr_of "$i"):22, netns $(netns_of "$i")) already up"
	else
		stop_host "$i"
		start_host "$i"
		log "host $i (lcm-test-$i, $(addr_of "$i"):22, netns $(netns_of "$i")) up"
	fi
	count=$(current_count)
	((count > i)) || count=$i
	write_env "$count"
}

cmd_down() {
	require_root
	take_lock
	local d i
	shopt -s nullglob
	for d in "$HOSTS_DIR"/*/; do
		i=$(basename "$d")
		[[ $i =~ ^[0-9]+$ ]] || continue
		stop_host "$i"
		is_netns "$i" && drop_netns "$i"
		log "host $i stopped"
	done
	rm -f "$COUNT_FILE" "$ENV_FILE"
}

# reset I: back to the pristine base (clears the overlay's upper dir) and
# start again if it was running. Host keys are kept, see ensure_host_keys.
cmd_reset() {
	local i=${1:-}
	if ! [[ $i =~ ^[0-9]+$ ]] || ((i < 1)); then
		die "usage: reset I (host number, 1 = 127.0.0.2)"
	fi
	require_root
	require_tools
	take_lock
	local dir was_up=0
	dir=$(hostdir_of "$i")
	host_pid "$i" >/dev/null && was_up=1
	stop_host "$i"
	rm -rf --one-file-system "$dir/upper" "$dir/work" "$dir/copy"
	if ((was_up)) || ((i <= $(current_count))); then
		build_base
		ensure_credentials
		start_host "$i"
		log "host $i reset and up"
	else
		log "host $i reset (not running)"
	fi
}

cmd_status() {
	local count i addr state rc=0
	count=$(current_count)
	if ((count == 0)); then
		echo "no test hosts (run: $SELF up)"
		return 1
	fi
	printf '%-3s %-12s %-15s %s\n' '#' HOSTNAME ADDRESS STATE
	for ((i = 1; i <= count; i++)); do
		addr=$(addr_of "$i")
		if ! host_pid "$i" >/dev/null; then
			state=down
			rc=1
		elif ssh -i "$KEY" -o BatchMode=yes -o ConnectTimeout=3 -o UserKnownHostsFile="$KNOWN_HOSTS" \
			-o StrictHostKeyChecking=yes -o LogLevel=ERROR "root@$addr" true </dev/null 2>/dev/null; then
			state="up, ssh answers"
		else
			state="running, ssh does NOT answer (see $(hostdir_of "$i")/sshd.log)"
			rc=1
		fi
		printf '%-3s %-12s %-15s %s\n' "$i" "lcm-test-$i" "$addr:22" "$state"
	done
	return "$rc"
}

cmd_env() {
	[[ -f $ENV_FILE ]] || die "no test hosts are up (run: $SELF up)"
	cat "$ENV_FILE"
}

# ---------------------------------------------------------------------------
# Everything below runs inside the host's namespaces, as its PID 1.

# mount_root makes ROOT the host's writable root: an overlay over the shared
# base, so dpkg database, users and sudoers are per host and the base stays
# untouched. Without overlayfs (old kernels, some container runtimes) a full
# copy is made once instead (~210 MB per host).
mount_root() {
	local dir=$1 root=$2
	# LCM_TESTHOSTS_NO_OVERLAY=1 forces the copy, to test that path.
	if [[ ${LCM_TESTHOSTS_NO_OVERLAY:-} != 1 ]] &&
		mount -t overlay overlay -o "lowerdir=$BASE,upperdir=$dir/upper,workdir=$dir/work" "$root" 2>/dev/null; then
		return
	fi
	log "no overlayfs; using a full copy of the base in $dir/copy"
	if [[ ! -f $dir/copy/.lcm-testhosts-base ]]; then
		rm -rf --one-file-system "$dir/copy" "$dir/copy.tmp"
		cp -a "$BASE" "$dir/copy.tmp"
		mv -T "$dir/copy.tmp" "$dir/copy"
	fi
	mount --bind "$dir/copy" "$root"
}

# provision re-asserts, at every start, what the tests rely on: identity,
# credentials and the sshd drop-in. Everything else a test changes persists
# until "reset".
provision() {
	local i=$1 root=$2 dir=$3 addr name
	addr=$(addr_of "$i")
	name=lcm-test-$i
	chmod 755 "$root"
	cp /etc/resolv.conf "$root/etc/resolv.conf"
	printf '%s\n' "$name" >"$root/etc/hostname"
	# sudo resolves the hostname; without this it warns on every call.
	printf '127.0.0.1\tlocalhost\n%s\t%s\n::1\tlocalhost ip6-localhost ip6-loopback\n' "$addr" "$name" >"$root/etc/hosts"
	if [[ ! -s $root/etc/machine-id ]]; then
		od -An -tx1 -N16 /dev/urandom | tr -d ' \n' >"$root/etc/machine-id"
		echo >>"$root/etc/machine-id"
	fi

	cp "$dir"/hostkeys/etc/ssh/ssh_host_* "$root/etc/ssh/"
	chmod 600 "$root"/etc/ssh/ssh_host_*_key
	chmod 644 "$root"/etc/ssh/ssh_host_*_key.pub

	# root: key login only. With UsePAM no, sshd refuses any account whose
	# password field starts with "!" ("account is locked"), even for keys.
	install -d -m 700 "$root/root/.ssh"
	local pub
	pub=$(cat "$KEY.pub")
	touch "$root/root/.ssh/authorized_keys"
	grep -qxF "$pub" "$root/root/.ssh/authorized_keys" || printf '%s\n' "$pub" >>"$root/root/.ssh/authorized_keys"
	chmod 600 "$root/root/.ssh/authorized_keys"
	case $(chroot "$root" getent shadow root | cut -d: -f2) in
	'' | '!'*) chroot "$root" usermod -p '*' root ;;
	esac

	# bootstrap: password login and password sudo (the password-bootstrap
	# join path). Debian's sudoers already grants %sudo ALL with a password.
	if ! chroot "$root" getent passwd "$BOOTSTRAP_USER" >/dev/null; then
		chroot "$root" useradd -m -s /bin/bash -G sudo "$BOOTSTRAP_USER"
	fi
	printf '%s:%s\n' "$BOOTSTRAP_USER" "$(cat "$PASSWORD_FILE")" | chroot "$root" chpasswd

	# "zz-" sorts last: sshd keeps the first value it reads, so drop-ins LCM
	# writes (hardening) win over these defaults, as on a real server.
	# ListenAddress accumulates, so ours always applies. UsePAM no: nothing
	# here is booted (no logind, no PAM session services), so sshd's own
	# account checks are the whole story; hence root's "*" above.
	cat >"$root/etc/ssh/sshd_config.d/zz-lcm-testhost.conf" <<-EOF
		# Written by deploy/testhosts/testhosts.sh at every start of $name.
		ListenAddress $addr:22
		UsePAM no
		PermitRootLogin prohibit-password
		PasswordAuthentication yes
	EOF
}

cmd_inner() {
	local i=$1 dir root sshd_pid
	dir=$(hostdir_of "$i")
	root=$dir/root
	hostname "lcm-test-$i"
	mount_root "$dir" "$root"
	# Fresh /proc: inside the host, ps shows only the host's processes.
	mount -t proc proc "$root/proc"
	# /dev recursively, for /dev/pts (sshd allocates PTYs there).
	mount --rbind /dev "$root/dev"
	mount --bind /sys "$root/sys"
	mount -o remount,bind,ro "$root/sys"
	# /run on tmpfs, as on a booted system: no stale pid files after restart.
	mount -t tmpfs -o mode=755,nosuid,nodev tmpfs "$root/run"
	mkdir -p "$root/run/sshd" "$root/run/lock"
	provision "$i" "$root" "$dir"
	local netns=()
	if is_netns "$i"; then
		# Installed while still in the machine's network namespace (the
		# mirror is reachable only there); policy-rc.d keeps every service
		# from starting and no firewall command runs here. sshd, and with
		# it every session and every ufw/nft a test runs, then lives in the
		# host's own namespace.
		local p missing=()
		for p in $NETNS_PACKAGES; do
			chroot "$root" dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
		done
		if ((${#missing[@]} > 0)); then
			log "installing ${missing[*]} into lcm-test-$i"
			DEBIAN_FRONTEND=noninteractive chroot "$root" apt-get install -y -q --no-install-recommends "${missing[@]}"
			chroot "$root" apt-get clean
		fi
		netns=(nsenter "--net=/run/netns/$(netns_of "$i")")
	fi
	chroot "$root" /usr/sbin/sshd -t

	log "$(date -u +%FT%TZ) starting sshd of lcm-test-$i on $(addr_of "$i"):22"
	"${netns[@]}" chroot "$root" /usr/sbin/sshd -D -e &
	sshd_pid=$!
	trap 'kill -TERM "$sshd_pid" 2>/dev/null || true' TERM INT HUP
	# wait returns early when a trapped signal arrives; loop until sshd is gone.
	while kill -0 "$sshd_pid" 2>/dev/null; do
		wait "$sshd_pid" || true
	done
	log "$(date -u +%FT%TZ) sshd of lcm-test-$i exited; stopping the host"
	trap - TERM INT HUP
	# As PID 1, kill -1 reaches every other process of the host (sessions,
	# daemons a test started), so the unmounts below are not busy.
	kill -KILL -1 2>/dev/null || true
	sleep 0.1
	umount "$root/run" "$root/sys" || true
	umount -R "$root/dev" || true
	umount "$root/proc" "$root" || true
}

main() {
	local cmd=${1:-}
	shift || true
	case $cmd in
	up) cmd_up "$@" ;;
	up-netns) cmd_up_netns "$@" ;;
	down) cmd_down ;;
	status) cmd_status ;;
	env) cmd_env ;;
	reset) cmd_reset "$@" ;;
	_inner) cmd_inner "$@" ;;
	*)
		sed -n '2,/^$/s/^# \{0,1\}//p' "$SELF" >&2
		exit 2
		;;
	esac
}

# One line, so bash has parsed the exit before main runs: the hosts' PID 1
# runs this file for hours, and an edited file must not be read on from the
# old offset when main returns.
main "$@"; exit

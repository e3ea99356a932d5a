# LCM facts collector. Runs in one SSH session as the management user.
# POSIX sh only: works under dash, bash, busybox ash; needs no root, no
# lsb_release, no lscpu. Every probe is optional: a missing tool or file
# leaves its section empty and the parser reports a warning, never a failure.
# Output: sections introduced by lines "==lcm:section NAME==".
LC_ALL=C
export LC_ALL
PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin:/usr/bin:/bin"
export PATH

sec() { printf '==lcm:section %s==\n' "$1"; }
have() { command -v "$1" >/dev/null 2>&1; }
# to: bound commands that can hang (df on a dead NFS server, needs-restarting).
to() { if have timeout; then timeout 15 "$@"; else "$@"; fi; }

sec meta
echo "format=1"

sec os-release
if [ -r /etc/os-release ]; then cat /etc/os-release
elif [ -r /usr/lib/os-release ]; then cat /usr/lib/os-release
fi

sec kernel
echo "release=$(uname -r 2>/dev/null)"
echo "machine=$(uname -m 2>/dev/null)"

sec hostname
if have hostname; then echo "name=$(hostname 2>/dev/null)"
else echo "name=$(cat /proc/sys/kernel/hostname 2>/dev/null)"
fi

sec uptime
cat /proc/uptime 2>/dev/null

sec virt
if have systemd-detect-virt; then
	echo "detect_virt=$(systemd-detect-virt 2>/dev/null)"
	echo "detect_container=$(systemd-detect-virt -c 2>/dev/null)"
fi
[ -e /.dockerenv ] && echo "dockerenv=1"
[ -e /run/.containerenv ] && echo "containerenv=1"
# /proc/1/environ is root-only on most hosts: errors are expected and muted.
(tr '\000' '\n' </proc/1/environ) 2>/dev/null | grep '^container=' | head -n 1
grep -q '^flags.* hypervisor' /proc/cpuinfo 2>/dev/null && echo "cpu_hypervisor=1"
[ -r /sys/class/dmi/id/product_name ] && echo "dmi_product=$(cat /sys/class/dmi/id/product_name 2>/dev/null)"
[ -r /sys/class/dmi/id/sys_vendor ] && echo "dmi_vendor=$(cat /sys/class/dmi/id/sys_vendor 2>/dev/null)"
c=$(grep -E 'docker|kubepods|lxc|containerd|libpod' /proc/1/cgroup 2>/dev/null | head -n 1)
[ -n "$c" ] && echo "cgroup=$c"
[ -d /proc/vz ] && [ ! -d /proc/bc ] && echo "openvz=1"

sec cpuinfo
grep -E '^(processor|model name|physical id|core id|cpu cores|vendor_id|Hardware|Model|cpu model|CPU part)[[:space:]]*:' /proc/cpuinfo 2>/dev/null

sec meminfo
grep -E '^(MemTotal|MemFree|MemAvailable|Buffers|Cached|SwapTotal|SwapFree):' /proc/meminfo 2>/dev/null

sec df
to df -P -k -T 2>/dev/null || to df -P -k 2>/dev/null

sec mounts
cat /proc/mounts 2>/dev/null

if have ip; then
	sec ip-addr
	ip -o addr show 2>/dev/null
else
	sec hostname-i
	hostname -I 2>/dev/null
	sec ipv4-local
	awk '/host LOCAL/ { print p } { p = $2 }' /proc/net/fib_trie 2>/dev/null | sort -u
	sec if-inet6
	cat /proc/net/if_inet6 2>/dev/null
fi

sec reboot
[ -e /var/run/reboot-required ] && echo "reboot_required_file=1"
if [ -r /var/run/reboot-required.pkgs ]; then
	while read -r p; do echo "reboot_pkg=$p"; done </var/run/reboot-required.pkgs
fi
if have needs-restarting; then
	to needs-restarting -r >/dev/null 2>&1
	echo "needs_restarting_rc=$?"
fi
echo "running=$(uname -r 2>/dev/null)"
for d in /lib/modules/* /usr/lib/modules/*; do
	[ -d "$d" ] && echo "modules=${d##*/}"
done
for f in /boot/vmlinuz-* /boot/vmlinux-*; do
	[ -e "$f" ] && echo "boot=${f##*/}"
done

sec pkgmgr
for pm in apt-get dnf yum zypper pacman apk dpkg rpm; do
	have "$pm" && echo "found=$pm"
done

sec end

#!/usr/bin/env bash
# bench-ansible.sh [N] — wall time of Ansible running `sleep 1` on N
# simulated hosts (cmd/fleetsim) with forks 50 and 200, for comparing with
# LCM's fan-out (go test -bench FanOut ./internal/sshexec/). Needs the
# Debian package `ansible`. Prints one line per run: forks, wall seconds,
# peak RSS of the ansible controller process tree's largest process.
set -euo pipefail
N=${1:-200}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TMP=$(mktemp -d)
SIM_PID=
cleanup() { [ -n "$SIM_PID" ] && kill "$SIM_PID" 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT

command -v ansible >/dev/null || { echo "ansible not installed (apt-get install ansible)" >&2; exit 1; }
(cd "$ROOT" && go build -o "$TMP/fleetsim" ./cmd/fleetsim)
ulimit -n "$(ulimit -Hn)"
"$TMP/fleetsim" -n "$N" -latency 0 -pristine=false >"$TMP/hosts.json" &
SIM_PID=$!
for _ in $(seq 100); do
  [ "$(wc -l <"$TMP/hosts.json")" -ge "$N" ] && break
  sleep 0.1
done

# {"index":0,"addr":"127.0.0.1:41235",…} → sim0 ansible_host=127.0.0.1 ansible_port=41235
sed -E 's/.*"index":([0-9]+),"addr":"([^:]+):([0-9]+)".*/sim\1 ansible_host=\2 ansible_port=\3/' \
  "$TMP/hosts.json" >"$TMP/inventory"

export ANSIBLE_HOST_KEY_CHECKING=False ANSIBLE_NOCOLOR=1 ANSIBLE_LOCALHOST_WARNING=False
# The simulator accepts the "none" auth method; no key or password needed.
export ANSIBLE_SSH_ARGS="-o ControlMaster=no -o UserKnownHostsFile=/dev/null -o StrictHostKeyChecking=no -o LogLevel=ERROR"
echo "hosts=$N command='sleep 1' (ansible -m raw)"
for forks in 50 200; do
  start=$(date +%s.%N)
  /usr/bin/time -o "$TMP/time" -f "%M" \
    ansible all -i "$TMP/inventory" -u lcm -m raw -a 'sleep 1' -f "$forks" >"$TMP/out.$forks" 2>&1 || true
  end=$(date +%s.%N)
  ok=$(grep -c '| CHANGED' "$TMP/out.$forks" || true)
  printf 'forks=%d wall=%.1fs ok=%d/%d peak_rss_main=%s KiB\n' "$forks" "$(echo "$end - $start" | bc)" "$ok" "$N" "$(tail -1 "$TMP/time")"
done

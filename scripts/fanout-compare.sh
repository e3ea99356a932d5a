#!/usr/bin/env bash
# fanout-compare.sh [HOSTS] [ROUNDS] [-- extra options] — LCM's bulk security
# upgrade ("update all", one API call) against Ansible's `-m raw` with the
# exact same script on the same cmd/fleetsim hosts, interleaved, ROUNDS
# rounds each; prints both walls, CPU, peak memory and the ratio.
#
#   bash scripts/fanout-compare.sh 200 2
#   bash scripts/fanout-compare.sh 200 2 -- --concurrency 256
#   createdb lcm_bench && bash scripts/fanout-compare.sh 200 2 -- --database-url 'postgres://postgres@127.0.0.1:5432/lcm_bench?sslmode=disable'
#
# Needs Go, python3 and Ansible (Debian: apt-get install -y ansible). The
# hosts are onboarded through the API first (probe, join) and keep their
# pending updates between rounds (fleetsim -keep-pending). Each host's
# upgrade takes --upgrade-time (default 1s); every other command answers at
# once. Measures on a quiet machine: the simulator runs on the same CPUs.
set -euo pipefail
HOSTS=${1:-200}
ROUNDS=${2:-2}
shift $(( $# > 2 ? 2 : $# ))
[ "${1:-}" = "--" ] && shift
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
command -v ansible >/dev/null || { echo "ansible not installed (apt-get install -y ansible)" >&2; exit 1; }
# $LCM_API_BIN: a prebuilt lcm-api (e.g. bin/lcm-api from make build).
if [ -z "${LCM_API_BIN:-}" ]; then (cd "$ROOT" && CGO_ENABLED=0 go build -trimpath -o "$TMP/lcm-api" ./cmd/api); fi
(cd "$ROOT" && go build -o "$TMP/fleetsim" ./cmd/fleetsim)
# One listener and up to a few connections per host on each side.
ulimit -n "$(ulimit -Hn)"
python3 "$ROOT/scripts/fanout_compare.py" --hosts "$HOSTS" --rounds "$ROUNDS" \
  --api-bin "${LCM_API_BIN:-$TMP/lcm-api}" --fleetsim-bin "$TMP/fleetsim" --repo "$ROOT" "$@"

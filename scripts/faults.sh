#!/usr/bin/env bash
# faults.sh — LCM's fault suite (internal/faults, build tag "faults"): the
# scaled deployment as plain processes (nginx TLS proxy, a 3-node NATS
# JetStream cluster, PostgreSQL, two lcm-api replicas, lcm-worker per
# segment, cmd/fleetsim hosts; internal/testutil/topology) broken on
# purpose, plus the reliability budgets. Figures: docs/benchmarks.md,
# "Reliability".
#
# Usage: scripts/faults.sh [short|full] [go test -run pattern]
#   short (default, CI): smaller fleets and runs, timing budgets reported
#         but not asserted (the CI machine is shared);
#   full  (make faults): the issue's sizes (2,000 servers, 100 kills, …)
#         with the budgets asserted.
# Needs root (a tmpfs for the disk-full test), nginx, PostgreSQL
# (LCM_TEST_POSTGRES_URL) and Debian test host 20 (the secret scan).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-short}
run=${2:-.}
case $mode in
short) timeout=40m ;;
full) timeout=180m ;;
*) echo "usage: $0 [short|full] [pattern]" >&2; exit 2 ;;
esac
export LCM_FAULTS=$mode CI=${CI:-true}
export LCM_API_BIN=${LCM_API_BIN:-$PWD/bin/lcm-api}
[[ -x $LCM_API_BIN ]] || make -s build
export LCM_TEST_POSTGRES_URL=${LCM_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}
eval "$(bash deploy/testhosts/testhosts.sh env)"
export LCM_FAULTS_FIGURES=${LCM_FAULTS_FIGURES:-/tmp/lcm-faults-figures.txt}
: >"$LCM_FAULTS_FIGURES"
go vet -tags faults ./internal/faults/
echo "fault suite ($mode), load: $(cut -d' ' -f1-3 /proc/loadavg)"
# -p 1: each test starts a whole topology; one at a time on 2 cores.
set +e
go test -tags faults -count=1 -p 1 -timeout "$timeout" -run "$run" -v ./internal/faults/ >/tmp/lcm-faults.log 2>&1
status=$?
set -e
grep -E '^(=== RUN|--- (PASS|FAIL|SKIP)|PASS|FAIL|ok )' /tmp/lcm-faults.log || true
if [[ $status -ne 0 ]]; then
	echo "fault suite FAILED (full log: /tmp/lcm-faults.log)" >&2
	grep -E -B2 -A20 -- '--- FAIL' /tmp/lcm-faults.log | head -200 >&2 || true
fi
echo "figures ($LCM_FAULTS_FIGURES):"
cat "$LCM_FAULTS_FIGURES"
exit "$status"

#!/usr/bin/env bash
# bench-agents.sh [N] — the agent gateway budgets (docs/benchmarks.md,
# "Agent gateway"): N (default 10,000) simulated agents connected to a real
# lcm-agentgw process — its resident memory and the command → result round
# trip through it — then upgrade-security on 1,000 simulated agents through
# the job system. Not part of `make test` (minutes of CPU, 20,000 sockets);
# the suite runs the 200-agent functional version (TestManyAgents).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-10000}
# One socket per agent in the simulator and one in the gateway.
ulimit -n "$(ulimit -Hn)"
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt $((N + 1000)) ]; then
  echo "bench-agents: open-file limit $(ulimit -n) is below $((N + 1000)); raise the hard limit (ulimit -Hn)" >&2
  exit 1
fi
mkdir -p bin
CGO_ENABLED=0 go build -trimpath -o bin/lcm-agentgw ./cmd/agentgw
go build -o bin/agentsim ./cmd/agentsim
# Connections come from 127.0.0.1 … 127.0.0.8 so no single source address
# runs out of ephemeral ports.
./bin/agentsim -gateway bin/lcm-agentgw -n "$N" -sources 8 -rtt 2000
go test ./internal/agentsim -run '^$' -bench AgentUpgradeSecurity1000 -benchtime 1x -timeout 20m 2>&1 | grep -E '^(Benchmark|ok|FAIL|---)'

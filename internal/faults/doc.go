// Package faults is LCM's fault suite: end-to-end tests that break the
// scaled deployment on purpose — kill -9 of workers, restarts of API
// replicas under load, NATS nodes and the whole NATS cluster stopped,
// PostgreSQL down or hung, rotate-db-key killed midway, the data disk full
// — and assert that nothing is lost, nothing is left half-written and
// everything recovers by itself; plus the reliability budgets (mixed load
// on two replicas, a fleet run with restarts). It runs on the plain-process
// topology (internal/testutil/topology).
//
// The tests carry the build tag "faults": `make faults` runs the full
// sizes (LCM_FAULTS=full), scripts/test.sh a short version in CI.
// Figures go to docs/benchmarks.md, "Reliability".
package faults

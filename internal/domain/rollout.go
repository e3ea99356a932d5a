package domain

import (
	"encoding/json"
	"time"
)

// Rollout statuses. A rollout is driven by the leader replica while
// running; every other status is at rest.
const (
	RolloutAwaitingApproval = "awaiting_approval"
	RolloutRunning          = "running"
	RolloutPaused           = "paused"
	RolloutHalted           = "halted"    // the failure threshold was reached
	RolloutAborted          = "aborted"   // by a user
	RolloutCompleted        = "completed" // every batch done
	RolloutRejected         = "rejected"  // its approval was rejected or expired
)

// RolloutActive reports whether a rollout with this status still holds its
// servers (one rollout at a time per server).
func RolloutActive(status string) bool {
	return status == RolloutAwaitingApproval || status == RolloutRunning || status == RolloutPaused
}

// Rollout item states (one server of a rollout).
const (
	ItemPending    = "pending"    // not submitted yet
	ItemRunning    = "running"    // its job is pending or running
	ItemRefreshing = "refreshing" // rebooted: its post-reboot refresh runs
	ItemSuccess    = "success"
	ItemFailed     = "failed"  // its job (or its refresh after a reboot) failed
	ItemRefused    = "refused" // got no job (busy, not joined, unsupported)
	ItemSkipped    = "skipped" // nothing to do (no reboot required)
	ItemAborted    = "aborted" // never ran: the rollout was aborted or halted
)

// RolloutItemFinal reports whether an item state is final.
func RolloutItemFinal(state string) bool {
	switch state {
	case ItemSuccess, ItemFailed, ItemRefused, ItemSkipped, ItemAborted:
		return true
	}
	return false
}

// RolloutItemFailed reports whether an item counts towards the failure
// threshold.
func RolloutItemFailed(state string) bool { return state == ItemFailed || state == ItemRefused }

// Rollout is a fleet action run in batches.
type Rollout struct {
	ID      string
	Action  string // rollout action name (security-updates, all-updates, reboot-if-required, …)
	Target  string // BulkTargetAll, BulkTargetGroup or BulkTargetServers
	GroupID string
	Status  string
	Reason  string // why it halted, was aborted or rejected

	// Plan.
	CanarySize        int // servers in the canary batch (0: none); any failure there halts
	BatchSize         int // servers per batch (or BatchPercent of the total)
	BatchPercent      int
	MaxFailures       int // halt when this many servers failed (0 with MaxFailurePercent 0: the first failure halts)
	MaxFailurePercent int // halt when this share of all servers failed
	PauseSeconds      int // wait between batches
	Concurrency       int // jobs in flight per batch (0: the whole batch at once)
	AbortRunning      bool

	Batches      int // number of batches, canary included
	CurrentBatch int // index of the batch being run (== Batches when done)
	NextAt       time.Time
	ApprovalID   string
	// ActionParams are the job params frozen at creation for an action
	// that can change later (a custom action's commands); nil for the
	// built-in actions.
	ActionParams json.RawMessage
	CreatedBy    string
	CreatedAt    time.Time
	UpdatedAt    time.Time
	FinishedAt   *time.Time

	Items []RolloutItem
}

// RolloutItem is one server of a rollout.
type RolloutItem struct {
	ServerID     string
	ServerName   string
	Batch        int
	State        string
	JobID        string
	JobStatus    JobStatus // the job's current status ("" without a job)
	RefreshJobID string    // the refresh after a reboot
	Reason       string
}

// RolloutCounts counts a rollout's items per state.
func (r Rollout) Counts() map[string]int {
	c := map[string]int{}
	for _, it := range r.Items {
		c[it.State]++
	}
	return c
}

// Failures is how many items count towards the failure threshold.
func (r Rollout) Failures() int {
	n := 0
	for _, it := range r.Items {
		if RolloutItemFailed(it.State) {
			n++
		}
	}
	return n
}

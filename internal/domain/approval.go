package domain

import (
	"encoding/json"
	"time"
)

// Approval statuses.
const (
	ApprovalPending  = "pending"
	ApprovalApproved = "approved"
	ApprovalRejected = "rejected"
	ApprovalExpired  = "expired"
	// ApprovalUsed is an approval of a single run (a schedule's or a
	// custom action's) that the run has consumed.
	ApprovalUsed = "used"
)

// ApprovalBinding is what one approval of a single run allows: its
// requester running exactly this action on exactly these servers. A run
// with another requester, another target set or a changed action needs an
// approval of its own.
type ApprovalBinding struct {
	// Targets are the ids of the servers the run touches (any order).
	Targets []string
	// Action identifies what runs (e.g. a digest of a custom action's
	// commands or of a schedule's rules).
	Action string
	// Detail is shown to approvers (names, commands, rules).
	Detail map[string]any
}

// Approval is a request that a second person holding Permission approves
// an action (four eyes): Kind names the action ("rollout", later
// "schedule", "custom-action"), RefID the object waiting for it, Payload
// what was requested (shown to the approver).
type Approval struct {
	ID            string
	Kind          string
	RefID         string
	Summary       string
	Payload       json.RawMessage
	Permission    string
	Status        string
	RequestedBy   string
	RequesterName string
	DecidedBy     string
	DeciderName   string
	Comment       string
	CreatedAt     time.Time
	ExpiresAt     time.Time
	DecidedAt     *time.Time
}

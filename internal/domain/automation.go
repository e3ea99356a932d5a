package domain

import "time"

// Job kinds of automation (issue 20): a custom action's command list and a
// free-form script, both run as root; blocked in restricted sudo mode.
const (
	JobCustomAction JobKind = "custom-action"
	JobScript       JobKind = "script"
)

// Schedule is a group's cron schedule with its ordered rules.
type Schedule struct {
	ID       string
	GroupID  string
	Name     string
	Cron     string // 5 fields or 6 with leading seconds, or @daily …
	TimeZone string // IANA name; "" = UTC
	// WindowStart/WindowEnd ("HH:MM", both or neither): the schedule only
	// runs between them (in TimeZone); may wrap midnight.
	WindowStart string
	WindowEnd   string
	// OutsideWindow is what a run due outside its window (or the group's
	// maintenance window) does: "wait" for the window, or "skip".
	OutsideWindow    string
	Enabled          bool
	RequiresApproval bool
	LastRunAt        *time.Time
	NextRunAt        *time.Time
	CreatedBy        string
	// UpdatedBy is the last user who changed the schedule or a rule of it:
	// cron runs are requested in that user's name (approvals).
	UpdatedBy string
	CreatedAt time.Time
	UpdatedAt time.Time
	Rules     []Rule
}

// Rule is one step of a schedule.
type Rule struct {
	ID         string
	ScheduleID string
	Position   int
	Type       string
	Params     RuleParams
	Enabled    bool
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// RuleParams are a rule's type-specific parameters.
type RuleParams struct {
	Packages       []string `json:"packages,omitempty"`
	CustomActionID string   `json:"custom_action_id,omitempty"`
	Script         string   `json:"script,omitempty"`
}

// ScheduleRun is one run of a schedule: its rules' steps with their jobs.
type ScheduleRun struct {
	ID         string
	ScheduleID string
	GroupID    string
	Trigger    string // cron, manual, rule (one rule triggered now)
	Status     string // waiting, running, success, failed, skipped
	Reason     string
	SlotKey    string
	DueAt      time.Time
	RuleIndex  int
	Owner      string
	Heartbeat  *time.Time
	StartedAt  *time.Time
	FinishedAt *time.Time
	CreatedAt  time.Time
	// RequestedBy is the user the run is for: who triggered it, or for a
	// cron run the schedule's last editor ("" for the system).
	RequestedBy string
	Steps       []RunStep
}

// RunStep is one rule's part of a run.
type RunStep struct {
	RuleID string        `json:"rule_id"`
	Type   string        `json:"type"`
	BulkID string        `json:"bulk_id,omitempty"`
	Status string        `json:"status"` // pending, running, success, failed, skipped
	Reason string        `json:"reason,omitempty"`
	Items  []RunStepItem `json:"items"`
}

// RunStepItem is one server of a step: its job, or why it has none.
type RunStepItem struct {
	ServerID   string `json:"server_id"`
	ServerName string `json:"server_name,omitempty"`
	JobID      string `json:"job_id,omitempty"`
	Status     string `json:"status,omitempty"`
	Skipped    string `json:"skipped,omitempty"` // code
	Reason     string `json:"reason,omitempty"`
}

// GroupAutomation is a group's automation settings.
type GroupAutomation struct {
	GroupID     string
	Priority    int // 1–9999, lower wins; default 100
	WindowStart string
	WindowEnd   string
	WindowTZ    string
	UpdatedAt   time.Time
}

// DefaultGroupPriority is a group's priority unless set.
const DefaultGroupPriority = 100

// CustomAction is a reusable command list run as root.
type CustomAction struct {
	ID               string
	Name             string
	Description      string
	Commands         []string
	RequiresApproval bool
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

// Maintenance is a server's maintenance mode.
type Maintenance struct {
	ServerID  string
	Reason    string
	StartedBy string
	StartedAt time.Time
	EndsAt    *time.Time
}

func init() {
	kindNames[JobCustomAction] = "Run custom action"
	kindNames[JobScript] = "Run script"
	blockedInRestricted[JobCustomAction] = true
	blockedInRestricted[JobScript] = true
	JobKinds = append(JobKinds, JobCustomAction, JobScript)
}

package alerts

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
)

// Rule types.
const (
	TypeDiskCapacity           = "disk_capacity"
	TypeStorageForecast        = "storage_forecast"
	TypeSecurityCVE            = "security_cve"
	TypeSecurityUpdatesOverdue = "security_updates_overdue"
	TypeServerUnreachable      = "server_unreachable"
	TypeRebootRequired         = "reboot_required"
	TypeJobFailed              = "job_failed"
	TypeVulnDBOutdated         = "vuln_db_outdated"
	TypeBackupOverdue          = "backup_overdue"
	// TypeEarlyWarning fires while a server has an unacknowledged
	// early-warning finding (internal/advisories); acknowledging resolves it.
	TypeEarlyWarning = "early_warning"
)

// Types lists the rule types in the order the UI offers them.
var Types = []string{TypeDiskCapacity, TypeStorageForecast, TypeSecurityCVE, TypeSecurityUpdatesOverdue,
	TypeServerUnreachable, TypeRebootRequired, TypeJobFailed, TypeVulnDBOutdated, TypeBackupOverdue, TypeEarlyWarning}

// fleetWide rule types watch the control plane, not a server: their alert
// subject is FleetSubject and group scoping does not apply.
var fleetWide = map[string]bool{TypeVulnDBOutdated: true, TypeBackupOverdue: true}

// FleetSubject is the subject of fleet-wide alerts.
const FleetSubject = "fleet"

// Severities of a rule.
const (
	SeverityInfo     = "info"
	SeverityWarning  = "warning"
	SeverityCritical = "critical"
)

// DefaultCooldown applies when a rule's cooldown is 0 (the reference
// product's default): a condition that stays true notifies again after it.
const DefaultCooldown = 360 * time.Minute

// Params are a rule's thresholds; each type reads its own, defaults fill
// the rest (Normalize).
type Params struct {
	// Percent: disk_capacity fires when the root filesystem is at least
	// this full (default 90).
	Percent float64 `json:"percent,omitempty"`
	// Days: storage_forecast fires when the root filesystem is forecast
	// full within this many days (default 14); security_updates_overdue when
	// security updates have been pending at least this many days (default 7).
	Days int `json:"days,omitempty"`
	// MinSeverity: security_cve fires from findings of this severity up
	// (low, medium, high, critical; default high); early_warning likewise,
	// but by default ("") from any finding, unrated ones included.
	MinSeverity string `json:"minSeverity,omitempty"`
	// Failures: server_unreachable fires after this many failed contacts
	// in a row (default 2, the status model's threshold).
	Failures int `json:"failures,omitempty"`
	// Hours: vuln_db_outdated fires when the vulnerability database is
	// older (default 48); backup_overdue when the last successful system
	// backup is older (default 26: a daily backup plus slack).
	Hours int `json:"hours,omitempty"`
}

// cveSeverities in rising order.
var cveSeverities = []string{"low", "medium", "high", "critical"}

// Rule is an alert rule.
type Rule struct {
	ID              string    `json:"id"`
	Name            string    `json:"name"`
	Type            string    `json:"type"`
	Enabled         bool      `json:"enabled"`
	Severity        string    `json:"severity"`
	AllServers      bool      `json:"allServers"`
	GroupIDs        []string  `json:"groupIds"`
	ChannelIDs      []string  `json:"channelIds"`
	Params          Params    `json:"params"`
	CooldownMinutes int       `json:"cooldownMinutes"`
	CreatedAt       time.Time `json:"createdAt"`
	UpdatedAt       time.Time `json:"updatedAt"`
}

// Cooldown is the rule's effective cooldown.
func (r Rule) Cooldown() time.Duration {
	if r.CooldownMinutes <= 0 {
		return DefaultCooldown
	}
	return time.Duration(r.CooldownMinutes) * time.Minute
}

// FleetWide reports whether the rule watches the control plane.
func (r Rule) FleetWide() bool { return fleetWide[r.Type] }

// Normalize validates the rule and fills the defaults of its type. Every
// problem names its field.
func (r *Rule) Normalize() error {
	r.Name = strings.TrimSpace(r.Name)
	if r.Name == "" || len(r.Name) > 100 {
		return domain.Invalid("invalid_name", "name must be 1 to 100 characters")
	}
	if !slices.Contains(Types, r.Type) {
		return domain.Invalid("invalid_type", "type must be one of "+strings.Join(Types, ", "))
	}
	if r.Severity == "" {
		r.Severity = SeverityWarning
	}
	if !slices.Contains([]string{SeverityInfo, SeverityWarning, SeverityCritical}, r.Severity) {
		return domain.Invalid("invalid_severity", `severity must be "info", "warning" or "critical"`)
	}
	if r.CooldownMinutes < 0 || r.CooldownMinutes > 525600 {
		return domain.Invalid("invalid_cooldown", "cooldownMinutes must be 0 (default 360) to 525600")
	}
	if r.GroupIDs == nil {
		r.GroupIDs = []string{}
	}
	if r.ChannelIDs == nil {
		r.ChannelIDs = []string{}
	}
	r.GroupIDs, r.ChannelIDs = dedupe(r.GroupIDs), dedupe(r.ChannelIDs)
	if r.FleetWide() {
		r.AllServers, r.GroupIDs = true, []string{}
	}
	if !r.AllServers && len(r.GroupIDs) == 0 {
		return domain.Invalid("invalid_scope", "choose allServers or at least one group")
	}
	if r.AllServers {
		r.GroupIDs = []string{}
	}
	p := &r.Params
	keep := Params{}
	switch r.Type {
	case TypeDiskCapacity:
		if p.Percent == 0 {
			p.Percent = 90
		}
		if p.Percent < 1 || p.Percent > 100 {
			return domain.Invalid("invalid_percent", "params.percent must be between 1 and 100")
		}
		keep.Percent = p.Percent
	case TypeStorageForecast, TypeSecurityUpdatesOverdue:
		if p.Days == 0 {
			p.Days = map[string]int{TypeStorageForecast: 14, TypeSecurityUpdatesOverdue: 7}[r.Type]
		}
		if p.Days < 1 || p.Days > 3650 {
			return domain.Invalid("invalid_days", "params.days must be between 1 and 3650")
		}
		keep.Days = p.Days
	case TypeSecurityCVE:
		if p.MinSeverity == "" {
			p.MinSeverity = "high"
		}
		p.MinSeverity = strings.ToLower(p.MinSeverity)
		if !slices.Contains(cveSeverities, p.MinSeverity) {
			return domain.Invalid("invalid_min_severity", "params.minSeverity must be low, medium, high or critical")
		}
		keep.MinSeverity = p.MinSeverity
	case TypeEarlyWarning:
		p.MinSeverity = strings.ToLower(p.MinSeverity)
		if p.MinSeverity != "" && !slices.Contains(cveSeverities, p.MinSeverity) {
			return domain.Invalid("invalid_min_severity", "params.minSeverity must be empty (any), low, medium, high or critical")
		}
		keep.MinSeverity = p.MinSeverity
	case TypeServerUnreachable:
		if p.Failures == 0 {
			p.Failures = 2
		}
		if p.Failures < 1 || p.Failures > 1000 {
			return domain.Invalid("invalid_failures", "params.failures must be between 1 and 1000")
		}
		keep.Failures = p.Failures
	case TypeVulnDBOutdated, TypeBackupOverdue:
		if p.Hours == 0 {
			p.Hours = map[string]int{TypeVulnDBOutdated: 48, TypeBackupOverdue: 26}[r.Type]
		}
		if p.Hours < 1 || p.Hours > 87600 {
			return domain.Invalid("invalid_hours", "params.hours must be between 1 and 87600")
		}
		keep.Hours = p.Hours
	}
	r.Params = keep
	return nil
}

func dedupe(in []string) []string {
	out := make([]string, 0, len(in))
	for _, v := range in {
		if v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// DecodeParams parses stored parameters.
func DecodeParams(b []byte) (Params, error) {
	var p Params
	if len(b) == 0 {
		return p, nil
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return p, fmt.Errorf("alerts: rule parameters: %w", err)
	}
	return p, nil
}

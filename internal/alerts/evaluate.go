package alerts

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/inventory"
	"github.com/lcmproject/lcm/internal/store"
)

// ServerState is what the rules read about one server.
type ServerState struct {
	ID     string
	Groups []string
	Inputs store.StatusInputs
	// Root is the forecast of "/" over its last 30 daily aggregates (only
	// computed when a storage_forecast rule is enabled; nil without
	// history).
	Root *inventory.Forecast
	// EarlyWarnings are the server's unacknowledged early-warning findings
	// (only loaded when an early_warning rule is enabled).
	EarlyWarnings []store.EarlyWarning
}

// FleetState is what fleet-wide rules read. A zero time with Known false
// means no source reported it (the rule then does not fire and says so in
// the evaluation report).
type FleetState struct {
	VulnDBUpdatedAt time.Time
	VulnDBKnown     bool
	LastBackupAt    time.Time
	BackupKnown     bool
}

// Snapshot is the input of one evaluation.
type Snapshot struct {
	Servers []ServerState
	Fleet   FleetState
	Now     time.Time
	// Paused are the servers in maintenance mode: left out of the rules,
	// and their open alerts neither repeat nor resolve until it ends.
	Paused map[string]bool
}

// Firing is the answer of one rule: subject (server id or FleetSubject)
// → the message explaining why it fires.
type Firing map[string]string

// Evaluate runs each enabled rule over the snapshot. It is a pure
// function: the service loads the snapshot and reconciles the result with
// the open alerts.
func Evaluate(rules []Rule, snap Snapshot) map[string]Firing {
	out := make(map[string]Firing, len(rules))
	for _, r := range rules {
		if !r.Enabled {
			continue
		}
		f := Firing{}
		if r.FleetWide() {
			if msg, ok := evalFleet(r, snap.Fleet, snap.Now); ok {
				f[FleetSubject] = msg
			}
			out[r.ID] = f
			continue
		}
		for i := range snap.Servers {
			s := &snap.Servers[i]
			if !inScope(r, s.Groups) {
				continue
			}
			if msg, ok := evalServer(r, s, snap.Now); ok {
				f[s.ID] = msg
			}
		}
		out[r.ID] = f
	}
	return out
}

func inScope(r Rule, groups []string) bool {
	if r.AllServers {
		return true
	}
	for _, g := range groups {
		if slices.Contains(r.GroupIDs, g) {
			return true
		}
	}
	return false
}

func evalServer(r Rule, s *ServerState, now time.Time) (string, bool) {
	in := &s.Inputs
	f := in.Facts
	switch r.Type {
	case TypeDiskCapacity:
		if f != nil && f.RootUsedPercent >= r.Params.Percent {
			return fmt.Sprintf("The root filesystem is %.0f %% full (rule threshold %.0f %%).", f.RootUsedPercent, r.Params.Percent), true
		}
	case TypeStorageForecast:
		fc := s.Root
		if fc == nil {
			return "", false
		}
		if fc.DaysUntilFull != nil && *fc.DaysUntilFull <= float64(r.Params.Days) {
			return fmt.Sprintf("The root filesystem is forecast to be full in %.1f days (rule: within %d days; trend %+.0f MB/day over %d days).",
				*fc.DaysUntilFull, r.Params.Days, fc.SlopeBytesPerDay/1e6, fc.Points), true
		}
	case TypeSecurityCVE:
		n, worst := 0, ""
		from := slices.Index(cveSeverities, r.Params.MinSeverity)
		for i := len(cveSeverities) - 1; i >= from && i >= 0; i-- {
			if c := in.Findings[cveSeverities[i]]; c > 0 {
				n += c
				if worst == "" {
					worst = cveSeverities[i]
				}
			}
		}
		if n > 0 {
			return fmt.Sprintf("%d vulnerability finding(s) of severity %s or higher (highest: %s).", n, r.Params.MinSeverity, worst), true
		}
	case TypeSecurityUpdatesOverdue:
		if f != nil && f.SecurityUpdates > 0 && f.SecuritySince != nil {
			age := now.Sub(*f.SecuritySince)
			if age >= time.Duration(r.Params.Days)*24*time.Hour {
				return fmt.Sprintf("%d security update(s) pending for %d days (rule: %d days).", f.SecurityUpdates, int(age.Hours()/24), r.Params.Days), true
			}
		}
	case TypeServerUnreachable:
		if in.FailedContacts >= r.Params.Failures {
			since := ""
			if in.UnreachableSince != nil {
				since = " since " + in.UnreachableSince.UTC().Format(time.RFC3339)
			}
			reason := in.ContactError
			if reason == "" {
				reason = "no answer"
			}
			return fmt.Sprintf("The server is unreachable%s (%d failed contacts in a row): %s.", since, in.FailedContacts, reason), true
		}
	case TypeEarlyWarning:
		from := 0
		if r.Params.MinSeverity != "" {
			from = slices.Index(cveSeverities, r.Params.MinSeverity) + 1
		}
		var names []string
		n := 0
		for _, w := range s.EarlyWarnings {
			if sevRank(w.Severity) < from {
				continue
			}
			n++
			if len(names) < 5 {
				names = append(names, fmt.Sprintf("%s in %s (%s)", w.Advisory, w.Package, w.Severity))
			}
		}
		if n > 0 {
			more := ""
			if n > len(names) {
				more = fmt.Sprintf(" and %d more", n-len(names))
			}
			return fmt.Sprintf("%d new early-warning finding(s) not acknowledged yet: %s%s.", n, strings.Join(names, ", "), more), true
		}
	case TypeRebootRequired:
		if f != nil && f.RebootRequired {
			return "A reboot is required to finish installed updates.", true
		}
	case TypeJobFailed:
		if in.LastJobStatus == string(domain.JobFailed) {
			msg := "The last job (" + domain.JobName(domain.JobKind(in.LastJobKind), in.LastJobParams) + ") failed"
			if in.LastJobError != "" {
				msg += ": " + in.LastJobError
			}
			return msg + ".", true
		}
	}
	return "", false
}

// sevRank is a finding severity's rank: unknown 0, low 1 … critical 4.
func sevRank(sev string) int { return slices.Index(cveSeverities, sev) + 1 }

func evalFleet(r Rule, f FleetState, now time.Time) (string, bool) {
	limit := time.Duration(r.Params.Hours) * time.Hour
	switch r.Type {
	case TypeVulnDBOutdated:
		if f.VulnDBKnown && now.Sub(f.VulnDBUpdatedAt) > limit {
			return fmt.Sprintf("The vulnerability database was last updated %s (%d hours ago; rule: %d hours).",
				f.VulnDBUpdatedAt.UTC().Format(time.RFC3339), int(now.Sub(f.VulnDBUpdatedAt).Hours()), r.Params.Hours), true
		}
	case TypeBackupOverdue:
		if f.BackupKnown && now.Sub(f.LastBackupAt) > limit {
			last := "never"
			if !f.LastBackupAt.IsZero() {
				last = f.LastBackupAt.UTC().Format(time.RFC3339)
			}
			return fmt.Sprintf("The last successful system backup was %s (rule: at most %d hours ago).", last, r.Params.Hours), true
		}
	}
	return "", false
}

// Package status computes a server's traffic light and the plain-text
// insights that explain it. Compute is a pure function of Inputs; Service
// loads the inputs, computes and stores the result whenever an input
// changes (refresh ingest, job finished, contact success or failure,
// vulnerability findings set) — never on read. docs/status.md documents the
// model; this file is its single implementation.
package status

import (
	"fmt"
	"strings"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
)

// Level is the weight of one insight.
type Level string

// Insight levels: red and yellow insights decide the colour, info ones only
// explain.
const (
	LevelRed    Level = "red"
	LevelYellow Level = "yellow"
	LevelInfo   Level = "info"
)

// Insight explains one contribution to the colour, in plain text.
type Insight struct {
	Level Level  `json:"level"`
	Code  string `json:"code"`
	Text  string `json:"text"`
}

// Severity of a vulnerability finding, as the scanner reports it.
const (
	SeverityCritical = "critical"
	SeverityHigh     = "high"
	SeverityMedium   = "medium"
	SeverityLow      = "low"
)

// Thresholds of the model. Each says why it is what it is.
const (
	// UnreachableAfter failed contacts in a row make a server unreachable:
	// one failure is often a blip (a restarting sshd, a full conntrack
	// table); two in a row, an hour apart with the default refresh, is an
	// outage. The reference product uses the same two-strike rule.
	UnreachableAfter = 2
	// RootYellowPercent: at 85 % used a root filesystem has room for a few
	// weeks of logs and package caches; operators want to hear about it.
	RootYellowPercent = 85.0
	// RootRedPercent: at 95 % the next package upgrade or log burst can fill
	// it, and a full root breaks sshd logins, apt and journald.
	RootRedPercent = 95.0
	// SecurityYellowAfter: security updates pending longer than a week
	// missed at least one maintenance window.
	SecurityYellowAfter = 7 * 24 * time.Hour
	// SecurityRedAfter: pending for a month means patching has stopped on
	// this server.
	SecurityRedAfter = 30 * 24 * time.Hour
)

// Inputs is everything the colour depends on.
type Inputs struct {
	// Contacted: the server was reached at least once (facts or last seen).
	Contacted bool
	// FailedContacts is the streak of failed contacts since the last
	// success; UnreachableSince when it began; ContactError the last reason.
	FailedContacts   int
	UnreachableSince time.Time
	ContactError     string
	// Refreshed: an inventory refresh was ingested; the fields below it are
	// only meaningful then.
	Refreshed       bool
	RebootRequired  bool
	RootUsedPercent float64 // < 0 when unknown
	Updates         int
	SecurityUpdates int
	SecuritySince   time.Time // zero when none pending
	// LastJobFailed is the state of the most recent finished job.
	LastJobFailed bool
	LastJobName   string
	LastJobError  string
	// Vulnerability findings (hook for the scanner).
	CVECritical int
	CVEHigh     int
	CVEMedium   int
	// CVECriticalPackages and CVEHighPackages name the affected packages
	// with their fix ("openssl (fixed in 3.0.15-1~deb12u1)"), for the insight.
	CVECriticalPackages []string
	CVEHighPackages     []string
	// CVEAny counts open findings of every severity: excellent needs none.
	CVEAny int
	// SSHHardened and FirewallActive are the proven hardening state: the
	// best state, excellent, needs both (reference order). FirewallTool
	// names the backend; FirewallKnown: the firewall was read back once.
	SSHHardened    bool
	FirewallActive bool
	FirewallTool   string
	FirewallKnown  bool
	// ImageUpdates names the container images in use whose tag points to a
	// newer image in the registry (the newer-image check).
	ImageUpdates []string
	// Notes are configuration warnings (rule conflicts between the
	// server's groups): info insights, they do not change the colour.
	Notes []string
	// Now is the time thresholds are measured against.
	Now time.Time
}

// Compute returns the colour and the insights explaining it, reds first.
//
// Order: never contacted → unknown; UnreachableAfter failed contacts →
// unreachable (the last known problems stay listed); otherwise any red
// insight → red, any yellow → yellow; else excellent when no vulnerability
// is known, SSH is hardened and a firewall is active (the reference's best
// state), else green with an insight naming what excellent still needs.
func Compute(in Inputs) (domain.ServerStatus, []Insight) {
	var ins []Insight
	add := func(l Level, code, format string, args ...any) {
		ins = append(ins, Insight{Level: l, Code: code, Text: fmt.Sprintf(format, args...)})
	}
	if !in.Contacted && in.FailedContacts == 0 {
		add(LevelInfo, "never_contacted", "The server has not been contacted yet; its status is unknown until the first successful connection.")
		return domain.ServerUnknown, ins
	}
	unreachable := in.FailedContacts >= UnreachableAfter
	switch {
	case unreachable:
		add(LevelRed, "unreachable", "The server has been unreachable since %s (%d failed contacts in a row): %s.",
			stamp(in.UnreachableSince), in.FailedContacts, orText(in.ContactError, "no answer"))
	case in.FailedContacts > 0:
		add(LevelYellow, "contact_failed", "The last contact failed (%s); the server counts as unreachable after %d failures in a row.",
			orText(in.ContactError, "no answer"), UnreachableAfter)
	}
	if in.CVECritical > 0 {
		add(LevelRed, "cve_critical", "%s with critical severity %s installed packages; update the affected packages%s.",
			plural(in.CVECritical, "vulnerability", "vulnerabilities"), verb(in.CVECritical, "affects", "affect"), listPackages(": ", in.CVECriticalPackages))
	} else if in.CVEHigh > 0 {
		add(LevelYellow, "cve_high", "The highest vulnerability severity is high (%s); no critical ones%s.", plural(in.CVEHigh, "finding", "findings"),
			listPackages("; update ", in.CVEHighPackages))
	}
	if in.Refreshed {
		switch p := in.RootUsedPercent; {
		case p >= RootRedPercent:
			add(LevelRed, "root_fs_full", "The root filesystem is %.0f %% full (red from %.0f %%); free space before updates or logging fail.", p, RootRedPercent)
		case p >= RootYellowPercent:
			add(LevelYellow, "root_fs_high", "The root filesystem is %.0f %% full (warning from %.0f %%).", p, RootYellowPercent)
		}
		if in.SecurityUpdates > 0 {
			age := time.Duration(0)
			if !in.SecuritySince.IsZero() {
				age = in.Now.Sub(in.SecuritySince)
			}
			switch {
			case age >= SecurityRedAfter:
				add(LevelRed, "security_updates_overdue", "%s pending for %d days (red after %d days).",
					plural(in.SecurityUpdates, "security update has been", "security updates have been"), days(age), days(SecurityRedAfter))
			case age >= SecurityYellowAfter:
				add(LevelYellow, "security_updates_pending", "%s pending for %d days (warning after %d days).",
					plural(in.SecurityUpdates, "security update has been", "security updates have been"), days(age), days(SecurityYellowAfter))
			default:
				add(LevelInfo, "security_updates_available", "%s available.", plural(in.SecurityUpdates, "security update", "security updates"))
			}
		}
		if in.RebootRequired {
			add(LevelYellow, "reboot_required", "A reboot is required to finish installed updates (new kernel or core libraries).")
		}
		if n := in.Updates - in.SecurityUpdates; n > 0 {
			add(LevelInfo, "updates_available", "%s available.", plural(n, "other update", "other updates"))
		}
	}
	if n := len(in.ImageUpdates); n > 0 {
		add(LevelYellow, "container_image_updates", "%s newer in the registry than what the containers run: %s.",
			plural(n, "container image is", "container images are"), strings.Join(in.ImageUpdates, ", "))
	}
	if in.LastJobFailed {
		add(LevelYellow, "last_job_failed", "The last job (%s) failed: %s.", orText(in.LastJobName, "job"), orText(in.LastJobError, "no reason recorded"))
	}
	for _, n := range in.Notes {
		add(LevelInfo, "rule_priority_tie", "%s", n)
	}
	if in.CVEMedium > 0 && in.CVECritical == 0 && in.CVEHigh == 0 {
		add(LevelInfo, "cve_medium", "%s of medium severity.", plural(in.CVEMedium, "vulnerability", "vulnerabilities"))
	}
	sortInsights(ins)
	switch {
	case unreachable:
		return domain.ServerUnreachable, ins
	case len(ins) > 0 && ins[0].Level == LevelRed:
		return domain.ServerRed, ins
	case len(ins) > 0 && ins[0].Level == LevelYellow:
		return domain.ServerYellow, ins
	}
	var missing []string
	if n := max(in.CVEAny, in.CVECritical+in.CVEHigh+in.CVEMedium); n > 0 {
		missing = append(missing, fmt.Sprintf("%s known", plural(n, "vulnerability is", "vulnerabilities are")))
	}
	if !in.SSHHardened {
		missing = append(missing, "SSH is not hardened (password logins are not proven off)")
	}
	switch {
	case in.FirewallActive:
	case in.FirewallKnown && in.FirewallTool != "":
		missing = append(missing, fmt.Sprintf("the firewall (%s) is not active", in.FirewallTool))
	case in.FirewallKnown:
		missing = append(missing, "no firewall tool is installed")
	default:
		missing = append(missing, "no active firewall has been read back")
	}
	if len(missing) == 0 {
		ins = append([]Insight{{Level: LevelInfo, Code: "excellent", Text: fmt.Sprintf(
			"No problems, no known vulnerabilities, SSH hardened and the firewall (%s) active.", orText(in.FirewallTool, "firewall"))}}, ins...)
		return domain.ServerExcellent, ins
	}
	if len(ins) == 0 {
		add(LevelInfo, "ok", "No problems found.")
	}
	add(LevelInfo, "not_excellent", "Not excellent yet: %s.", strings.Join(missing, "; "))
	return domain.ServerGreen, ins
}

func rank(l Level) int {
	switch l {
	case LevelRed:
		return 0
	case LevelYellow:
		return 1
	}
	return 2
}

// sortInsights orders reds, then yellows, then info, keeping rule order.
func sortInsights(ins []Insight) {
	for i := 1; i < len(ins); i++ {
		for j := i; j > 0 && rank(ins[j].Level) < rank(ins[j-1].Level); j-- {
			ins[j], ins[j-1] = ins[j-1], ins[j]
		}
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// verb picks the verb form that agrees with a count (1 vulnerability
// affects, 2 vulnerabilities affect).
func verb(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func days(d time.Duration) int { return int(d / (24 * time.Hour)) }

func stamp(t time.Time) string {
	if t.IsZero() {
		return "an unknown time"
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

func orText(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// listPackages joins up to five package texts after prefix ("" for none).
func listPackages(prefix string, pkgs []string) string {
	if len(pkgs) == 0 {
		return ""
	}
	const show = 5
	if len(pkgs) <= show {
		return prefix + strings.Join(pkgs, ", ")
	}
	return prefix + strings.Join(pkgs[:show], ", ") + fmt.Sprintf(" and %d more", len(pkgs)-show)
}

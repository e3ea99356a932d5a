package automation

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/lcmproject/lcm/internal/domain"
)

// Rule types.
const (
	RuleSecurityUpdates  = "security-updates"
	RuleAllUpdates       = "all-updates"
	RulePackages         = "packages"
	RuleRefresh          = "refresh"
	RuleReboot           = "reboot"
	RuleRebootIfRequired = "reboot-if-required"
	RuleCustomAction     = "custom-action"
	RuleScript           = "script"
	RuleContainerPrune   = "container-prune"
	RuleImageUpdates     = "image-updates"
	RuleVulnScan         = "vulnerability-scan"
	RuleHealthCheck      = "health-check"
)

// RuleTypes lists every rule type in the order the UI offers them.
var RuleTypes = []string{RuleSecurityUpdates, RuleAllUpdates, RulePackages, RuleRefresh, RuleReboot, RuleRebootIfRequired,
	RuleCustomAction, RuleScript, RuleContainerPrune, RuleImageUpdates, RuleVulnScan, RuleHealthCheck}

// Limits.
const (
	maxNameLen     = 128
	maxCommands    = 50
	maxCommandLen  = 4096
	maxScriptLen   = 64 << 10
	maxPackages    = 100
	maxRulesPerSch = 50
)

var parser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseCron parses a schedule's cron spec (5 fields, an optional leading
// seconds field, or a descriptor such as @daily). CRON_TZ/TZ prefixes are
// refused: the time zone is its own field.
func ParseCron(spec string) (cron.Schedule, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" || len(spec) > 128 || strings.HasPrefix(spec, "CRON_TZ=") || strings.HasPrefix(spec, "TZ=") {
		return nil, domain.Invalid("invalid_cron", "cron must be 5 fields (minute hour day month weekday), 6 with leading seconds, or @daily/@hourly/@every 1h; the time zone is the time_zone field")
	}
	s, err := parser.Parse(spec)
	if err != nil {
		return nil, domain.Invalid("invalid_cron", fmt.Sprintf("%q is not a cron spec: %v", spec, err))
	}
	return s, nil
}

// LoadZone returns the IANA zone ("" = UTC).
func LoadZone(name string) (*time.Location, error) {
	if name == "" {
		return time.UTC, nil
	}
	if len(name) > 64 || strings.ContainsAny(name, "\x00\\") || strings.Contains(name, "..") {
		return nil, domain.Invalid("invalid_time_zone", "time_zone must be an IANA name such as Europe/Berlin")
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, domain.Invalid("invalid_time_zone", fmt.Sprintf("unknown time zone %q (an IANA name such as Europe/Berlin)", name))
	}
	return loc, nil
}

// parseClock parses "HH:MM" into minutes after midnight.
func parseClock(s string) (int, bool) {
	if len(s) != 5 || s[2] != ':' {
		return 0, false
	}
	t, err := time.Parse("15:04", s)
	if err != nil {
		return 0, false
	}
	return t.Hour()*60 + t.Minute(), true
}

// ValidWindow checks a window: both ends or neither, distinct.
func ValidWindow(start, end string) error {
	if start == "" && end == "" {
		return nil
	}
	a, ok1 := parseClock(start)
	b, ok2 := parseClock(end)
	if !ok1 || !ok2 || a == b {
		return domain.Invalid("invalid_window", "a time window needs window_start and window_end as HH:MM (24 h), different from each other; leave both empty for none")
	}
	return nil
}

// Window is a daily time window in a zone; it may wrap midnight
// (22:00–02:00). The zero Window is always open.
type Window struct {
	Start, End int // minutes after midnight
	Loc        *time.Location
	Set        bool
}

// NewWindow returns the window of start/end in zone.
func NewWindow(start, end, zone string) (Window, error) {
	if start == "" && end == "" {
		return Window{}, nil
	}
	if err := ValidWindow(start, end); err != nil {
		return Window{}, err
	}
	loc, err := LoadZone(zone)
	if err != nil {
		return Window{}, err
	}
	a, _ := parseClock(start)
	b, _ := parseClock(end)
	return Window{Start: a, End: b, Loc: loc, Set: true}, nil
}

// Open reports whether t lies in the window: [start, end), to the minute.
func (w Window) Open(t time.Time) bool {
	if !w.Set {
		return true
	}
	lt := t.In(w.Loc)
	m := lt.Hour()*60 + lt.Minute()
	if w.Start < w.End {
		return m >= w.Start && m < w.End
	}
	return m >= w.Start || m < w.End
}

// NextOpen returns the first minute at or after t at which the window is
// open (t itself when it is open).
func (w Window) NextOpen(t time.Time) time.Time {
	if w.Open(t) {
		return t
	}
	lt := t.In(w.Loc)
	day := time.Date(lt.Year(), lt.Month(), lt.Day(), 0, 0, 0, 0, w.Loc)
	for i := 0; i < 3; i++ {
		c := day.AddDate(0, 0, i).Add(time.Duration(w.Start) * time.Minute)
		if !c.Before(t) && w.Open(c) {
			return c.UTC()
		}
	}
	return t.Add(24 * time.Hour) // unreachable for a valid window
}

func (w Window) String() string {
	if !w.Set {
		return "always"
	}
	return fmt.Sprintf("%02d:%02d–%02d:%02d %s", w.Start/60, w.Start%60, w.End/60, w.End%60, w.Loc)
}

// validName trims and checks a name.
func validName(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > maxNameLen || strings.ContainsRune(s, 0) {
		return "", domain.Invalid("invalid_name", fmt.Sprintf("name is required (at most %d characters)", maxNameLen))
	}
	return s, nil
}

// ValidRule checks a rule's type and params.
func ValidRule(r *domain.Rule) error {
	known := false
	for _, t := range RuleTypes {
		known = known || t == r.Type
	}
	if !known {
		return domain.Invalid("invalid_rule_type", fmt.Sprintf("unknown rule type %q; one of: %s", r.Type, strings.Join(RuleTypes, ", ")))
	}
	p := r.Params
	switch r.Type {
	case RulePackages:
		if len(p.Packages) == 0 || len(p.Packages) > maxPackages {
			return domain.Invalid("invalid_packages", fmt.Sprintf("a packages rule names 1 to %d packages", maxPackages))
		}
		for _, n := range p.Packages {
			if !validPackageName(n) {
				return domain.Invalid("invalid_packages", fmt.Sprintf("%q is not a package name", n))
			}
		}
	case RuleCustomAction:
		if p.CustomActionID == "" || len(p.CustomActionID) > 36 {
			return domain.Invalid("invalid_custom_action", "a custom-action rule needs custom_action_id")
		}
	case RuleScript:
		if strings.TrimSpace(p.Script) == "" || len(p.Script) > maxScriptLen || strings.ContainsRune(p.Script, 0) {
			return domain.Invalid("invalid_script", fmt.Sprintf("a script rule needs a script (at most %d bytes)", maxScriptLen))
		}
	}
	// Params that do not belong to the type are dropped, not stored.
	clean := domain.RuleParams{}
	switch r.Type {
	case RulePackages:
		clean.Packages = p.Packages
	case RuleCustomAction:
		clean.CustomActionID = p.CustomActionID
	case RuleScript:
		clean.Script = p.Script
	}
	r.Params = clean
	return nil
}

func validPackageName(n string) bool {
	if n == "" || len(n) > 128 {
		return false
	}
	for _, c := range n {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("+-._:~", c)) {
			return false
		}
	}
	return n[0] != '-'
}

// ValidCommands checks a custom action's command list.
func ValidCommands(cmds []string) ([]string, error) {
	var out []string
	for _, c := range cmds {
		c = strings.TrimSpace(c)
		if c == "" {
			continue
		}
		if len(c) > maxCommandLen || strings.ContainsRune(c, 0) {
			return nil, domain.Invalid("invalid_commands", fmt.Sprintf("a command is at most %d characters", maxCommandLen))
		}
		out = append(out, c)
	}
	if len(out) == 0 || len(out) > maxCommands {
		return nil, domain.Invalid("invalid_commands", fmt.Sprintf("commands: 1 to %d non-empty command lines", maxCommands))
	}
	return out, nil
}

package automation

import (
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
)

// FuzzParseCron: any spec is parsed or refused with a domain error, never
// a panic; a parsed spec has a next run after a fixed time (or none).
func FuzzParseCron(f *testing.F) {
	for _, s := range []string{"* * * * * *", "30 2 * * *", "@daily", "@every 1h", "0 */5 1-3 * MON-FRI", "CRON_TZ=UTC 0 * * * *", "61 * * * *", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		s, err := ParseCron(spec)
		if err != nil {
			return
		}
		from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		if n := s.Next(from); !n.IsZero() && !n.After(from) {
			t.Fatalf("%q: next %s not after %s", spec, n, from)
		}
	})
}

// FuzzWindow: a valid window's NextOpen is open and not before the time
// asked for, and no later than a day after it.
func FuzzWindow(f *testing.F) {
	f.Add("02:00", "05:00", "Europe/Berlin", int64(0))
	f.Add("22:00", "02:00", "UTC", int64(86399))
	f.Add("00:00", "23:59", "America/New_York", int64(1e9))
	f.Fuzz(func(t *testing.T, start, end, zone string, sec int64) {
		w, err := NewWindow(start, end, zone)
		if err != nil {
			return
		}
		at := time.Unix(sec%(400*365*86400), 0).UTC()
		n := w.NextOpen(at)
		if n.Before(at) || !w.Open(n) || n.Sub(at) > 26*time.Hour {
			t.Fatalf("window %s at %s: next open %s", w, at, n)
		}
	})
}

// FuzzValidRule: a rule is accepted or refused, and an accepted one keeps
// only its type's params.
func FuzzValidRule(f *testing.F) {
	f.Add("packages", "nginx", "", "")
	f.Add("script", "", "", "echo hi")
	f.Add("custom-action", "", "abc", "")
	f.Fuzz(func(t *testing.T, typ, pkg, ca, script string) {
		r := domain.Rule{Type: typ, Params: domain.RuleParams{Packages: []string{pkg}, CustomActionID: ca, Script: script}}
		if err := ValidRule(&r); err != nil {
			return
		}
		if r.Type != RulePackages && len(r.Params.Packages) > 0 || r.Type != RuleScript && r.Params.Script != "" {
			t.Fatalf("%+v keeps foreign params", r)
		}
	})
}

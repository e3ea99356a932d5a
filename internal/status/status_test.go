package status

import (
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
)

func TestCompute(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	ok := Inputs{Contacted: true, Refreshed: true, RootUsedPercent: 40, Now: now}
	with := func(f func(*Inputs)) Inputs { in := ok; f(&in); return in }
	tests := []struct {
		name   string
		in     Inputs
		want   domain.ServerStatus
		code   string // an insight code that must be present
		level  Level
		inText string
	}{
		{"never contacted", Inputs{Now: now}, domain.ServerUnknown, "never_contacted", LevelInfo, "not been contacted"},
		{"healthy", ok, domain.ServerGreen, "ok", LevelInfo, "No problems"},
		{"one failed contact", with(func(i *Inputs) { i.FailedContacts = 1; i.ContactError = "dial timeout" }), domain.ServerYellow, "contact_failed", LevelYellow, "dial timeout"},
		{"unreachable", with(func(i *Inputs) { i.FailedContacts = 2; i.UnreachableSince = now.Add(-time.Hour) }), domain.ServerUnreachable, "unreachable", LevelRed, "2025-03-01 11:00 UTC"},
		{"unreachable keeps other insights", with(func(i *Inputs) { i.FailedContacts = 3; i.RebootRequired = true }), domain.ServerUnreachable, "reboot_required", LevelYellow, "reboot"},
		{"unreachable never contacted", Inputs{FailedContacts: 2, Now: now}, domain.ServerUnreachable, "unreachable", LevelRed, "no answer"},
		{"reboot required", with(func(i *Inputs) { i.RebootRequired = true }), domain.ServerYellow, "reboot_required", LevelYellow, "reboot is required"},
		{"root 84", with(func(i *Inputs) { i.RootUsedPercent = 84.9 }), domain.ServerGreen, "ok", LevelInfo, ""},
		{"root 85", with(func(i *Inputs) { i.RootUsedPercent = 85 }), domain.ServerYellow, "root_fs_high", LevelYellow, "85 %"},
		{"root 95", with(func(i *Inputs) { i.RootUsedPercent = 96 }), domain.ServerRed, "root_fs_full", LevelRed, "96 %"},
		{"root unknown", with(func(i *Inputs) { i.RootUsedPercent = -1 }), domain.ServerGreen, "ok", LevelInfo, ""},
		{"security fresh", with(func(i *Inputs) { i.SecurityUpdates, i.Updates, i.SecuritySince = 3, 5, now.Add(-time.Hour) }), domain.ServerGreen, "security_updates_available", LevelInfo, "3 security updates"},
		{"other updates", with(func(i *Inputs) { i.SecurityUpdates, i.Updates, i.SecuritySince = 3, 5, now }), domain.ServerGreen, "updates_available", LevelInfo, "2 other updates"},
		{"security week", with(func(i *Inputs) { i.SecurityUpdates, i.SecuritySince = 1, now.Add(-8*24*time.Hour) }), domain.ServerYellow, "security_updates_pending", LevelYellow, "for 8 days"},
		{"security month", with(func(i *Inputs) { i.SecurityUpdates, i.SecuritySince = 2, now.Add(-31*24*time.Hour) }), domain.ServerRed, "security_updates_overdue", LevelRed, "31 days"},
		{"last job failed", with(func(i *Inputs) {
			i.LastJobFailed, i.LastJobName, i.LastJobError = true, "upgrade-security", "apt-get exited with code 100"
		}), domain.ServerYellow, "last_job_failed", LevelYellow, "upgrade-security"},
		{"cve critical", with(func(i *Inputs) { i.CVECritical, i.CVEHigh = 1, 4 }), domain.ServerRed, "cve_critical", LevelRed, "1 vulnerability"},
		{"cve high", with(func(i *Inputs) { i.CVEHigh = 4 }), domain.ServerYellow, "cve_high", LevelYellow, "4 findings"},
		{"cve medium", with(func(i *Inputs) { i.CVEMedium = 2 }), domain.ServerGreen, "cve_medium", LevelInfo, "medium"},
		{"red beats yellow", with(func(i *Inputs) { i.RebootRequired, i.CVECritical = true, 1 }), domain.ServerRed, "reboot_required", LevelYellow, ""},
		{"contacted not refreshed", Inputs{Contacted: true, Now: now}, domain.ServerGreen, "ok", LevelInfo, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ins := Compute(tt.in)
			if got != tt.want {
				t.Fatalf("status = %s, want %s (%+v)", got, tt.want, ins)
			}
			found := false
			for i, in := range ins {
				if i > 0 && rank(in.Level) < rank(ins[i-1].Level) {
					t.Errorf("insights not ordered by level: %+v", ins)
				}
				if in.Text == "" {
					t.Errorf("insight %s has no text", in.Code)
				}
				if in.Code == tt.code {
					found = true
					if in.Level != tt.level || !strings.Contains(in.Text, tt.inText) {
						t.Errorf("insight %+v, want level %s containing %q", in, tt.level, tt.inText)
					}
				}
			}
			if !found {
				t.Errorf("no insight %s in %+v", tt.code, ins)
			}
		})
	}
}

package status

import (
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/store"
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
		{"cve critical", with(func(i *Inputs) { i.CVECritical, i.CVEHigh = 1, 4 }), domain.ServerRed, "cve_critical", LevelRed, "1 vulnerability with critical severity affects installed"},
		{"cve critical 3", with(func(i *Inputs) { i.CVECritical = 3 }), domain.ServerRed, "cve_critical", LevelRed, "3 vulnerabilities with critical severity affect installed"},
		{"cve high", with(func(i *Inputs) { i.CVEHigh = 4 }), domain.ServerYellow, "cve_high", LevelYellow, "4 findings"},
		{"cve critical names packages and fixes", with(func(i *Inputs) {
			i.CVECritical, i.CVECriticalPackages = 2, []string{"libssl3 (fixed in 3.0.14-1~deb12u2)", "zlib1g (no fix yet)"}
		}), domain.ServerRed, "cve_critical", LevelRed, "update the affected packages: libssl3 (fixed in 3.0.14-1~deb12u2), zlib1g (no fix yet)."},
		{"cve high names packages", with(func(i *Inputs) {
			i.CVEHigh, i.CVEHighPackages = 7, []string{"a (no fix yet)", "b (no fix yet)", "c (no fix yet)", "d (no fix yet)", "e (no fix yet)", "f (no fix yet)"}
		}), domain.ServerYellow, "cve_high", LevelYellow, "; update a (no fix yet), b (no fix yet), c (no fix yet), d (no fix yet), e (no fix yet) and 1 more."},
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

// TestExcellent: the best state needs no known vulnerability, SSH hardened
// and an active firewall, on top of green; each missing part is named.
func TestExcellent(t *testing.T) {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	best := Inputs{Contacted: true, Refreshed: true, RootUsedPercent: 40, Now: now,
		SSHHardened: true, FirewallActive: true, FirewallTool: "ufw", FirewallKnown: true}
	st, ins := Compute(best)
	if st != domain.ServerExcellent || ins[0].Code != "excellent" || !strings.Contains(ins[0].Text, "ufw") {
		t.Fatalf("all met: %s %+v", st, ins)
	}
	for _, c := range []struct {
		name string
		f    func(*Inputs)
		want domain.ServerStatus
		text string
	}{
		{"not hardened", func(i *Inputs) { i.SSHHardened = false }, domain.ServerGreen, "SSH is not hardened"},
		{"firewall inactive", func(i *Inputs) { i.FirewallActive = false }, domain.ServerGreen, "the firewall (ufw) is not active"},
		{"no firewall tool", func(i *Inputs) { i.FirewallActive, i.FirewallTool = false, "" }, domain.ServerGreen, "no firewall tool is installed"},
		{"never read", func(i *Inputs) { i.FirewallActive, i.FirewallKnown, i.FirewallTool = false, false, "" }, domain.ServerGreen, "no active firewall has been read back"},
		{"low cve", func(i *Inputs) { i.CVEAny = 1 }, domain.ServerGreen, "1 vulnerability is known"},
		{"medium cve", func(i *Inputs) { i.CVEMedium, i.CVEAny = 2, 2 }, domain.ServerGreen, "2 vulnerabilities are known"},
		{"yellow stays yellow", func(i *Inputs) { i.RebootRequired = true }, domain.ServerYellow, ""},
		{"red stays red", func(i *Inputs) { i.CVECritical = 1 }, domain.ServerRed, ""},
	} {
		in := best
		c.f(&in)
		st, ins := Compute(in)
		if st != c.want {
			t.Errorf("%s: %s, want %s (%+v)", c.name, st, c.want, ins)
			continue
		}
		if c.text == "" {
			continue
		}
		last := ins[len(ins)-1]
		if last.Code != "not_excellent" || !strings.Contains(last.Text, c.text) {
			t.Errorf("%s: last insight %+v, want not_excellent naming %q", c.name, last, c.text)
		}
	}
	// The healthy but unhardened server still says "ok" first.
	st, ins = Compute(Inputs{Contacted: true, Now: now})
	if st != domain.ServerGreen || ins[0].Code != "ok" {
		t.Fatalf("plain green: %s %+v", st, ins)
	}
}

// Newer container images in the registry are a yellow insight naming them
// (reference order: Docker image updates → yellow).
func TestContainerImageUpdatesAreYellow(t *testing.T) {
	in := inputsOf(store.StatusInputs{LastSeenAt: ptrTime(time.Now()), SSHHardened: true, FirewallActive: true, FirewallKnown: true,
		ContainerUpdates: []byte(`[{"image":"b:1","update_available":true},{"image":"a:2","update_available":true},{"image":"c:3","update_available":false},{"image":"a:2","update_available":true}]`)},
		time.Now())
	st, ins := Compute(in)
	if st != domain.ServerYellow {
		t.Fatalf("status %s, want yellow: %+v", st, ins)
	}
	if len(ins) == 0 || ins[0].Code != "container_image_updates" || !strings.Contains(ins[0].Text, "2 container images are newer") || !strings.Contains(ins[0].Text, "a:2, b:1") {
		t.Fatalf("insights %+v", ins)
	}
	if got := imageUpdates([]byte(`not json`)); got != nil {
		t.Fatalf("bad JSON: %v", got)
	}
}

func ptrTime(t time.Time) *time.Time { return &t }

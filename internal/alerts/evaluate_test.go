package alerts

import (
	"fmt"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/inventory"
	"github.com/lcmproject/lcm/internal/store"
)

func TestEvaluateRuleTypes(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	old := now.Add(-10 * 24 * time.Hour)
	recent := now.Add(-2 * 24 * time.Hour)
	facts := func(f store.FactsRecord) *store.FactsRecord { return &f }
	growing := func(perDay int64) *inventory.Forecast {
		var d []inventory.StorageDay
		for i := range 10 {
			d = append(d, inventory.StorageDay{Day: now.AddDate(0, 0, i-9).Format("2006-01-02"), UsedBytes: 50e9 + int64(i)*perDay, TotalBytes: 100e9})
		}
		fc := inventory.ForecastOf(d)
		return &fc
	}
	cases := []struct {
		name   string
		rule   Rule
		server ServerState
		fleet  FleetState
		fires  bool
	}{
		{"disk over", Rule{Type: TypeDiskCapacity}, ServerState{Inputs: store.StatusInputs{Facts: facts(store.FactsRecord{RootUsedPercent: 93})}}, FleetState{}, true},
		{"disk under", Rule{Type: TypeDiskCapacity}, ServerState{Inputs: store.StatusInputs{Facts: facts(store.FactsRecord{RootUsedPercent: 80})}}, FleetState{}, false},
		{"disk custom", Rule{Type: TypeDiskCapacity, Params: Params{Percent: 75}}, ServerState{Inputs: store.StatusInputs{Facts: facts(store.FactsRecord{RootUsedPercent: 80})}}, FleetState{}, true},
		{"disk unknown", Rule{Type: TypeDiskCapacity}, ServerState{}, FleetState{}, false},
		{"forecast soon", Rule{Type: TypeStorageForecast}, ServerState{Root: growing(5e9)}, FleetState{}, true},
		{"forecast far", Rule{Type: TypeStorageForecast}, ServerState{Root: growing(1e8)}, FleetState{}, false},
		{"forecast flat", Rule{Type: TypeStorageForecast}, ServerState{Root: growing(0)}, FleetState{}, false},
		{"cve high", Rule{Type: TypeSecurityCVE}, ServerState{Inputs: store.StatusInputs{Findings: map[string]int{"high": 1}}}, FleetState{}, true},
		{"cve medium below", Rule{Type: TypeSecurityCVE}, ServerState{Inputs: store.StatusInputs{Findings: map[string]int{"medium": 4}}}, FleetState{}, false},
		{"cve low min", Rule{Type: TypeSecurityCVE, Params: Params{MinSeverity: "low"}}, ServerState{Inputs: store.StatusInputs{Findings: map[string]int{"low": 1}}}, FleetState{}, true},
		{"updates overdue", Rule{Type: TypeSecurityUpdatesOverdue}, ServerState{Inputs: store.StatusInputs{Facts: facts(store.FactsRecord{SecurityUpdates: 3, SecuritySince: &old})}}, FleetState{}, true},
		{"updates recent", Rule{Type: TypeSecurityUpdatesOverdue}, ServerState{Inputs: store.StatusInputs{Facts: facts(store.FactsRecord{SecurityUpdates: 3, SecuritySince: &recent})}}, FleetState{}, false},
		{"unreachable", Rule{Type: TypeServerUnreachable}, ServerState{Inputs: store.StatusInputs{FailedContacts: 2}}, FleetState{}, true},
		{"one failure", Rule{Type: TypeServerUnreachable}, ServerState{Inputs: store.StatusInputs{FailedContacts: 1}}, FleetState{}, false},
		{"reboot", Rule{Type: TypeRebootRequired}, ServerState{Inputs: store.StatusInputs{Facts: facts(store.FactsRecord{RebootRequired: true})}}, FleetState{}, true},
		{"job failed", Rule{Type: TypeJobFailed}, ServerState{Inputs: store.StatusInputs{LastJobStatus: "failed", LastJobKind: "refresh", LastJobError: "exit 1"}}, FleetState{}, true},
		{"job ok", Rule{Type: TypeJobFailed}, ServerState{Inputs: store.StatusInputs{LastJobStatus: "success"}}, FleetState{}, false},
		{"vuln db old", Rule{Type: TypeVulnDBOutdated}, ServerState{}, FleetState{VulnDBKnown: true, VulnDBUpdatedAt: old}, true},
		{"vuln db fresh", Rule{Type: TypeVulnDBOutdated}, ServerState{}, FleetState{VulnDBKnown: true, VulnDBUpdatedAt: now.Add(-time.Hour)}, false},
		{"vuln db unknown", Rule{Type: TypeVulnDBOutdated}, ServerState{}, FleetState{}, false},
		{"backup overdue", Rule{Type: TypeBackupOverdue}, ServerState{}, FleetState{BackupKnown: true, LastBackupAt: now.Add(-30 * time.Hour)}, true},
		{"backup never", Rule{Type: TypeBackupOverdue}, ServerState{}, FleetState{BackupKnown: true}, true},
		{"backup ok", Rule{Type: TypeBackupOverdue}, ServerState{}, FleetState{BackupKnown: true, LastBackupAt: now.Add(-time.Hour)}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.rule
			r.ID, r.Name, r.Enabled, r.AllServers = "r", "rule", true, true
			if err := r.Normalize(); err != nil {
				t.Fatal(err)
			}
			tc.server.ID = "s"
			got := Evaluate([]Rule{r}, Snapshot{Servers: []ServerState{tc.server}, Fleet: tc.fleet, Now: now})
			if fires := len(got["r"]) == 1; fires != tc.fires {
				t.Fatalf("fires = %v, want %v (%v)", fires, tc.fires, got)
			}
			for _, msg := range got["r"] {
				if msg == "" {
					t.Fatal("empty message")
				}
			}
		})
	}
}

func TestNormalize(t *testing.T) {
	bad := []Rule{
		{Name: "", Type: TypeRebootRequired, AllServers: true},
		{Name: "x", Type: "nope", AllServers: true},
		{Name: "x", Type: TypeRebootRequired},
		{Name: "x", Type: TypeRebootRequired, AllServers: true, Severity: "urgent"},
		{Name: "x", Type: TypeRebootRequired, AllServers: true, CooldownMinutes: -1},
		{Name: "x", Type: TypeDiskCapacity, AllServers: true, Params: Params{Percent: 120}},
		{Name: "x", Type: TypeSecurityCVE, AllServers: true, Params: Params{MinSeverity: "bad"}},
		{Name: "x", Type: TypeStorageForecast, AllServers: true, Params: Params{Days: -3}},
	}
	for i, r := range bad {
		if err := r.Normalize(); err == nil {
			t.Errorf("case %d accepted: %+v", i, r)
		}
	}
	r := Rule{Name: "b", Type: TypeBackupOverdue, GroupIDs: []string{"g"}}
	if err := r.Normalize(); err != nil || !r.AllServers || len(r.GroupIDs) != 0 || r.Params.Hours != 26 {
		t.Fatalf("fleet-wide rule %+v %v", r, err)
	}
}

func FuzzNormalize(f *testing.F) {
	f.Add("n", TypeDiskCapacity, "warning", 0, 90.0, 0, "", true)
	f.Fuzz(func(t *testing.T, name, typ, sev string, cooldown int, pct float64, days int, minSev string, all bool) {
		r := Rule{Name: name, Type: typ, Severity: sev, CooldownMinutes: cooldown, AllServers: all, Params: Params{Percent: pct, Days: days, MinSeverity: minSev}}
		if err := r.Normalize(); err == nil && r.Cooldown() <= 0 {
			t.Fatal("accepted rule without a cooldown")
		}
	})
}

// benchSnapshot is a fleet of n servers with a mix of conditions.
func benchSnapshot(n int) ([]Rule, Snapshot) {
	now := time.Now().UTC()
	since := now.Add(-20 * 24 * time.Hour)
	groups := []string{"g0", "g1", "g2", "g3"}
	snap := Snapshot{Now: now, Servers: make([]ServerState, n)}
	for i := range n {
		var sums inventory.TrendSums
		for d := range 30 {
			sums.Add(float64(d), float64(40e9+(i%7)*int(1e8)*d))
		}
		root := inventory.ForecastFromSums(sums, int64(40e9+(i%7)*int(1e8)*29), 100e9)
		snap.Servers[i] = ServerState{ID: fmt.Sprintf("srv-%05d", i), Groups: []string{groups[i%4]}, Root: &root,
			Inputs: store.StatusInputs{FailedContacts: i % 5, LastJobStatus: []string{"success", "failed"}[i%9/8],
				Findings: map[string]int{"high": i % 3, "critical": i % 11 / 10},
				Facts:    &store.FactsRecord{RootUsedPercent: float64(i % 100), RebootRequired: i%13 == 0, SecurityUpdates: i % 4, SecuritySince: &since}}}
	}
	types := []string{TypeDiskCapacity, TypeStorageForecast, TypeSecurityCVE, TypeSecurityUpdatesOverdue, TypeServerUnreachable,
		TypeRebootRequired, TypeJobFailed, TypeDiskCapacity, TypeSecurityCVE, TypeStorageForecast}
	rules := make([]Rule, len(types))
	for i, typ := range types {
		rules[i] = Rule{ID: fmt.Sprintf("r%d", i), Name: fmt.Sprintf("rule %d", i), Type: typ, Enabled: true, AllServers: i%2 == 0, GroupIDs: []string{"g1", "g3"}}
		if err := rules[i].Normalize(); err != nil {
			panic(err)
		}
	}
	return rules, snap
}

// BenchmarkEvaluate10Rules10kServers is the budget of issue 17: 10 rules
// (two of them storage forecasts over 30 days of history) over 10,000
// servers ≤ 1 s.
func BenchmarkEvaluate10Rules10kServers(b *testing.B) {
	rules, snap := benchSnapshot(10000)
	b.ResetTimer()
	fired := 0
	for b.Loop() {
		fired = 0
		for _, f := range Evaluate(rules, snap) {
			fired += len(f)
		}
	}
	b.ReportMetric(float64(fired), "alerts")
}

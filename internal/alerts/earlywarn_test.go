package alerts_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/advisories"
	"github.com/lcmproject/lcm/internal/advisories/advisoriestest"
	"github.com/lcmproject/lcm/internal/alerts"
	"github.com/lcmproject/lcm/internal/facts"
	"github.com/lcmproject/lcm/internal/inventory"
	"github.com/lcmproject/lcm/internal/pkgmgr"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
)

// TestEarlyWarningRule: a poll that creates a finding (the real
// DSA-5724-1 against bookworm's pre-fix openssh) triggers an evaluation
// through the "early-warning findings created" event, the rule fires and
// its delivery reaches the receiver; acknowledging the finding resolves
// the alert.
func TestEarlyWarningRule(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			e := newEnv(t, db.URL, []time.Duration{10 * time.Millisecond})
			go func() { _ = e.svc.Run(ctx) }()
			r := newReceiver(t, "hmac-secret-early")
			ch := e.webhook(t, r, "sec-hook")
			rule := e.rule(t, alerts.TypeEarlyWarning, ch.ID)

			id := e.server(t, "bookworm-1")
			inv := inventory.New(e.st, inventory.Options{})
			if err := inv.Ingest(ctx, id, facts.Facts{OS: facts.OSRelease{ID: "debian", VersionID: "12"}}, pkgmgr.Inventory{Manager: "apt",
				Packages: []pkgmgr.Package{{Name: "openssh-server", Version: "1:9.2p1-2+deb12u2", Arch: "amd64", Source: "openssh", Manager: "apt"}}}); err != nil {
				t.Fatal(err)
			}
			src := advisoriestest.New(t)
			src.Publish(t, "Debian", "DSA-5724-1")
			adv := advisories.New(e.st, advisories.Options{MirrorDir: t.TempDir(), Lookback: 365 * 24 * time.Hour * 10,
				OnCreated: func(context.Context, []store.EarlyWarning) { e.svc.Trigger() }})
			on, u := true, src.URL()
			if _, err := adv.UpdateSettings(ctx, e.admin, advisories.SettingsInput{Enabled: &on, BaseURL: &u}); err != nil {
				t.Fatal(err)
			}
			sum, err := adv.Poll(ctx, true)
			if err != nil || sum.Findings != 1 {
				t.Fatalf("poll %+v %v", sum, err)
			}
			testutil.WaitFor(t, 10*time.Second, "the early-warning notification", func() bool { return len(r.payloads()) == 1 })
			p := r.payloads()[0]
			if p.Type != "alert.firing" || p.Rule.ID != rule.ID || p.Server == nil || p.Server.Name != "bookworm-1" ||
				!strings.Contains(p.Message, "DSA-5724-1 in openssh-server") {
				t.Fatalf("payload %+v", p)
			}
			testutil.WaitFor(t, 5*time.Second, "the delivery stored as sent", func() bool {
				return len(e.deliveries(t, store.AlertEventFilter{DeliveryStatus: store.DeliverySent})) == 1
			})
			list, _, err := adv.Findings(ctx, e.admin, store.EarlyWarningFilter{})
			if err != nil || len(list) != 1 {
				t.Fatalf("%+v %v", list, err)
			}
			if _, err := adv.Acknowledge(ctx, e.admin, list[0].ID); err != nil {
				t.Fatal(err)
			}
			if rep := e.evaluate(t); rep.Resolved != 1 {
				t.Fatalf("acknowledging did not resolve: %+v", rep)
			}
		})
	}
}

func TestEarlyWarningRuleParams(t *testing.T) {
	r := alerts.Rule{Name: "ew", Type: alerts.TypeEarlyWarning, AllServers: true, Params: alerts.Params{MinSeverity: "HIGH", Days: 3}}
	if err := r.Normalize(); err != nil || r.Params.MinSeverity != "high" || r.Params.Days != 0 {
		t.Fatalf("%+v %v", r, err)
	}
	r = alerts.Rule{Name: "ew", Type: alerts.TypeEarlyWarning, AllServers: true}
	if err := r.Normalize(); err != nil || r.Params.MinSeverity != "" {
		t.Fatalf("%+v %v", r, err)
	}
	r.Params.MinSeverity = "severe"
	if err := r.Normalize(); err == nil {
		t.Fatal("invalid minSeverity accepted")
	}
	snap := alerts.Snapshot{Now: time.Now(), Servers: []alerts.ServerState{{ID: "s1", EarlyWarnings: []store.EarlyWarning{{Advisory: "DSA-5724-1", Package: "openssh-server", Severity: "unknown"}}}}}
	rules := []alerts.Rule{{ID: "any", Type: alerts.TypeEarlyWarning, Enabled: true, AllServers: true},
		{ID: "high", Type: alerts.TypeEarlyWarning, Enabled: true, AllServers: true, Params: alerts.Params{MinSeverity: "high"}}}
	got := alerts.Evaluate(rules, snap)
	if len(got["any"]) != 1 || len(got["high"]) != 0 {
		t.Fatalf("%+v", got)
	}
}

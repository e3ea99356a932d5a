package alerts_test

import (
	"context"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/alerts"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/testutil"
)

// TestMaintenancePausesAlerts: a server in maintenance mode fires no alert
// and its open alert neither repeats nor resolves while it lasts; when
// maintenance ends, evaluation picks the server up again.
func TestMaintenancePausesAlerts(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			e := newEnv(t, db.URL, []time.Duration{10 * time.Millisecond})
			ctx := context.Background()
			busy := e.server(t, "web-1")
			quiet := e.server(t, "web-2")
			e.rule(t, alerts.TypeServerUnreachable)
			e.unreachable(t, busy, true)
			e.unreachable(t, quiet, true)
			if err := e.st.StartMaintenance(ctx, domain.Maintenance{ServerID: quiet, Reason: "disk swap", StartedBy: "admin", StartedAt: time.Now().UTC()}); err != nil {
				t.Fatal(err)
			}
			if rep := e.evaluate(t); rep.Fired != 1 || rep.Open != 1 || rep.Servers != 1 {
				t.Fatalf("with web-2 in maintenance: %+v", rep)
			}
			// web-1 goes into maintenance with its alert open and recovers
			// meanwhile: nothing resolves or repeats until maintenance ends.
			if err := e.st.StartMaintenance(ctx, domain.Maintenance{ServerID: busy, Reason: "reboot", StartedBy: "admin", StartedAt: time.Now().UTC()}); err != nil {
				t.Fatal(err)
			}
			e.unreachable(t, busy, false)
			e.clock.advance(alerts.DefaultCooldown)
			if rep := e.evaluate(t); rep.Fired+rep.Repeated+rep.Resolved != 0 || rep.Open != 1 {
				t.Fatalf("during maintenance: %+v", rep)
			}
			for _, id := range []string{busy, quiet} {
				if _, err := e.st.EndMaintenance(ctx, id); err != nil {
					t.Fatal(err)
				}
			}
			if rep := e.evaluate(t); rep.Resolved != 1 || rep.Fired != 1 || rep.Open != 1 {
				t.Fatalf("after maintenance: %+v", rep)
			}
		})
	}
}

package alerts_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/alerts"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil/storetest"
)

// BenchmarkEvaluateStore10Rules10kServers is the whole evaluation the
// leader runs (load the snapshot from SQLite, evaluate 10 rules, reconcile
// with the open alerts) over 10,000 servers, in the steady state: the
// first evaluation, which opened the alerts, is outside the timer and
// reported by b.Logf.
//
//	go test ./internal/alerts -run '^$' -bench EvaluateStore -benchtime 3x
func BenchmarkEvaluateStore10Rules10kServers(b *testing.B) {
	ctx := context.Background()
	st := storetest.Open(b, "")
	const n = 10000
	start := time.Now()
	g, err := st.CreateGroup(ctx, domain.Group{Name: "half"})
	if err != nil {
		b.Fatal(err)
	}
	var contacts []store.Contact
	for lo := 0; lo < n; lo += 1000 {
		err := st.InTx(ctx, func(tx *store.Store) error {
			for i := lo; i < min(lo+1000, n); i++ {
				var groups []string
				if i%2 == 0 {
					groups = []string{g.ID}
				}
				srv, err := tx.CreateServer(ctx, store.NewServer{Server: domain.Server{Name: fmt.Sprintf("srv-%05d", i), Host: "10.0.0.1", Port: 22,
					Transport: domain.TransportSSH, Status: domain.ServerUnknown, AuthMethod: domain.AuthKey, HostKey: "k", Joined: true, GroupIDs: groups}})
				if err != nil {
					return err
				}
				if i%50 == 0 {
					contacts = append(contacts, store.Contact{ServerID: srv.ID, Reason: "timeout"})
				}
				if i%40 == 0 {
					if err := tx.SetFindings(ctx, srv.ID, []store.Finding{{CVE: "CVE-2026-1", Package: "p", Severity: "critical"}}); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	for range 2 {
		if err := st.RecordContacts(ctx, contacts, time.Now()); err != nil {
			b.Fatal(err)
		}
	}
	svc := alerts.New(st, alerts.Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	b.Cleanup(svc.Close)
	admin := &domain.Principal{UserID: "a", Roles: []string{domain.RoleAdmin}}
	types := []string{alerts.TypeDiskCapacity, alerts.TypeStorageForecast, alerts.TypeSecurityCVE, alerts.TypeSecurityUpdatesOverdue,
		alerts.TypeServerUnreachable, alerts.TypeRebootRequired, alerts.TypeJobFailed, alerts.TypeSecurityCVE, alerts.TypeServerUnreachable, alerts.TypeDiskCapacity}
	for i, typ := range types {
		in := alerts.RuleInput{Name: ptr(fmt.Sprintf("rule-%d", i)), Type: ptr(typ), AllServers: ptr(i%2 == 0)}
		if i%2 == 1 {
			in.GroupIDs = &[]string{g.ID}
		}
		if _, err := svc.CreateRule(ctx, admin, in); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("seeded %d servers in %s", n, time.Since(start).Round(time.Millisecond))
	t0 := time.Now()
	first, err := svc.Evaluate(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("first evaluation (opens %d alerts): %s", first.Fired, time.Since(t0).Round(time.Millisecond))
	b.ResetTimer()
	for b.Loop() {
		rep, err := svc.Evaluate(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if rep.Open != first.Fired || rep.Fired != 0 {
			b.Fatalf("steady state changed: %+v", rep)
		}
	}
}

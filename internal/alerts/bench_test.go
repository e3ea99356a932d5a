package alerts_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/alerts"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/notify"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/storetest"
)

// benchFleet seeds n servers as a refreshed fleet: facts (root usage
// spread over 0–99 %, security updates pending for 20 days on a quarter,
// a reboot flag on every 13th), 30 days of root-filesystem history (a
// growing trend on some, so the forecast rules have real work and some
// fire), failed contacts, critical findings; half the servers in a group.
func benchFleet(b *testing.B, st *store.Store, n int) string {
	b.Helper()
	ctx := context.Background()
	start := time.Now()
	g, err := st.CreateGroup(ctx, domain.Group{Name: "half"})
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now().UTC()
	since := now.Add(-20 * 24 * time.Hour)
	var contacts []store.Contact
	ids := make([]string, 0, n)
	const batch = 500
	for lo := 0; lo < n; lo += batch {
		var ins []store.InventoryIngest
		err := st.InTx(ctx, func(tx *store.Store) error {
			for i := lo; i < min(lo+batch, n); i++ {
				var groups []string
				if i%2 == 0 {
					groups = []string{g.ID}
				}
				srv, err := tx.CreateServer(ctx, store.NewServer{Server: domain.Server{Name: fmt.Sprintf("srv-%05d", i), Host: "10.0.0.1", Port: 22,
					Transport: domain.TransportSSH, Status: domain.ServerUnknown, AuthMethod: domain.AuthKey, HostKey: "k", Joined: true, GroupIDs: groups}})
				if err != nil {
					return err
				}
				ids = append(ids, srv.ID)
				if i%50 == 0 {
					contacts = append(contacts, store.Contact{ServerID: srv.ID, Reason: "timeout"})
				}
				if i%40 == 0 {
					if err := tx.SetFindings(ctx, srv.ID, []store.Finding{{CVE: "CVE-2026-1", Package: "p", Severity: "critical"}}); err != nil {
						return err
					}
				}
				days := make([]store.StorageDay, 30)
				for d := range days {
					days[d] = store.StorageDay{Day: now.AddDate(0, 0, d-29).Format("2006-01-02"), AvgUsed: int64(40e9 + (i%7)*int(1e8)*d),
						MaxUsed: int64(41e9 + (i%7)*int(1e8)*d), TotalBytes: 100e9, Samples: 24}
				}
				if err := tx.ReplaceStorageDaily(ctx, srv.ID, "/", days); err != nil {
					return err
				}
				f := store.FactsRecord{ServerID: srv.ID, FactsJSON: []byte(`{}`), PackageManager: "apt", Packages: 400, Updates: i % 9,
					RebootRequired: i%13 == 0, RootUsedPercent: float64(i % 100), CollectedAt: now}
				if i%4 == 0 {
					f.SecurityUpdates, f.SecuritySince = 3, &since
				}
				ins = append(ins, store.InventoryIngest{Facts: f})
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range st.IngestInventories(ctx, ins) {
			if r.Err != nil {
				b.Fatal(r.Err)
			}
		}
	}
	for range 2 {
		if err := st.RecordContacts(ctx, contacts, now); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("seeded %d servers with facts and 30 days of storage history in %s", n, time.Since(start).Round(time.Millisecond))
	return g.ID
}

// benchEvaluateStore is the whole evaluation the leader runs — load the
// snapshot from the store (status inputs, groups, maintenance, 30 days of
// storage history for the forecast rules), evaluate 10 rules, reconcile
// with the open alerts, record the transitions with their deliveries —
// over 10,000 servers. Three figures: the first evaluation, which opens
// every alert (with a delivery each to a webhook channel); the steady
// state (nothing changes; the benchmark's timed loop); the repeat wave one
// cooldown later, when every open alert repeats. Budget: 10 rules over
// 10,000 servers ≤ 1 s.
//
//	go test ./internal/alerts -run '^$' -bench EvaluateStore -benchtime 3x -timeout 30m
func benchEvaluateStore(b *testing.B, dbURL string) {
	ctx := context.Background()
	n := 10000
	if v, err := strconv.Atoi(os.Getenv("LCM_BENCH_SERVERS")); err == nil && v > 0 {
		n = v
	}
	st := storetest.Open(b, dbURL)
	group := benchFleet(b, st, n)
	// A real HTTPS receiver for the deliveries (they run beside the
	// evaluations, as in production).
	ca := testutil.NewTestCA(b)
	recv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) }))
	recv.TLS = &tls.Config{Certificates: []tls.Certificate{ca.ServerCert(b, "127.0.0.1")}}
	recv.StartTLS()
	defer recv.Close()
	var mu sync.Mutex
	off := time.Duration(0)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return time.Now().UTC().Add(off) }
	svc := alerts.New(st, alerts.Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: now})
	b.Cleanup(svc.Close)
	admin := &domain.Principal{UserID: "a", Roles: []string{domain.RoleAdmin}}
	ch, err := svc.CreateChannel(ctx, alerts.ChannelInput{Name: ptr("bench hook"), Type: ptr(notify.TypeWebhook),
		URL: ptr(recv.URL + "/hook"), CAPEM: &ca.CertPEM, SigningSecret: ptr("bench-signing-key")})
	if err != nil {
		b.Fatal(err)
	}
	types := []string{alerts.TypeDiskCapacity, alerts.TypeStorageForecast, alerts.TypeSecurityCVE, alerts.TypeSecurityUpdatesOverdue,
		alerts.TypeServerUnreachable, alerts.TypeRebootRequired, alerts.TypeJobFailed, alerts.TypeSecurityCVE, alerts.TypeStorageForecast, alerts.TypeDiskCapacity}
	var ruleIDs []string
	makeRules := func() {
		ruleIDs = ruleIDs[:0]
		for i, typ := range types {
			in := alerts.RuleInput{Name: ptr(fmt.Sprintf("rule-%d-%d", i, time.Now().UnixNano())), Type: ptr(typ), AllServers: ptr(i%2 == 0), ChannelIDs: &[]string{ch.ID}}
			if i%2 == 1 {
				in.GroupIDs = &[]string{group}
			}
			r, err := svc.CreateRule(ctx, admin, in)
			if err != nil {
				b.Fatal(err)
			}
			ruleIDs = append(ruleIDs, r.ID)
		}
	}
	makeRules()
	t0, c0 := time.Now(), cpuTime()
	first, err := svc.Evaluate(ctx)
	if err != nil {
		b.Fatal(err)
	}
	firstS, firstCPU := time.Since(t0).Seconds(), (cpuTime() - c0).Seconds()
	b.Logf("first evaluation over %d servers (opens %d alerts, %d deliveries): %.2f s (process CPU %.2f s)", first.Servers, first.Fired, first.Fired, firstS, firstCPU)
	waitDelivered(b, svc, admin) // the steady state is measured without deliveries running beside it
	b.ResetTimer()
	c0 = cpuTime()
	for b.Loop() {
		rep, err := svc.Evaluate(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if rep.Open != first.Fired || rep.Fired != 0 {
			b.Fatalf("steady state changed: %+v", rep)
		}
	}
	b.StopTimer()
	b.ReportMetric((cpuTime()-c0).Seconds()/float64(b.N), "cpu-s/op")
	rules, err := svc.ListRules(ctx, admin)
	if err != nil {
		b.Fatal(err)
	}
	t0 = time.Now()
	if _, _, err := svc.Snapshot(ctx, rules); err != nil {
		b.Fatal(err)
	}
	b.Logf("of which loading the snapshot (status inputs, groups, maintenance, storage history): %.2f s", time.Since(t0).Seconds())
	mu.Lock()
	off = alerts.DefaultCooldown + time.Minute
	mu.Unlock()
	t0, c0 = time.Now(), cpuTime()
	wave, err := svc.Evaluate(ctx)
	if err != nil {
		b.Fatal(err)
	}
	waveS, waveCPU := time.Since(t0).Seconds(), (cpuTime() - c0).Seconds()
	if wave.Repeated != first.Fired {
		b.Fatalf("repeat wave: %+v", wave)
	}
	b.Logf("repeat wave (%d alerts repeat after the cooldown): %.2f s (process CPU %.2f s)", wave.Repeated, waveS, waveCPU)
	// An operator replaces the rules on the running service: the first
	// evaluation of the new rules opens every alert again, this time with
	// the storage trends kept from the evaluations before (the daily
	// aggregates did not change).
	waitDelivered(b, svc, admin)
	for _, id := range ruleIDs {
		if _, err := svc.DeleteRule(ctx, admin, id); err != nil {
			b.Fatal(err)
		}
	}
	makeRules()
	t0, c0 = time.Now(), cpuTime()
	again, err := svc.Evaluate(ctx)
	if err != nil {
		b.Fatal(err)
	}
	warmS, warmCPU := time.Since(t0).Seconds(), (cpuTime() - c0).Seconds()
	if again.Fired != first.Fired {
		b.Fatalf("new rules: %+v", again)
	}
	b.Logf("first evaluation of new rules in a running service (opens %d alerts): %.2f s (process CPU %.2f s)", again.Fired, warmS, warmCPU)
	b.ReportMetric(warmS, "first-warm-s")
	b.ReportMetric(warmCPU, "first-warm-cpu-s")
	b.ReportMetric(firstS, "first-s")
	b.ReportMetric(firstCPU, "first-cpu-s")
	b.ReportMetric(waveS, "repeat-wave-s")
	b.ReportMetric(waveCPU, "repeat-wave-cpu-s")
	b.ReportMetric(float64(first.Fired), "alerts")
}

// cpuTime is the process's CPU time so far (user and system): the machine
// is shared, so wall times carry other processes' load; the CPU time says
// what an evaluation costs here (the PostgreSQL server's share is not in
// it).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// waitDelivered waits until no delivery is pending.
func waitDelivered(b *testing.B, svc *alerts.Service, admin *domain.Principal) {
	b.Helper()
	deadline := time.Now().Add(10 * time.Minute)
	for time.Now().Before(deadline) {
		evs, err := svc.Events(context.Background(), admin, store.AlertEventFilter{DeliveryStatus: store.DeliveryPending, Limit: 1})
		if err != nil {
			b.Fatal(err)
		}
		if len(evs) == 0 {
			return
		}
		time.Sleep(200 * time.Millisecond) // polling the queue, not waiting for time to pass
	}
	b.Fatal("deliveries still pending after 10 minutes")
}

func BenchmarkEvaluateStore10Rules10kServersSQLite(b *testing.B) { benchEvaluateStore(b, "") }

func BenchmarkEvaluateStore10Rules10kServersPostgres(b *testing.B) {
	benchEvaluateStore(b, testutil.PostgresURL(b))
}

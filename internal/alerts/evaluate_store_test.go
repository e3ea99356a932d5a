package alerts_test

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/alerts"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/inventory"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/storetest"
)

// TestRootStorageTrendsMatchForecast: the sums the database computes for
// the storage_forecast rule give exactly the forecast the storage history
// shows (inventory.ForecastOf) for the same days — gaps, a fall, the last
// day's values — on SQLite and PostgreSQL.
func TestRootStorageTrendsMatchForecast(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			ctx := context.Background()
			st := storetest.Open(t, db.URL)
			today := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
			since := today.AddDate(0, 0, 1-inventory.ForecastWindow).Format("2006-01-02")
			series := map[string]func(d int) (int64, bool){
				"rising":   func(d int) (int64, bool) { return 40e9 + int64(d)*7e8, true },
				"gaps":     func(d int) (int64, bool) { return 70e9 + int64(d*d)*1e7, d%3 != 1 },
				"falling":  func(d int) (int64, bool) { return 90e9 - int64(d)*1e8, true },
				"two days": func(d int) (int64, bool) { return 50e9, d >= 38 },
				"big disk": func(d int) (int64, bool) { return 9_000_000e6 + int64(d)*123_456_789, true },
			}
			ids := map[string]string{}
			want := map[string]inventory.Forecast{}
			for name, used := range series {
				srv, err := st.CreateServer(ctx, store.NewServer{Server: domain.Server{Name: name, Host: "192.0.2.1", Port: 22,
					Transport: domain.TransportSSH, Status: domain.ServerUnknown, AuthMethod: domain.AuthKey, HostKey: "k", Joined: true}})
				if err != nil {
					t.Fatal(err)
				}
				ids[name] = srv.ID
				total := int64(100e9)
				if name == "big disk" {
					total = 10_000_000e6
				}
				var days []store.StorageDay
				var window []inventory.StorageDay
				for d := range 40 { // 40 days: the window takes the last 30
					u, ok := used(d)
					if !ok {
						continue
					}
					day := today.AddDate(0, 0, d-39).Format("2006-01-02")
					days = append(days, store.StorageDay{Day: day, AvgUsed: u, MaxUsed: u, TotalBytes: total, Samples: 24})
					if day >= since {
						window = append(window, inventory.StorageDay{Day: day, UsedBytes: u, TotalBytes: total})
					}
				}
				if err := st.ReplaceStorageDaily(ctx, srv.ID, "/", days); err != nil {
					t.Fatal(err)
				}
				want[name] = inventory.ForecastOf(window)
			}
			list := make([]string, 0, len(ids))
			for _, id := range ids {
				list = append(list, id)
			}
			trends, err := st.RootStorageTrends(ctx, list, since)
			if err != nil {
				t.Fatal(err)
			}
			for name, id := range ids {
				tr, ok := trends[id]
				if !ok {
					t.Fatalf("%s: no trend", name)
				}
				got := inventory.ForecastFromSums(inventory.TrendSums{N: tr.N, SX: tr.SX, SY: tr.SY, SXY: tr.SXY, SXX: tr.SXX}, tr.LastUsed, tr.LastTotal)
				w := want[name]
				if got.Points != w.Points || got.SlopeBytesPerDay != w.SlopeBytesPerDay || (got.DaysUntilFull == nil) != (w.DaysUntilFull == nil) ||
					(got.DaysUntilFull != nil && *got.DaysUntilFull != *w.DaysUntilFull) {
					t.Errorf("%s: from the database %+v (full %v), from the history %+v (full %v)", name, got, deref(got.DaysUntilFull), w, deref(w.DaysUntilFull))
				}
			}
		})
	}
}

func deref(f *float64) any {
	if f == nil {
		return nil
	}
	return *f
}

// TestForecastRuleFollowsNewHistory: the evaluation keeps the storage
// trends between runs while the daily aggregates are unchanged, and a
// write of them (the daily aggregation, a direct replace) is seen by the
// next evaluation — also by another replica's service on the same
// database.
func TestForecastRuleFollowsNewHistory(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			e := newEnv(t, db.URL, nil)
			ctx := context.Background()
			id := e.server(t, "filling")
			e.rule(t, alerts.TypeStorageForecast)
			history := func(perDay int64) {
				t.Helper()
				now := e.clock.now()
				var days []store.StorageDay
				for d := 1; d <= 20; d++ {
					u := 50e9 + int64(d)*perDay
					days = append(days, store.StorageDay{Day: now.AddDate(0, 0, d-21).Format("2006-01-02"), AvgUsed: u, MaxUsed: u, TotalBytes: 100e9, Samples: 24})
				}
				if err := e.st.ReplaceStorageDaily(ctx, id, "/", days); err != nil {
					t.Fatal(err)
				}
			}
			history(0)
			if rep := e.evaluate(t); rep.Fired != 0 {
				t.Fatalf("flat history fired: %+v", rep)
			}
			if rep := e.evaluate(t); rep.Fired != 0 { // from the kept trends
				t.Fatalf("second evaluation fired: %+v", rep)
			}
			history(3e9) // full in about a week
			if rep := e.evaluate(t); rep.Fired != 1 {
				t.Fatalf("rising history did not fire: %+v", rep)
			}
			// Another replica's service (its own trend cache) sees the next
			// change too: the generation lives in the database.
			other := alerts.New(e.st, alerts.Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
			t.Cleanup(other.Close)
			if _, err := other.Evaluate(ctx); err != nil { // fills its cache
				t.Fatal(err)
			}
			history(0)
			if rep, err := other.Evaluate(ctx); err != nil || rep.Resolved != 1 {
				t.Fatalf("the other replica after a flat history: %+v %v", rep, err)
			}
		})
	}
}

// TestReplicasNotifyOnce: two replicas' services evaluate the same fleet
// at the same moment, three times — alerts open, repeat after the
// cooldown, resolve — and every alert has exactly one event of each kind
// (the transitions are conditional writes in batches). SQLite and
// PostgreSQL.
func TestReplicasNotifyOnce(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			e := newEnv(t, db.URL, nil)
			ctx := context.Background()
			var ids []string
			for i := range 40 {
				id := e.server(t, "twin-"+strconv.Itoa(i))
				e.unreachable(t, id, true)
				ids = append(ids, id)
			}
			e.rule(t, alerts.TypeServerUnreachable)
			other := alerts.New(e.st, alerts.Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: e.clock.now})
			t.Cleanup(other.Close)
			both := func() (alerts.Report, alerts.Report) {
				t.Helper()
				var wg sync.WaitGroup
				var r1, r2 alerts.Report
				var err1, err2 error
				wg.Add(2)
				go func() { defer wg.Done(); r1, err1 = e.svc.Evaluate(ctx) }()
				go func() { defer wg.Done(); r2, err2 = other.Evaluate(ctx) }()
				wg.Wait()
				if err1 != nil || err2 != nil {
					t.Fatalf("evaluations: %v, %v", err1, err2)
				}
				return r1, r2
			}
			count := func(kind string) int {
				t.Helper()
				evs, err := e.svc.Events(ctx, e.admin, store.AlertEventFilter{Kind: kind, Limit: 500})
				if err != nil {
					t.Fatal(err)
				}
				seen := map[string]int{}
				for _, ev := range evs {
					seen[ev.Subject]++
				}
				for _, id := range ids {
					if seen[id] != 1 {
						t.Fatalf("%s events of %s: %d, want 1", kind, id, seen[id])
					}
				}
				return len(evs)
			}
			if a, b := both(); a.Fired+b.Fired != len(ids) {
				t.Fatalf("fired %d + %d, want %d together", a.Fired, b.Fired, len(ids))
			}
			count(store.AlertFiring)
			e.clock.advance(alerts.DefaultCooldown + time.Minute)
			if a, b := both(); a.Repeated+b.Repeated != len(ids) {
				t.Fatalf("repeated %d + %d, want %d together", a.Repeated, b.Repeated, len(ids))
			}
			count(store.AlertRepeat)
			for _, id := range ids {
				e.unreachable(t, id, false)
			}
			if a, b := both(); a.Resolved+b.Resolved != len(ids) {
				t.Fatalf("resolved %d + %d, want %d together", a.Resolved, b.Resolved, len(ids))
			}
			count(store.AlertResolved)
			evs, err := e.svc.Events(ctx, e.admin, store.AlertEventFilter{Kind: store.AlertResolved, Limit: 1})
			if err != nil || len(evs) != 1 || !strings.HasPrefix(evs[0].Message, "Resolved: The server is unreachable") {
				t.Fatalf("resolved message: %+v %v", evs, err)
			}
		})
	}
}

package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lcmproject/lcm/internal/auth"
	"github.com/lcmproject/lcm/internal/bus"
	_ "github.com/lcmproject/lcm/internal/bus/natsembed" // the rate-limit KV in an embedded NATS, as all-in-one
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/status"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/storetest"
)

// seedFleet creates n servers with a status and facts (names and hosts
// encrypted, blind index computed, exactly as in production).
func seedFleet(b *testing.B, st *store.Store, n int) []string {
	b.Helper()
	ctx := context.Background()
	insights, _ := json.Marshal([]status.Insight{{Level: "warn", Code: "security_updates", Text: "12 security updates available"}})
	start := time.Now()
	const batch = 1000
	ids := make([]string, 0, n)
	for lo := 0; lo < n; lo += batch {
		err := st.InTx(ctx, func(tx *store.Store) error {
			for i := lo; i < min(lo+batch, n); i++ {
				srv, err := tx.CreateServer(ctx, store.NewServer{Server: domain.Server{
					Name: fmt.Sprintf("srv-%05d.example.test", i), Host: fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255), Port: 22,
					Transport: domain.TransportSSH, Status: domain.ServerYellow, AuthMethod: domain.AuthKey, Joined: true,
					HostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBench", HostKeyFingerprint: "SHA256:bench", PackageFamily: "apt"},
					Secrets: store.ServerSecrets{Username: domain.ManagementUser, PrivateKey: "bench-key"}})
				if err != nil {
					return err
				}
				ids = append(ids, srv.ID)
				if err := tx.SaveStatus(ctx, store.StatusRecord{ServerID: srv.ID, Status: string(domain.ServerYellow),
					InsightsJSON: insights, ComputedAt: time.Now().UTC()}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("created %d servers in %s", n, time.Since(start).Round(time.Millisecond))
	return ids
}

func pct(d []time.Duration, p float64) float64 {
	s := slices.Clone(d)
	slices.Sort(s)
	return float64(s[min(len(s)-1, int(float64(len(s))*p))].Microseconds()) / 1000
}

// realAuth builds the identity service exactly as lcm-api wires it for
// the MCP listener: API keys by hash in the store, the user with roles
// and permissions (LoadAuthUser), the per-key rate limit as a
// compare-and-swap in NATS KV (bus.BucketRateLimit), the allowlist from
// the security settings. It returns the service, an admin's and a
// manager's mcp key, and the ids the manager may see.
func realAuth(tb testing.TB, st *store.Store, dir string, servers []string, managed int) (*auth.Service, string, string, map[string]bool) {
	tb.Helper()
	ctx := context.Background()
	b, err := bus.Open(ctx, bus.Options{DataDir: dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = b.Close() })
	rate, err := b.NewCAS(ctx, bus.BucketRateLimit)
	if err != nil {
		tb.Fatal(err)
	}
	lock, err := b.NewCAS(ctx, bus.BucketLockout)
	if err != nil {
		tb.Fatal(err)
	}
	svc := auth.New(auth.Options{Store: st, RateLimit: rate, Lockout: lock, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	// A limit the benchmark never reaches: the compare-and-swap still runs
	// on every request, as with the default of 120.
	if err := svc.SeedSettings(ctx, auth.SecuritySettings{APIKeyRateLimitPerMinute: 1_000_000, AllowedIPs: []string{"localhost"}}); err != nil {
		tb.Fatal(err)
	}
	if _, err := st.SeedIdentity(ctx, func() (string, error) { return "$argon2id$unused", nil }); err != nil {
		tb.Fatal(err)
	}
	key := func(username, role string) (string, string) {
		u, err := st.CreateUser(ctx, store.NewUser{Username: username, Active: true, Roles: []string{role}})
		if err != nil {
			tb.Fatal(err)
		}
		k, err := svc.CreateAPIKey(ctx, &domain.Principal{UserID: u.ID, Username: username}, auth.NewAPIKey{Name: "bench", Scope: domain.ScopeMCP})
		if err != nil {
			tb.Fatal(err)
		}
		return u.ID, k.Plaintext
	}
	_, adminKey := key("bench-admin", domain.RoleAdmin)
	mgrID, mgrKey := key("bench-manager", domain.RoleManager)
	g, err := st.CreateGroup(ctx, domain.Group{Name: "bench-managed"})
	if err != nil {
		tb.Fatal(err)
	}
	mine := map[string]bool{}
	if err := st.InTx(ctx, func(tx *store.Store) error {
		for _, id := range servers[:min(managed, len(servers))] {
			if err := tx.AddGroupServer(ctx, g.ID, id); err != nil {
				return err
			}
			mine[id] = true
		}
		return nil
	}); err != nil {
		tb.Fatal(err)
	}
	if err := st.AddGroupManager(ctx, g.ID, mgrID); err != nil {
		tb.Fatal(err)
	}
	return svc, adminKey, mgrKey, mine
}

// benchMCP: list_servers (first page) and fleet_summary over 10,000
// servers through the official Go SDK client over loopback HTTP and the
// real per-request path: allowlist, API-key rate limit (NATS KV
// compare-and-swap), mcp-key check (hash lookup, user with roles and
// permissions), visibility (a manager's VisibleGroups query), the
// cached views. 300 calls per tool and key. Budgets: list_servers p99 ≤
// 50 ms, fleet_summary p99 ≤ 20 ms.
//
//	go test ./internal/mcp -run '^$' -bench MCP10000 -benchtime 1x -timeout 20m
func benchMCP(b *testing.B, dbURL string) {
	n := 10000
	if v, err := strconv.Atoi(os.Getenv("LCM_BENCH_SERVERS")); err == nil && v > 0 {
		n = v
	}
	dir := b.TempDir()
	st := storetest.OpenIn(b, dbURL, dir)
	ids := seedFleet(b, st, n)
	authSvc, adminKey, mgrKey, mine := realAuth(b, st, dir, ids, 1000)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ts := httptest.NewServer(NewHandler(NewService(st), authSvc, log))
	defer ts.Close()
	connect := func(key string) *sdk.ClientSession {
		c := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil)
		cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: ts.URL + Path,
			HTTPClient: &http.Client{Transport: bearerRT{key}}}, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cs.Close() })
		return cs
	}
	call := func(cs *sdk.ClientSession, name string, args map[string]any) (time.Duration, *sdk.CallToolResult) {
		t0 := time.Now()
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
		d := time.Since(t0)
		if err != nil || res.IsError {
			b.Fatalf("%s: %v %+v", name, err, res)
		}
		return d, res
	}
	metrics := map[string]float64{}
	admin, mgr := connect(adminKey), connect(mgrKey)
	cold, _ := call(admin, "list_servers", map[string]any{"limit": 50}) // builds the cache once
	b.Logf("first call (cold cache, %d servers): %.1f ms", n, float64(cold.Microseconds())/1000)
	metrics["cold-list_servers-ms"] = float64(cold.Microseconds()) / 1000
	for _, tc := range []struct {
		who  string
		cs   *sdk.ClientSession
		name string
		args map[string]any
	}{
		{"admin", admin, "list_servers", map[string]any{"limit": 50}},
		{"admin", admin, "fleet_summary", nil},
		{"manager", mgr, "list_servers", map[string]any{"limit": 50}},
		{"manager", mgr, "fleet_summary", nil},
	} {
		_, res := call(tc.cs, tc.name, tc.args)
		if tc.who == "manager" { // the scoping holds under the benchmark too
			raw, _ := json.Marshal(res.StructuredContent)
			var out struct{ Total int }
			_ = json.Unmarshal(raw, &out)
			if out.Total != len(mine) {
				b.Fatalf("manager's %s total %d, want %d", tc.name, out.Total, len(mine))
			}
		}
		lat := make([]time.Duration, 0, 300)
		b.ResetTimer()
		c0 := cpuTime()
		for i := 0; i < cap(lat); i++ {
			d, _ := call(tc.cs, tc.name, tc.args)
			lat = append(lat, d)
		}
		cpu := float64((cpuTime() - c0).Microseconds()) / 1000 / float64(len(lat))
		b.StopTimer()
		b.Logf("%s %s over %d servers (%d visible to the manager): p50 %.2f ms, p99 %.2f ms, process CPU %.2f ms a call (client and server)",
			tc.who, tc.name, n, len(mine), pct(lat, 0.5), pct(lat, 0.99), cpu)
		metrics[tc.who+"-"+tc.name+"-p50-ms"], metrics[tc.who+"-"+tc.name+"-p99-ms"] = pct(lat, 0.5), pct(lat, 0.99)
		metrics[tc.who+"-"+tc.name+"-cpu-ms"] = cpu
	}
	for k, v := range metrics {
		b.ReportMetric(v, k)
	}
}

// cpuTime is the process's CPU time (user and system) so far: on the
// shared machine the wall times carry other processes' load.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type bearerRT struct{ key string }

func (r bearerRT) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+r.key)
	return http.DefaultTransport.RoundTrip(req)
}

func BenchmarkMCP10000SQLite(b *testing.B) { benchMCP(b, "") }

func BenchmarkMCP10000Postgres(b *testing.B) { benchMCP(b, testutil.PostgresURL(b)) }

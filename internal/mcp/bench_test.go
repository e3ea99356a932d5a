package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/status"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/storetest"
)

// adminAuth admits one key as an admin. The benchmark measures the MCP
// path (transport, SDK, service, cache, encoding); the key check itself is
// one indexed lookup, measured with the REST listing's benchmark.
type adminAuth struct{}

func (adminAuth) AuthenticateMCP(context.Context, string) (*domain.Principal, error) {
	return &domain.Principal{UserID: "admin", Roles: []string{domain.RoleAdmin}}, nil
}
func (adminAuth) AllowAPIKey(context.Context, string) (bool, time.Duration, error) {
	return true, 0, nil
}
func (adminAuth) ClientAddr(context.Context, string, []string) netip.Addr {
	return netip.MustParseAddr("127.0.0.1")
}
func (adminAuth) Allowed(context.Context, netip.Addr) bool { return true }

// seedFleet creates n servers with a status and facts (names and hosts
// encrypted, blind index computed, exactly as in production).
func seedFleet(b *testing.B, st *store.Store, n int) {
	b.Helper()
	ctx := context.Background()
	insights, _ := json.Marshal([]status.Insight{{Level: "warn", Code: "security_updates", Text: "12 security updates available"}})
	start := time.Now()
	const batch = 1000
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
}

func pct(d []time.Duration, p float64) float64 {
	s := slices.Clone(d)
	slices.Sort(s)
	return float64(s[min(len(s)-1, int(float64(len(s))*p))].Microseconds()) / 1000
}

// benchMCP: list_servers (first page) and fleet_summary over 10,000
// servers through the official Go SDK client over loopback HTTP, 300 calls
// each. Budgets: list_servers p99 ≤ 50 ms, fleet_summary p99 ≤ 20 ms.
//
//	go test ./internal/mcp -run '^$' -bench MCP10000 -benchtime 1x -timeout 20m
func benchMCP(b *testing.B, dbURL string) {
	n := 10000
	if v, err := strconv.Atoi(os.Getenv("LCM_BENCH_SERVERS")); err == nil && v > 0 {
		n = v
	}
	st := storetest.Open(b, dbURL)
	seedFleet(b, st, n)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ts := httptest.NewServer(NewHandler(NewService(st), adminAuth{}, log))
	defer ts.Close()
	c := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: ts.URL + Path,
		HTTPClient: &http.Client{Transport: bearerRT{}}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	call := func(name string, args map[string]any) time.Duration {
		t0 := time.Now()
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
		d := time.Since(t0)
		if err != nil || res.IsError {
			b.Fatalf("%s: %v %+v", name, err, res)
		}
		return d
	}
	metrics := map[string]float64{}
	for _, tc := range []struct {
		name string
		args map[string]any
	}{{"list_servers", map[string]any{"limit": 50}}, {"fleet_summary", nil}} {
		call(tc.name, tc.args) // warm: builds the cache once
		lat := make([]time.Duration, 0, 300)
		b.ResetTimer()
		for i := 0; i < cap(lat); i++ {
			lat = append(lat, call(tc.name, tc.args))
		}
		b.StopTimer()
		b.Logf("%s over %d servers: p50 %.2f ms, p99 %.2f ms", tc.name, n, pct(lat, 0.5), pct(lat, 0.99))
		metrics[tc.name+"-p50-ms"], metrics[tc.name+"-p99-ms"] = pct(lat, 0.5), pct(lat, 0.99)
	}
	for k, v := range metrics {
		b.ReportMetric(v, k)
	}
}

type bearerRT struct{}

func (bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer lcm_bench")
	return http.DefaultTransport.RoundTrip(r)
}

func BenchmarkMCP10000SQLite(b *testing.B) { benchMCP(b, "") }

func BenchmarkMCP10000Postgres(b *testing.B) { benchMCP(b, testutil.PostgresURL(b)) }

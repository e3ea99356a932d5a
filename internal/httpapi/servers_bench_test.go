package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/fleet"
	"github.com/lcmproject/lcm/internal/jobs"
	"github.com/lcmproject/lcm/internal/status"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
)

// serverListHarness is the identity harness (real store, real sign-in)
// with the fleet and status services wired, n servers with a stored status
// and insights, and a manager whose one group holds the first mine of them.
// It returns the admin's and the manager's bearer tokens.
func serverListHarness(b *testing.B, dbURL string, n, mine int) (h *harness, admin, mgr string) {
	b.Helper()
	ctx := context.Background()
	h = newHarness(b, harnessOpts{no2FA: true, dbURL: dbURL})
	js := jobs.New(h.st, h.bus, quietLog) // not run: List needs no jobs loop
	h.srv = New(Deps{Store: h.st, Bus: h.bus, Dev: true, Log: quietLog,
		ClientAddr: func(r *http.Request) netip.Addr {
			return h.svc.ClientAddr(r.Context(), r.RemoteAddr, r.Header.Values("X-Forwarded-For"))
		},
		Allowed:  func(ip netip.Addr) bool { return h.svc.Allowed(context.Background(), ip) },
		Services: Services{Auth: h.svc, Fleet: fleet.New(h.st, js, quietLog), Jobs: js, Status: status.New(h.st, quietLog)}})
	admin = h.login("admin", adminPW)
	mgrID := h.createUser(admin, "listmgr", adminPW, domain.RoleManager)
	mgr = h.login("listmgr", adminPW)
	g, err := h.st.CreateGroup(ctx, domain.Group{Name: "list-group"})
	if err != nil {
		b.Fatal(err)
	}
	if err := h.st.AddGroupManager(ctx, g.ID, mgrID); err != nil {
		b.Fatal(err)
	}
	insights, _ := json.Marshal([]status.Insight{{Level: "warn", Code: "security_updates", Text: "12 security updates available"}})
	start := time.Now()
	// One transaction around the store's own CreateServer (names and hosts
	// encrypted, blind index computed exactly as in production).
	const batch = 1000
	for lo := 0; lo < n; lo += batch {
		err := h.st.InTx(ctx, func(tx *store.Store) error {
			for i := lo; i < min(lo+batch, n); i++ {
				var groups []string
				if i < mine {
					groups = []string{g.ID}
				}
				srv, err := tx.CreateServer(ctx, store.NewServer{Server: domain.Server{
					Name: fmt.Sprintf("srv-%05d.example.test", i), Host: fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255), Port: 22,
					Transport: domain.TransportSSH, Status: domain.ServerYellow, AuthMethod: domain.AuthKey, Joined: true,
					HostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBench", HostKeyFingerprint: "SHA256:bench",
					PackageFamily: "apt", GroupIDs: groups},
					Secrets: store.ServerSecrets{Username: domain.ManagementUser, PrivateKey: fakeKey}})
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
	return h, admin, mgr
}

// fakeKey stands in for a management key: an OpenSSH ed25519 PEM is
// about 400 bytes, stored encrypted like the real one.
var fakeKey = "-----BEGIN OPENSSH PRIVATE KEY-----\n" + strings.Repeat("b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n", 5) +
	"-----END OPENSSH PRIVATE KEY-----\n"

// benchServerList measures GET /api/v1/servers over loopback HTTP through
// the router (auth middleware, fleet list, batched status) for an admin (n servers) and a
// manager (mine of them). Budget p99 ≤ 50 ms for both.
func benchServerList(b *testing.B, dbURL string) {
	n, mine, rounds := 10000, 100, 200
	if v, err := strconv.Atoi(os.Getenv("LCM_BENCH_SERVERS")); err == nil && v > mine {
		n = v // smaller fleets for profiling
	}
	h, admin, mgr := serverListHarness(b, dbURL, n, mine)
	ts := httptest.NewServer(h.srv.Handler())
	defer ts.Close()
	metrics := map[string]float64{}
	for _, who := range []struct {
		name, tok string
		want      int
	}{{"admin", admin, n}, {"manager", mgr, mine}} {
		// The client shares the process (and its garbage collector) with
		// the server: it reads into one reused buffer and decodes only the
		// warm-up answer, so its own garbage does not count as LCM's.
		var body bytes.Buffer
		decodeNext := true
		get := func() time.Duration {
			// Over loopback HTTP, as a client sees it: until the last byte
			// of the body is read.
			hr, _ := http.NewRequest("GET", ts.URL+"/api/v1/servers", nil)
			hr.Header.Set("Authorization", "Bearer "+who.tok)
			body.Reset()
			t0 := time.Now()
			res, err := ts.Client().Do(hr)
			if err != nil {
				b.Fatal(err)
			}
			_, err = body.ReadFrom(res.Body)
			res.Body.Close()
			d := time.Since(t0)
			if err != nil || res.StatusCode != 200 || body.Len() == 0 {
				b.Fatalf("%s: %d %s %v", who.name, res.StatusCode, body.Bytes(), err)
			}
			if !decodeNext {
				return d
			}
			decodeNext = false
			var list []json.RawMessage
			if err := json.Unmarshal(body.Bytes(), &list); err != nil {
				b.Fatal(err)
			}
			if len(list) != who.want {
				b.Fatalf("%s sees %d servers, want %d", who.name, len(list), who.want)
			}
			return d
		}
		get() // warm caches and connections
		lat := make([]time.Duration, 0, rounds)
		b.ResetTimer()
		for i := 0; i < rounds; i++ {
			lat = append(lat, get())
		}
		b.StopTimer()
		decodeNext = true
		get() // and the answer is still whole
		p50, p99 := percentile(lat, 0.5), percentile(lat, 0.99)
		b.Logf("%s (%d servers): p50 %.1f ms, p99 %.1f ms over %d requests", who.name, who.want,
			float64(p50.Microseconds())/1000, float64(p99.Microseconds())/1000, rounds)
		metrics[who.name+"-p50-ms"] = float64(p50.Microseconds()) / 1000
		metrics[who.name+"-p99-ms"] = float64(p99.Microseconds()) / 1000
		if who.name == "admin" {
			// The first request after a change of every server rebuilds
			// the cached listing; after a change of one server (facts
			// recorded, the common case) it patches that server in.
			ids, err := h.st.ServerIDs(context.Background(), false)
			if err != nil {
				b.Fatal(err)
			}
			rebuild, patch := make([]time.Duration, 0, 20), make([]time.Duration, 0, 50)
			for i := 0; i < cap(rebuild); i++ {
				h.st.TouchFleet()
				rebuild = append(rebuild, get())
			}
			for i := 0; i < cap(patch); i++ {
				if err := h.st.RecordServerFacts(context.Background(), ids[i*97%len(ids)], store.ServerFacts{OSName: "Debian GNU/Linux", OSVersion: strconv.Itoa(i)}); err != nil {
					b.Fatal(err)
				}
				patch = append(patch, get())
			}
			r50, p50, p99 := percentile(rebuild, 0.5), percentile(patch, 0.5), percentile(patch, 0.99)
			b.Logf("admin, first request after a change of every server: p50 %.1f ms over %d", float64(r50.Microseconds())/1000, len(rebuild))
			b.Logf("admin, first request after one server changed: p50 %.1f ms, p99 %.1f ms over %d", float64(p50.Microseconds())/1000,
				float64(p99.Microseconds())/1000, len(patch))
			metrics["admin-rebuild-p50-ms"] = float64(r50.Microseconds()) / 1000
			metrics["admin-patch-p99-ms"] = float64(p99.Microseconds()) / 1000
		}
	}
	for k, v := range metrics { // after the last ResetTimer, which drops reported metrics
		b.ReportMetric(v, k)
	}
}

// BenchmarkServerList10000SQLite: GET /api/v1/servers with 10,000 servers
// on SQLite, admin and a manager of 100. Run it once (-benchtime 1x): each
// run does 200 requests per principal and reports p50/p99.
//
//	go test ./internal/httpapi -run '^$' -bench ServerList10000 -benchtime 1x -timeout 20m
func BenchmarkServerList10000SQLite(b *testing.B) { benchServerList(b, "") }

// BenchmarkServerList10000Postgres: the same on PostgreSQL
// (LCM_TEST_POSTGRES_URL or the default test server; skipped if absent).
func BenchmarkServerList10000Postgres(b *testing.B) {
	if os.Getenv("LCM_BENCH_SKIP_POSTGRES") != "" {
		b.Skip("LCM_BENCH_SKIP_POSTGRES set")
	}
	benchServerList(b, testutil.PostgresURL(b))
}

// BenchmarkServerListRebuild: the first admin request after a fleet
// change, which renders the whole-fleet listing anew (SQLite; for
// profiling the rebuild: -cpuprofile).
//
//	go test ./internal/httpapi -run '^$' -bench ServerListRebuild -benchtime 20x -cpuprofile cpu.out
func BenchmarkServerListRebuild(b *testing.B) {
	n := 10000
	if v, err := strconv.Atoi(os.Getenv("LCM_BENCH_SERVERS")); err == nil && v > 100 {
		n = v
	}
	h, admin, _ := serverListHarness(b, "", n, 100)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h.st.TouchFleet()
		if r := h.do(req{method: "GET", path: "/api/v1/servers", token: admin}); r.code != 200 {
			b.Fatalf("%d %s", r.code, r.body)
		}
	}
}

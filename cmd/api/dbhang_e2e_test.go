package main

import (
	"context"
	"database/sql"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/testutil"
)

// healthSlack is what the shared 2-core test machine may add to a
// deadline before an answer is counted late (scheduling, TLS, the
// response itself). The budgets themselves are the product's: /health 2 s,
// a request request_timeout_seconds.
const healthSlack = time.Second

// TestDatabaseHangNeverHangsRequests: lcm-api on PostgreSQL behind a TCP
// proxy that black-holes the database — connections are accepted, nothing
// is ever answered, on new and open connections alike. /health (with and
// without a session, many at once) answers 503 within its 2 s budget;
// every other request ends within request_timeout_seconds with 503
// request_timeout instead of hanging; the cached security settings keep
// serving; a refused write leaves nothing behind; when the database
// answers again everything works without a restart.
func TestDatabaseHangNeverHangsRequests(t *testing.T) {
	pgURL := testutil.PostgresURL(t)
	u, err := url.Parse(pgURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := testutil.StartTCPProxy(t, u.Host)
	u.Host = proxy.Addr()
	a := testutil.StartAPI(t, testutil.APIOptions{Dev: true, DatabaseURL: u.String(), Config: map[string]any{"request_timeout_seconds": 2}})
	tok := login(t, a, "admin", a.AdminPassword)
	if resp, body := a.Do("GET", "/api/v1/auth/me", tok, nil, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("me: %d %s", resp.StatusCode, body)
	}
	groupsBefore := countRows(t, pgURL, "server_groups")

	proxy.SetMode(testutil.ProxyBlackHole)
	timed := func(method, path, token string, body any) (int, string, time.Duration) {
		start := time.Now()
		resp, raw := a.Do(method, path, token, body, nil)
		return resp.StatusCode, string(raw), time.Since(start)
	}
	// Health, anonymous and signed in (authentication reads the database
	// too), and on every path a load balancer may probe.
	for _, c := range []struct{ path, token string }{{"/api/v1/health", ""}, {"/api/v1/health", tok}, {"/healthz", ""}, {"/health", tok}} {
		code, body, d := timed("GET", c.path, c.token, nil)
		if code != http.StatusServiceUnavailable || !strings.Contains(body, "unhealthy") || d > 2*time.Second+healthSlack {
			t.Fatalf("GET %s (token %v) with the database hung: %d %s after %s", c.path, c.token != "", code, body, d)
		}
	}
	// Many probes at once do not queue behind each other.
	var wg sync.WaitGroup
	errs := make(chan string, 20)
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, body, d := timed("GET", "/api/v1/health", "", nil)
			if code != http.StatusServiceUnavailable || d > 2*time.Second+healthSlack {
				errs <- body + " after " + d.String()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatalf("concurrent health probe: %s", e)
	}
	// Reads and writes end at the request deadline with a clear 503.
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"GET", "/api/v1/auth/me", nil},
		{"GET", "/api/v1/servers", nil},
		{"GET", "/api/v1/jobs/history", nil},
		{"POST", "/api/v1/server-groups/create", map[string]any{"name": "while-hung"}},
	} {
		code, body, d := timed(c.method, c.path, tok, c.body)
		if code != http.StatusServiceUnavailable || !strings.Contains(body, `"code"`) || d > 2*time.Second+healthSlack {
			t.Fatalf("%s %s with the database hung: %d %s after %s", c.method, c.path, code, body, d)
		}
	}

	proxy.SetMode(testutil.ProxyPass)
	testutil.WaitFor(t, 20*time.Second, "health back to 200", func() bool {
		resp, _ := a.Do("GET", "/api/v1/health", "", nil, nil)
		return resp.StatusCode == http.StatusOK
	})
	if resp, body := a.Do("GET", "/api/v1/auth/me", tok, nil, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("me after the hang: %d %s", resp.StatusCode, body)
	}
	if n := countRows(t, pgURL, "server_groups"); n != groupsBefore {
		t.Fatalf("server_groups: %d rows after a refused write, %d before", n, groupsBefore)
	}
	if resp, body := a.Do("POST", "/api/v1/server-groups/create", tok, map[string]any{"name": "after-hang"}, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("create group after the hang: %d %s", resp.StatusCode, body)
	}
}

// countRows counts a table's rows straight in PostgreSQL.
func countRows(t *testing.T, pgURL, table string) int {
	t.Helper()
	db, err := sql.Open("pgx", pgURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var n int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

package httpapi

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/testutil"
)

// TestSettingsReloadNeverBlocksRequests: every request reads the security
// settings (client address, allowlist). With the settings table locked —
// a database that accepts connections but does not answer — requests keep
// being served from the last known settings instead of queueing behind the
// reload (issue: /health and every request hung while the DB hung).
//
// No clock is involved: the test waits until PostgreSQL shows the reload
// blocked on the lock, then proves that requests complete while that very
// query (same backend, same start) still waits — a request that waited for
// the reload would only return after it ended.
func TestSettingsReloadNeverBlocksRequests(t *testing.T) {
	url := testutil.PostgresURL(t)
	h := newHarness(t, harnessOpts{dbURL: url, no2FA: true})
	tok := h.login("admin", adminPW)
	me := func(what string) {
		t.Helper()
		if r := h.do(req{method: "GET", path: "/api/v1/auth/me", token: tok}); r.code != 200 {
			t.Fatalf("%s: %d %s", what, r.code, r.body)
		}
	}
	me("me")
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "LOCK TABLE settings IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	// blocked names the query waiting for the settings table's lock (backend
	// and start of the query), "" when none waits.
	blocked := func() string {
		t.Helper()
		var id sql.NullString
		err := db.QueryRowContext(ctx, `SELECT min(a.pid::text || '@' || a.query_start::text)
			FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
			WHERE l.relation = 'settings'::regclass AND NOT l.granted`).Scan(&id)
		if err != nil {
			t.Fatal(err)
		}
		return id.String
	}
	// Requests are served while the cached copy goes stale (1 s) and its
	// background reload starts and blocks. (Were requests waiting for the
	// reload, none would return while it is blocked, and this wait would
	// time out.)
	testutil.WaitFor(t, 30*time.Second, "a request answered while the settings reload is blocked on the locked table", func() bool {
		me("request while the cached copy goes stale")
		return blocked() != ""
	})
	// Five requests, each answered while the reload it found blocked is
	// still blocked. The reload gives up after 2 s and the next request
	// starts another: a request that straddles that moment is not counted.
	served := 0
	for tries := 0; served < 5; tries++ {
		if tries == 50 {
			t.Fatalf("only %d of %d requests were answered while the settings reload stayed blocked", served, tries)
		}
		before := blocked()
		me("request while the settings table is locked")
		if after := blocked(); before != "" && after == before {
			served++
		}
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	me("after the lock")
}

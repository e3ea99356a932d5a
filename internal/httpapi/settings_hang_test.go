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
func TestSettingsReloadNeverBlocksRequests(t *testing.T) {
	url := testutil.PostgresURL(t)
	h := newHarness(t, harnessOpts{dbURL: url, no2FA: true})
	tok := h.login("admin", adminPW)
	if r := h.do(req{method: "GET", path: "/api/v1/auth/me", token: tok}); r.code != 200 {
		t.Fatalf("me: %d %s", r.code, r.body)
	}
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "LOCK TABLE settings IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // the cached copy (1 s) is stale now
	for i := 0; i < 5; i++ {
		start := time.Now()
		r := h.do(req{method: "GET", path: "/api/v1/auth/me", token: tok})
		if d := time.Since(start); d > time.Second {
			t.Fatalf("request %d took %s while the settings table was locked", i, d)
		}
		if r.code != 200 {
			t.Fatalf("request %d: %d %s", i, r.code, r.body)
		}
		time.Sleep(300 * time.Millisecond)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if r := h.do(req{method: "GET", path: "/api/v1/auth/me", token: tok}); r.code != 200 {
		t.Fatalf("after the lock: %d %s", r.code, r.body)
	}
}

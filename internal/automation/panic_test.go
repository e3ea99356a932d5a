package automation_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/automation"
	"github.com/lcmproject/lcm/internal/testutil"
)

// TestRunPanicIsRecovered: a schedule run whose goroutine panics (here the
// vulnerability scan it starts) is recovered, logged and counted for the
// health monitor, and the run ends failed with a plain reason instead of
// staying "running" with this replica until the process restarts; the next
// slot runs again.
func TestRunPanicIsRecovered(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "", 1)
	c := &clock{t: time.Date(2026, 3, 1, 1, 0, 30, 0, time.UTC)}
	scans := 0
	s := automation.New(automation.Options{Store: e.p.Store, Jobs: e.p.Jobs, Log: quiet, Owner: "a", Now: c.now,
		Scan: func(context.Context, []string) {
			scans++
			panic("the scan broke")
		}})
	panics := testutil.CountPanics(t)
	sch := e.schedule(t, s, "30 1 * * *", automation.RuleVulnScan)
	for day := 1; day <= 2; day++ {
		c.set(time.Date(2026, 3, day, 1, 30, 0, 0, time.UTC))
		if err := s.Tick(ctx); err != nil {
			t.Fatal(err)
		}
		automation.WaitIdle()
		rs := runs(t, e, sch.ID)
		if len(rs) != day || rs[0].Status != automation.RunFailed || !strings.Contains(rs[0].Reason, "internal error") || rs[0].FinishedAt == nil {
			t.Fatalf("day %d: runs %+v, want the newest failed with the internal error", day, rs)
		}
		if got := panics(); got != int64(day) || scans != day {
			t.Fatalf("day %d: %d panics counted, %d scans", day, got, scans)
		}
	}
}

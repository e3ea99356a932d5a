package automation_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/status"
)

// TestPriorityTieInHealthReport: two groups of a server schedule the same
// rule type with the same priority; the server's health report (status
// insights) warns that the older group wins, and the warning goes away once
// the priorities differ.
func TestPriorityTieInHealthReport(t *testing.T) {
	e := newEnv(t, "", 0)
	ctx := context.Background()
	s := e.svc(nil, "")
	older := e.group
	time.Sleep(10 * time.Millisecond) // distinct creation times: the older group is well defined
	newer, err := e.p.Store.CreateGroup(ctx, domain.Group{Name: "db"})
	if err != nil {
		t.Fatal(err)
	}
	key, _ := actions.NewManagementKey("t")
	srv := e.p.AddServer(t, "both", "127.0.0.1:1", "k", key, older.ID, newer.ID)
	for _, g := range []domain.Group{older, newer} {
		e.group = g
		e.schedule(t, s, "0 3 * * *", "refresh")
	}
	st := status.New(e.p.Store, quiet)
	st.SetNotes(s.TieWarnings)
	if _, err := st.RecordContact(ctx, srv.ID, true, ""); err != nil { // a status beyond "unknown"
		t.Fatal(err)
	}
	tie := func() string {
		t.Helper()
		res, err := st.Recompute(ctx, srv.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range res.Insights {
			if in.Code == "rule_priority_tie" {
				return in.Text
			}
		}
		return ""
	}
	if w := tie(); !strings.Contains(w, `the older group "web" wins`) || !strings.Contains(w, "refresh") {
		t.Fatalf("tie warning %q", w)
	}
	if _, err := s.SetGroupSettings(ctx, e.p.Admin, domain.GroupAutomation{GroupID: newer.ID, Priority: 50}); err != nil {
		t.Fatal(err)
	}
	if w := tie(); w != "" {
		t.Fatalf("warning after distinct priorities: %q", w)
	}
}

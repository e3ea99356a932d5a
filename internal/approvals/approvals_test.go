package approvals_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/approvals"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/storetest"
)

func code(err error) string {
	var de *domain.Error
	if errors.As(err, &de) {
		return de.Code
	}
	return ""
}

func user(t *testing.T, st *store.Store, name string, roles ...string) *domain.Principal {
	t.Helper()
	u, err := st.CreateUser(context.Background(), store.NewUser{Username: name, Active: true, Roles: roles})
	if err != nil {
		t.Fatal(err)
	}
	perms := map[string]bool{}
	list := domain.ManagerPermissions
	if roles[0] == domain.RoleAdmin {
		list = domain.AllPermissions
	}
	for _, p := range list {
		perms[p] = true
	}
	return &domain.Principal{UserID: u.ID, Username: name, Roles: roles, Permissions: perms}
}

// TestCheckIsBoundToRequesterTargetsAndAction: a single-run approval lets
// through exactly one run of its requester on exactly its servers with
// exactly its action. Another user's run, another target set or a changed
// action never uses it; a new request of the same user for another
// binding withdraws the old pending one; the requester cannot decide it;
// an approval past its expiry is no longer usable.
func TestCheckIsBoundToRequesterTargetsAndAction(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			ctx := context.Background()
			st := storetest.Open(t, db.URL)
			if _, err := st.SeedIdentity(ctx, func() (string, error) { return "x", nil }); err != nil {
				t.Fatal(err)
			}
			ap := approvals.New(st, slog.New(slog.NewTextHandler(io.Discard, nil)))
			now := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
			ap.SetClock(func() time.Time { return now })
			ap.Register("test-run", approvals.Kind{Permission: domain.PermRulesManage})
			alice := user(t, st, "alice", domain.RoleManager)
			bob := user(t, st, "bob", domain.RoleManager)
			carol := user(t, st, "carol", domain.RoleAdmin)
			bind := domain.ApprovalBinding{Targets: []string{"s2", "s1"}, Action: "commands:abc"}
			pending := func() []domain.Approval {
				t.Helper()
				l, err := st.ListApprovals(ctx, store.ApprovalFilter{Status: domain.ApprovalPending, Kind: "test-run"})
				if err != nil {
					t.Fatal(err)
				}
				return l
			}

			if err := ap.Check(ctx, "test-run", "subject-1", alice, "run it", bind); code(err) != "approval_pending" {
				t.Fatalf("first run: %v", err)
			}
			p := pending()
			if len(p) != 1 || p[0].RequestedBy != alice.UserID {
				t.Fatalf("pending %+v", p)
			}
			if got := approvals.BoundTargets(p[0]); len(got) != 2 || got[0] != "s1" || got[1] != "s2" {
				t.Fatalf("bound targets %v", got)
			}
			// The same run again: still pending, no second request.
			if err := ap.Check(ctx, "test-run", "subject-1", alice, "run it", domain.ApprovalBinding{Targets: []string{"s1", "s2"}, Action: "commands:abc"}); code(err) != "approval_pending" || len(pending()) != 1 {
				t.Fatalf("again: %v, %d pending", err, len(pending()))
			}
			if _, err := ap.Decide(ctx, alice, p[0].ID, true, ""); code(err) != "self_approval" {
				t.Fatalf("requester decides: %v", err)
			}
			if _, err := ap.Decide(ctx, carol, p[0].ID, true, "ok"); err != nil {
				t.Fatal(err)
			}
			// Approved for alice on s1+s2 with commands abc: nobody else,
			// nowhere else, nothing else.
			for name, c := range map[string]struct {
				who  *domain.Principal
				bind domain.ApprovalBinding
			}{
				"another user":       {bob, bind},
				"another target set": {alice, domain.ApprovalBinding{Targets: []string{"s1", "s2", "s3"}, Action: "commands:abc"}},
				"one server less":    {alice, domain.ApprovalBinding{Targets: []string{"s1"}, Action: "commands:abc"}},
				"changed commands":   {alice, domain.ApprovalBinding{Targets: []string{"s1", "s2"}, Action: "commands:def"}},
				"the system":         {nil, bind},
			} {
				if err := ap.Check(ctx, "test-run", "subject-1", c.who, "run it", c.bind); code(err) != "approval_pending" {
					t.Fatalf("%s used alice's approval: %v", name, err)
				}
			}
			// Alice's three other requests: each new one withdrew the one
			// before; bob's and the system's stand beside them.
			p = pending()
			mine := 0
			for _, a := range p {
				if a.RequestedBy == alice.UserID {
					mine++
				}
			}
			if mine != 1 || len(p) != 3 {
				t.Fatalf("pending after the others: %d of alice's, %d in all", mine, len(p))
			}
			superseded, _ := st.ListApprovals(ctx, store.ApprovalFilter{Status: domain.ApprovalRejected, Kind: "test-run"})
			if len(superseded) != 2 {
				t.Fatalf("%d superseded requests, want 2", len(superseded))
			}
			// Alice's exact run uses it, once.
			if err := ap.Check(ctx, "test-run", "subject-1", alice, "run it", bind); err != nil {
				t.Fatalf("approved run: %v", err)
			}
			if err := ap.Check(ctx, "test-run", "subject-1", alice, "run it", bind); code(err) != "approval_pending" {
				t.Fatalf("second run on one approval: %v", err)
			}
			// An approval is only usable until it expires.
			p = pending()
			var again domain.Approval
			for _, a := range p {
				if a.RequestedBy == alice.UserID {
					again = a
				}
			}
			now = now.Add(approvals.DefaultTTL + time.Minute)
			if _, err := ap.Decide(ctx, carol, again.ID, true, "late"); code(err) != "approval_decided" {
				t.Fatalf("deciding an expired approval: %v", err)
			}
			if err := ap.Check(ctx, "test-run", "subject-1", alice, "run it", bind); code(err) != "approval_pending" {
				t.Fatalf("after expiry: %v", err)
			}
		})
	}
}

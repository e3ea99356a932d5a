package automation_test

import (
	"context"
	"errors"
	"testing"

	"github.com/lcmproject/lcm/internal/approvals"
	"github.com/lcmproject/lcm/internal/automation"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/store"
)

func code(err error) string {
	var de *domain.Error
	if errors.As(err, &de) {
		return de.Code
	}
	return ""
}

// TestCustomActionNeedsApprovalPerRun: a custom action that requires
// approval parks each run behind an approval; the requester cannot approve
// it, a second admin can, and one approval lets exactly one run through.
func TestCustomActionNeedsApprovalPerRun(t *testing.T) {
	e := newEnv(t, "", 1)
	ctx := context.Background()
	ap := approvals.New(e.p.Store, quiet)
	ap.Register("custom-action-run", approvals.Kind{Permission: domain.PermRulesManage})
	s := automation.New(automation.Options{Store: e.p.Store, Jobs: e.p.Jobs, Log: quiet, Approvals: ap})

	a, err := s.SaveCustomAction(ctx, e.p.Admin, "", automation.CustomActionInput{Name: ptr("touch"), Commands: ptr([]string{"true"}), RequiresApproval: ptr(true)})
	if err != nil {
		t.Fatal(err)
	}
	target := automation.RunTarget{ServerIDs: []string{e.srvs[0].ID}}
	if _, err := s.RunCustomAction(ctx, e.p.Admin, a.ID, target); code(err) != "approval_pending" {
		t.Fatalf("first run: %v, want approval_pending", err)
	}
	if _, err := s.RunCustomAction(ctx, e.p.Admin, a.ID, target); code(err) != "approval_pending" {
		t.Fatalf("second try while pending: %v", err)
	}
	pending, err := e.p.Store.ListApprovals(ctx, store.ApprovalFilter{Status: domain.ApprovalPending, Kind: "custom-action-run"})
	if err != nil || len(pending) != 1 || pending[0].RefID != a.ID {
		t.Fatalf("pending approvals %+v %v, want one for the action", pending, err)
	}
	if _, err := ap.Decide(ctx, e.p.Admin, pending[0].ID, true, "mine"); code(err) != "self_approval" {
		t.Fatalf("self approval: %v", err)
	}
	u, err := e.p.Store.CreateUser(ctx, store.NewUser{Username: "second", Active: true, Roles: []string{domain.RoleAdmin}})
	if err != nil {
		t.Fatal(err)
	}
	second := &domain.Principal{UserID: u.ID, Username: "second", Roles: []string{domain.RoleAdmin}, Permissions: e.p.Admin.Permissions}
	if _, err := ap.Decide(ctx, second, pending[0].ID, true, "ok"); err != nil {
		t.Fatal(err)
	}
	run, err := s.RunCustomAction(ctx, e.p.Admin, a.ID, target)
	if err != nil || run.ID == "" {
		t.Fatalf("approved run: %+v %v", run, err)
	}
	if _, err := s.RunCustomAction(ctx, e.p.Admin, a.ID, target); code(err) != "approval_pending" {
		t.Fatalf("the approval was used once; the next run: %v", err)
	}
	used, _ := e.p.Store.ListApprovals(ctx, store.ApprovalFilter{Status: domain.ApprovalUsed})
	if len(used) != 1 || used[0].ID != pending[0].ID {
		t.Fatalf("used approvals %+v", used)
	}
}

package linuxusers

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/testutil/plane"
)

// TestGroupMembershipSyncs: a server joining a group with assigned Linux
// users gets a sync job that applies them; leaving gets one that removes
// the accounts LCM provisioned there.
func TestGroupMembershipSyncs(t *testing.T) {
	ctx := context.Background()
	p := plane.Start(t, plane.Options{NoWorker: true})
	svc := New(p.Store, p.Jobs, nil)
	if err := svc.SeedBuiltins(ctx); err != nil {
		t.Fatal(err)
	}
	p.Fleet.OnMembership(svc.GroupMembershipChanged)
	srv := p.AddServer(t, "web-1", "192.0.2.20:22", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl", "unused")
	g, err := p.Fleet.CreateGroup(ctx, domain.Group{Name: "web"})
	if err != nil {
		t.Fatal(err)
	}
	u, err := svc.CreateUser(ctx, p.Admin, UserInput{Username: "gina"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Assign(ctx, p.Admin, u.ID, domain.TargetGroup, g.ID, ""); err != nil {
		t.Fatal(err)
	}
	lastJob := func() (domain.Job, actions.LinuxUsersParams) {
		t.Helper()
		hist, _, err := p.Jobs.History(ctx, p.Admin, domain.JobFilter{ServerID: srv.ID, Kind: domain.JobLinuxUser})
		if err != nil || len(hist) == 0 {
			t.Fatalf("no linux-user job: %v", err)
		}
		var params actions.LinuxUsersParams
		if err := json.Unmarshal(hist[0].Params, &params); err != nil {
			t.Fatal(err)
		}
		return hist[0], params
	}
	if _, err := p.Fleet.AssignServer(ctx, g.ID, srv.ID); err != nil {
		t.Fatal(err)
	}
	j, params := lastJob()
	if len(params.Users) != 1 || params.Users[0].Username != "gina" || params.Users[0].Op != actions.LinuxUserApply || params.Users[0].ProfileSlug != SlugStandard {
		t.Fatalf("join sync %+v", params)
	}
	// The job ran (recorded as its finish hook would): gina is provisioned.
	if err := p.Store.SetLinuxUserProvision(ctx, domain.LinuxUserProvision{UserID: u.ID, ServerID: srv.ID, Username: "gina", ProfileSlug: SlugStandard, State: domain.ProvisionProvisioned}); err != nil {
		t.Fatal(err)
	}
	us, err := svc.UserServers(ctx, u.ID)
	if err != nil || len(us) != 1 || us[0].ServerName != "web-1" || us[0].ProfileName != "Standard user" || us[0].Via != "group" || us[0].State != domain.ProvisionProvisioned {
		t.Fatalf("user servers %+v %v", us, err)
	}
	if _, err := p.Jobs.Abort(ctx, p.Admin, j.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Fleet.RemoveServer(ctx, g.ID, srv.ID); err != nil {
		t.Fatal(err)
	}
	j2, params := lastJob()
	if j2.ID == j.ID || len(params.Users) != 1 || params.Users[0].Op != actions.LinuxUserRemove || params.Users[0].Username != "gina" {
		t.Fatalf("leave sync %+v", params)
	}
}

// TestGroupAssignmentProvisions: assigning a user to a group starts a
// provisioning job on each of the group's joined servers at once; removing
// the assignment removes the account where nothing else keeps it, and
// where another assignment (a direct one, another group) keeps the user,
// applies that assignment's profile instead — or changes nothing when the
// profile stays. A group leave with another group keeping the user does
// not remove the account either.
func TestGroupAssignmentProvisions(t *testing.T) {
	ctx := context.Background()
	p := plane.Start(t, plane.Options{NoWorker: true})
	svc := New(p.Store, p.Jobs, nil)
	if err := svc.SeedBuiltins(ctx); err != nil {
		t.Fatal(err)
	}
	p.Fleet.OnMembership(svc.GroupMembershipChanged)
	hk := "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"
	web, err := p.Fleet.CreateGroup(ctx, domain.Group{Name: "web"})
	if err != nil {
		t.Fatal(err)
	}
	db, err := p.Fleet.CreateGroup(ctx, domain.Group{Name: "db"})
	if err != nil {
		t.Fatal(err)
	}
	s1 := p.AddServer(t, "web-1", "192.0.2.31:22", hk, "unused", web.ID)
	s2 := p.AddServer(t, "web-2", "192.0.2.32:22", hk, "unused", web.ID, db.ID)
	s3 := p.AddServer(t, "web-3", "192.0.2.33:22", hk, "unused", web.ID)
	u, err := svc.CreateUser(ctx, p.Admin, UserInput{Username: "hanna"})
	if err != nil {
		t.Fatal(err)
	}
	var full domain.PrivilegeProfile
	profiles, _ := svc.ListProfiles(ctx)
	for _, pr := range profiles {
		if pr.Slug == SlugFullAdmin {
			full = pr
		}
	}
	opsByServer := func(ch GroupChange) map[string]actions.LinuxUserSpec {
		t.Helper()
		out := map[string]actions.LinuxUserSpec{}
		for _, j := range ch.Jobs {
			var params actions.LinuxUsersParams
			if err := json.Unmarshal(j.Params, &params); err != nil || len(params.Users) != 1 {
				t.Fatalf("job params %s: %v", j.Params, err)
			}
			out[j.ServerID] = params.Users[0]
			// The job ran: record its outcome as the finish hook would,
			// and free the server for the next job.
			if _, err := p.Jobs.Abort(ctx, p.Admin, j.ID); err != nil {
				t.Fatal(err)
			}
			spec := params.Users[0]
			if spec.Op == actions.LinuxUserRemove {
				if err := p.Store.DeleteLinuxUserProvision(ctx, u.ID, j.ServerID); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if err := p.Store.SetLinuxUserProvision(ctx, domain.LinuxUserProvision{UserID: u.ID, ServerID: j.ServerID, Username: "hanna",
				ProfileSlug: spec.ProfileSlug, State: domain.ProvisionProvisioned}); err != nil {
				t.Fatal(err)
			}
		}
		if len(ch.NotStarted) > 0 {
			t.Fatalf("not started: %+v", ch.NotStarted)
		}
		return out
	}

	// Assign to web: three servers, three apply jobs at once.
	ch, err := svc.AssignGroup(ctx, p.Admin, u.ID, web.ID, "")
	if err != nil || ch.Assignment.TargetID != web.ID {
		t.Fatalf("assign: %+v %v", ch, err)
	}
	ops := opsByServer(ch)
	for _, s := range []domain.Server{s1, s2, s3} {
		if o := ops[s.ID]; o.Op != actions.LinuxUserApply || o.ProfileSlug != SlugStandard {
			t.Fatalf("%s: %+v", s.Name, o)
		}
	}
	// Assigning again with the same profile changes nothing: no job.
	if ch, err := svc.AssignGroup(ctx, p.Admin, u.ID, web.ID, ""); err != nil || len(ch.Jobs) != 0 {
		t.Fatalf("same assignment again: %d jobs, %v", len(ch.Jobs), err)
	}
	// A second group (db, only s2) with Full administrator and a lower
	// priority number: s2's profile changes, the others stay.
	if _, err := p.Store.SetGroupAutomation(ctx, domain.GroupAutomation{GroupID: db.ID, Priority: 10}); err != nil {
		t.Fatal(err)
	}
	ops = opsByServer(mustChange(t)(svc.AssignGroup(ctx, p.Admin, u.ID, db.ID, full.ID)))
	if len(ops) != 1 || ops[s2.ID].ProfileSlug != SlugFullAdmin || ops[s2.ID].Group != "sudo" {
		t.Fatalf("db assignment: %+v", ops)
	}
	// A direct assignment with Full administrator on s3 (a plain
	// assignment: the next change of the user's group brings s3 in line).
	if _, err := svc.Assign(ctx, p.Admin, u.ID, domain.TargetServer, s3.ID, full.ID); err != nil {
		t.Fatal(err)
	}
	// The group override: web's profile becomes Full administrator; s1
	// changes, s2 already has it (db wins there), s3 follows its direct
	// assignment (Full administrator, not yet applied).
	ops = opsByServer(mustChange(t)(svc.SetGroupProfile(ctx, p.Admin, u.ID, web.ID, full.ID)))
	if len(ops) != 2 || ops[s1.ID].ProfileSlug != SlugFullAdmin || ops[s3.ID].ProfileSlug != SlugFullAdmin {
		t.Fatalf("group profile override: %+v", ops)
	}
	if _, err := svc.SetGroupProfile(ctx, p.Admin, u.ID, "no-such-group", ""); !isNotFound(err) {
		t.Fatalf("override without assignment: %v", err)
	}
	// Remove web: s1 loses the account; db keeps hanna on s2 and the
	// direct assignment on s3, both with the profile she has: no job.
	ops = opsByServer(mustChange(t)(svc.UnassignGroup(ctx, p.Admin, u.ID, web.ID)))
	if len(ops) != 1 || ops[s1.ID].Op != actions.LinuxUserRemove || ops[s1.ID].Username != "hanna" {
		t.Fatalf("remove web: %+v", ops)
	}
	// web again, with its default (Standard): s1 gets the account back;
	// s2 (db wins) and s3 (direct) stay.
	ops = opsByServer(mustChange(t)(svc.AssignGroup(ctx, p.Admin, u.ID, web.ID, "")))
	if len(ops) != 1 || ops[s1.ID].Op != actions.LinuxUserApply || ops[s1.ID].ProfileSlug != SlugStandard {
		t.Fatalf("web again: %+v", ops)
	}
	// Remove db: web keeps hanna on s2, with its profile (Standard now).
	ops = opsByServer(mustChange(t)(svc.UnassignGroup(ctx, p.Admin, u.ID, db.ID)))
	if len(ops) != 1 || ops[s2.ID].Op != actions.LinuxUserApply || ops[s2.ID].ProfileSlug != SlugStandard {
		t.Fatalf("remove db, web keeps s2: %+v", ops)
	}
	// A group leave where another assignment keeps the user: db again
	// (Full administrator wins on s2), then s2 leaves db: web keeps
	// hanna there, so the sync applies Standard and removes nothing.
	ops = opsByServer(mustChange(t)(svc.AssignGroup(ctx, p.Admin, u.ID, db.ID, full.ID)))
	if len(ops) != 1 || ops[s2.ID].ProfileSlug != SlugFullAdmin {
		t.Fatalf("db again: %+v", ops)
	}
	if _, err := p.Fleet.RemoveServer(ctx, db.ID, s2.ID); err != nil {
		t.Fatal(err)
	}
	hist, _, err := p.Jobs.History(ctx, p.Admin, domain.JobFilter{ServerID: s2.ID, Kind: domain.JobLinuxUser})
	if err != nil || len(hist) == 0 {
		t.Fatalf("leave sync: %v", err)
	}
	var params actions.LinuxUsersParams
	if err := json.Unmarshal(hist[0].Params, &params); err != nil {
		t.Fatal(err)
	}
	if len(params.Users) != 1 || params.Users[0].Username != "hanna" || params.Users[0].Op != actions.LinuxUserApply || params.Users[0].ProfileSlug != SlugStandard {
		t.Fatalf("s2 left db, web keeps hanna: %+v", params.Users)
	}
}

func mustChange(t *testing.T) func(GroupChange, error) GroupChange {
	return func(ch GroupChange, err error) GroupChange {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return ch
	}
}

// TestPushKeys: a key change goes at once to the servers where the
// account is provisioned (a keys-only job), not where it is disabled or
// not yet there.
func TestPushKeys(t *testing.T) {
	ctx := context.Background()
	p := plane.Start(t, plane.Options{NoWorker: true})
	svc := New(p.Store, p.Jobs, nil)
	if err := svc.SeedBuiltins(ctx); err != nil {
		t.Fatal(err)
	}
	hk := "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"
	on := p.AddServer(t, "on", "192.0.2.41:22", hk, "unused")
	off := p.AddServer(t, "off", "192.0.2.42:22", hk, "unused")
	u, err := svc.CreateUser(ctx, p.Admin, UserInput{Username: "ines"})
	if err != nil {
		t.Fatal(err)
	}
	for srv, state := range map[string]string{on.ID: domain.ProvisionProvisioned, off.ID: domain.ProvisionDisabled} {
		if err := p.Store.SetLinuxUserProvision(ctx, domain.LinuxUserProvision{UserID: u.ID, ServerID: srv, Username: "ines", ProfileSlug: SlugStandard, State: state}); err != nil {
			t.Fatal(err)
		}
	}
	k, err := svc.AddKey(ctx, p.Admin, u.ID, "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl ines@laptop")
	if err != nil {
		t.Fatal(err)
	}
	ch := svc.PushKeys(ctx, p.Admin, u.ID)
	if len(ch.Jobs) != 1 || ch.Jobs[0].ServerID != on.ID || len(ch.NotStarted) != 0 || ch.Jobs[0].Name() != "Update the SSH keys of Linux user ines" {
		t.Fatalf("push: %+v", ch)
	}
	var params actions.LinuxUsersParams
	if err := json.Unmarshal(ch.Jobs[0].Params, &params); err != nil {
		t.Fatal(err)
	}
	if s := params.Users[0]; s.Op != actions.LinuxUserKeys || len(s.Keys) != 1 || s.Keys[0] != k.PublicKey || s.ProfileSlug != SlugStandard {
		t.Fatalf("keys job: %+v", s)
	}
	// The server is busy with that job: the next push lists it.
	if ch := svc.PushKeys(ctx, p.Admin, u.ID); len(ch.Jobs) != 0 || len(ch.NotStarted) != 1 || ch.NotStarted[0].ServerName != "on" {
		t.Fatalf("busy server: %+v", ch)
	}
}

// TestManagerAccountOps: disable, enable and remove of an account on a
// server are server operations: a manager of the server's group may run
// them (as sync-users); a manager of another group gets 404 (the server
// is not visible); assigning a user stays admin-only.
func TestManagerAccountOps(t *testing.T) {
	ctx := context.Background()
	p := plane.Start(t, plane.Options{NoWorker: true})
	svc := New(p.Store, p.Jobs, nil)
	if err := svc.SeedBuiltins(ctx); err != nil {
		t.Fatal(err)
	}
	hk := "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"
	mine, err := p.Fleet.CreateGroup(ctx, domain.Group{Name: "mine"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := p.Fleet.CreateGroup(ctx, domain.Group{Name: "other"})
	if err != nil {
		t.Fatal(err)
	}
	mgrUser := p.Manager(t, "mgr-ops")
	if _, err := p.Fleet.AssignManager(ctx, mine.ID, mgrUser.UserID); err != nil {
		t.Fatal(err)
	}
	srv := p.AddServer(t, "m-1", "192.0.2.51:22", hk, "unused", mine.ID)
	hidden := p.AddServer(t, "o-1", "192.0.2.52:22", hk, "unused", other.ID)
	u, err := svc.CreateUser(ctx, p.Admin, UserInput{Username: "jule"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.AssignServer(ctx, mgrUser, srv.ID, u.ID, ""); !errors.Is(err, domain.ErrForbidden) {
		t.Fatalf("manager assigns: %v", err)
	}
	if _, err := svc.Assign(ctx, p.Admin, u.ID, domain.TargetGroup, mine.ID, ""); err != nil {
		t.Fatal(err)
	}
	for _, s := range []domain.Server{srv, hidden} {
		if err := p.Store.SetLinuxUserProvision(ctx, domain.LinuxUserProvision{UserID: u.ID, ServerID: s.ID, Username: "jule", ProfileSlug: SlugStandard, State: domain.ProvisionProvisioned}); err != nil {
			t.Fatal(err)
		}
	}
	for _, op := range []string{actions.LinuxUserDisable, actions.LinuxUserEnable} {
		j, err := svc.UserOpByName(ctx, mgrUser, srv.ID, op, "jule", false)
		if err != nil {
			t.Fatalf("manager %s: %v", op, err)
		}
		if _, err := p.Jobs.Abort(ctx, p.Admin, j.ID); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svc.UserOpByName(ctx, mgrUser, hidden.ID, actions.LinuxUserDisable, "jule", false); !isNotFound(err) {
		t.Fatalf("manager on another group's server: %v", err)
	}
	// Remove is refused while assigned (409), not forbidden.
	if _, err := svc.UserOpByName(ctx, mgrUser, srv.ID, actions.LinuxUserRemove, "jule", false); codeOf(err) != "still_assigned" {
		t.Fatalf("manager remove while assigned: %v", err)
	}
}

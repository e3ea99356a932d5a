package linuxusers

import (
	"context"
	"encoding/json"
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

package linuxusers

import (
	"context"
	"fmt"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/store"
)

// GroupChange is what a change of a group assignment started: one job per
// server of the group whose account must change, and the servers where no
// job could start (busy, not reachable by the job system); their pending
// syncs show what is left, and sync-users catches up.
type GroupChange struct {
	Assignment domain.LinuxUserAssignment
	Jobs       []domain.Job
	NotStarted []NotStarted
}

// NotStarted is a server whose provisioning job was not started.
type NotStarted struct {
	ServerID   string `json:"server_id"`
	ServerName string `json:"server_name"`
	Error      string `json:"error"`
}

// AssignGroup assigns a user to a group with a profile ("" = the user's
// default) and provisions the group's servers at once: each joined server
// where the user's account or effective profile changes gets a job.
func (s *Service) AssignGroup(ctx context.Context, p *domain.Principal, userID, groupID, profileID string) (GroupChange, error) {
	a, err := s.Assign(ctx, p, userID, domain.TargetGroup, groupID, profileID)
	if err != nil {
		return GroupChange{}, err
	}
	ch := s.syncGroupServers(ctx, p, userID, groupID)
	ch.Assignment = a
	return ch, nil
}

// SetGroupProfile overrides the profile of an existing group assignment
// (404 without one) and re-provisions the group's servers where the
// effective profile changes.
func (s *Service) SetGroupProfile(ctx context.Context, p *domain.Principal, userID, groupID, profileID string) (GroupChange, error) {
	if err := requireAdmin(p); err != nil {
		return GroupChange{}, err
	}
	as, err := s.Assignments(ctx, userID)
	if err != nil {
		return GroupChange{}, err
	}
	found := false
	for _, a := range as {
		found = found || a.TargetType == domain.TargetGroup && a.TargetID == groupID
	}
	if !found {
		return GroupChange{}, domain.NotFound("group assignment")
	}
	return s.AssignGroup(ctx, p, userID, groupID, profileID)
}

// UnassignGroup drops a group assignment and deprovisions the group's
// servers where no other assignment (a direct one, another group) keeps
// the user; where one does, its profile is applied if it differs.
func (s *Service) UnassignGroup(ctx context.Context, p *domain.Principal, userID, groupID string) (GroupChange, error) {
	if err := s.Unassign(ctx, p, userID, domain.TargetGroup, groupID); err != nil {
		return GroupChange{}, err
	}
	return s.syncGroupServers(ctx, p, userID, groupID), nil
}

// syncGroupServers submits, for every joined server of the group, the
// operation that brings userID's account in line with the catalogue.
func (s *Service) syncGroupServers(ctx context.Context, p *domain.Principal, userID, groupID string) GroupChange {
	ch := GroupChange{Jobs: []domain.Job{}, NotStarted: []NotStarted{}}
	servers, err := s.store.ListServers(ctx, store.SystemScope, store.ServerFilter{GroupID: groupID})
	if err != nil {
		ch.NotStarted = append(ch.NotStarted, NotStarted{Error: "the group's servers could not be listed: " + err.Error()})
		return ch
	}
	for _, srv := range servers {
		if !srv.Joined {
			continue
		}
		spec, ok, err := s.userSyncSpec(ctx, srv, userID)
		if err == nil && ok {
			var j domain.Job
			j, err = s.submit(ctx, p, srv, actions.LinuxUsersParams{Users: []actions.LinuxUserSpec{spec}, Op: spec.Op, Username: spec.Username})
			if err == nil {
				ch.Jobs = append(ch.Jobs, j)
				continue
			}
		}
		if err != nil {
			s.log.Warn("linux users: provisioning after a group assignment change not started; run sync-users", "server_id", srv.ID, "group_id", groupID, "err", err)
			ch.NotStarted = append(ch.NotStarted, NotStarted{ServerID: srv.ID, ServerName: srv.Name, Error: err.Error()})
		}
	}
	return ch
}

// userSyncSpec is the operation that brings one user's account on srv in
// line with the catalogue: apply (assigned, not yet provisioned with that
// profile), remove (provisioned, no longer assigned; home kept), or
// nothing (ok false). A disabled account stays disabled.
func (s *Service) userSyncSpec(ctx context.Context, srv domain.Server, userID string) (actions.LinuxUserSpec, bool, error) {
	st, err := s.stateOf(ctx, srv)
	if err != nil {
		return actions.LinuxUserSpec{}, false, err
	}
	prof, assigned := st.assigned[userID]
	prov, provisioned := st.provisions[userID]
	switch {
	case assigned && provisioned && prov.State == domain.ProvisionDisabled:
		return actions.LinuxUserSpec{}, false, nil
	case assigned && provisioned && prov.State == domain.ProvisionProvisioned && prov.ProfileSlug == prof.Slug:
		return actions.LinuxUserSpec{}, false, nil
	case assigned:
		u, ok := st.users[userID]
		if !ok {
			return actions.LinuxUserSpec{}, false, fmt.Errorf("linux user %s not in the catalogue", userID)
		}
		spec, err := s.applySpec(ctx, st, u, prof, actions.LinuxUserApply)
		return spec, err == nil, err
	case provisioned:
		return actions.LinuxUserSpec{UserID: userID, Op: actions.LinuxUserRemove, Username: prov.Username, ProfileSlug: prov.ProfileSlug}, true, nil
	}
	return actions.LinuxUserSpec{}, false, nil
}

// PushKeys takes a user's keys to every server where the account is
// provisioned (not disabled, which keeps an empty block): one job per
// server rewriting only LCM's key block (lcm-helper authorized-keys in
// restricted sudo mode). It runs after a key is added, generated or
// removed; a busy server is listed and catches up with its next sync.
func (s *Service) PushKeys(ctx context.Context, p *domain.Principal, userID string) GroupChange {
	ch := GroupChange{Jobs: []domain.Job{}, NotStarted: []NotStarted{}}
	if s.jobs == nil {
		return ch
	}
	u, err := s.store.GetLinuxUser(ctx, userID)
	if err != nil {
		ch.NotStarted = append(ch.NotStarted, NotStarted{Error: err.Error()})
		return ch
	}
	provs, err := s.store.ListLinuxUserProvisions(ctx, userID, "")
	if err != nil {
		ch.NotStarted = append(ch.NotStarted, NotStarted{Error: err.Error()})
		return ch
	}
	keys := make([]string, 0, len(u.Keys))
	for _, k := range u.Keys {
		keys = append(keys, k.PublicKey)
	}
	for _, pr := range provs {
		if pr.State != domain.ProvisionProvisioned {
			continue
		}
		srv, err := s.store.GetServer(ctx, store.SystemScope, pr.ServerID)
		if err == nil && srv.Joined {
			spec := actions.LinuxUserSpec{UserID: u.ID, ProfileSlug: pr.ProfileSlug, Op: actions.LinuxUserKeys, Username: u.Username, Keys: keys}
			var j domain.Job
			if j, err = s.submit(ctx, p, srv, actions.LinuxUsersParams{Users: []actions.LinuxUserSpec{spec}, Op: spec.Op, Username: u.Username}); err == nil {
				ch.Jobs = append(ch.Jobs, j)
				continue
			}
		}
		if err != nil {
			s.log.Warn("linux users: key update not started; the next sync takes the keys", "server_id", pr.ServerID, "user", u.Username, "err", err)
			ch.NotStarted = append(ch.NotStarted, NotStarted{ServerID: pr.ServerID, ServerName: srv.Name, Error: err.Error()})
		}
	}
	return ch
}

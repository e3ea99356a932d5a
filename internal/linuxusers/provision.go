package linuxusers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/privilege"
	"github.com/lcmproject/lcm/internal/store"
)

// RegisterJobs wires the provisioning jobs: the password hash supplier and
// the finish hooks that record outcomes and scans. Call before the jobs
// service runs.
func (s *Service) RegisterJobs() {
	if s.jobs == nil {
		return
	}
	s.jobs.SecretsFor(domain.JobLinuxUser, s.jobSecrets)
	s.jobs.OnFinish(domain.JobLinuxUser, s.afterProvision)
	s.jobs.OnFinish(domain.JobLinuxUserScan, s.afterScan)
}

// jobSecrets supplies the password hashes of a job's users.
func (s *Service) jobSecrets(ctx context.Context, job domain.Job) (map[string]string, error) {
	var p actions.LinuxUsersParams
	if err := json.Unmarshal(job.Params, &p); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, u := range p.Users {
		if !u.HasPassword {
			continue
		}
		lu, err := s.store.GetLinuxUser(ctx, u.UserID)
		if err != nil {
			return nil, err
		}
		if lu.PasswordHash == "" {
			return nil, fmt.Errorf("linuxusers: %s has no password hash", u.Username)
		}
		out[actions.PasswordSecret(u.Username)] = lu.PasswordHash
	}
	return out, nil
}

// afterProvision records each operation's outcome.
func (s *Service) afterProvision(ctx context.Context, job domain.Job) error {
	var outcomes []actions.LinuxUserOutcome
	if len(job.Data) > 0 {
		if err := json.Unmarshal(job.Data, &outcomes); err != nil {
			return err
		}
	} else {
		// No payload: the job failed before any operation reported.
		var p actions.LinuxUsersParams
		if err := json.Unmarshal(job.Params, &p); err != nil {
			return err
		}
		for _, u := range p.Users {
			outcomes = append(outcomes, actions.LinuxUserOutcome{UserID: u.UserID, Username: u.Username, Op: u.Op,
				ProfileSlug: u.ProfileSlug, OK: job.Status == domain.JobSuccess, Error: job.Error})
		}
	}
	var errs []error
	for _, o := range outcomes {
		prov := domain.LinuxUserProvision{UserID: o.UserID, ServerID: job.ServerID, Username: o.Username, ProfileSlug: o.ProfileSlug, JobID: job.ID}
		switch {
		case !o.OK && o.Op == actions.LinuxUserRemove:
			continue // still there: the row stays as it was
		case !o.OK:
			prov.State, prov.Error = domain.ProvisionFailed, o.Error
		case o.Op == actions.LinuxUserRemove:
			errs = append(errs, s.store.DeleteLinuxUserProvision(ctx, o.UserID, job.ServerID))
			continue
		case o.Op == actions.LinuxUserDisable:
			prov.State = domain.ProvisionDisabled
			if cur, err := s.provisionOf(ctx, o.UserID, job.ServerID); err == nil {
				prov.ProfileSlug = cur.ProfileSlug
			}
		default:
			prov.State = domain.ProvisionProvisioned
		}
		errs = append(errs, s.store.SetLinuxUserProvision(ctx, prov))
	}
	return errors.Join(errs...)
}

func (s *Service) provisionOf(ctx context.Context, userID, serverID string) (domain.LinuxUserProvision, error) {
	list, err := s.store.ListLinuxUserProvisions(ctx, userID, serverID)
	if err != nil {
		return domain.LinuxUserProvision{}, err
	}
	if len(list) == 0 {
		return domain.LinuxUserProvision{}, domain.NotFound("provision")
	}
	return list[0], nil
}

// afterScan stores a scan's accounts.
func (s *Service) afterScan(ctx context.Context, job domain.Job) error {
	if job.Status != domain.JobSuccess || len(job.Data) == 0 {
		return nil
	}
	at := time.Now().UTC()
	if job.FinishedAt != nil {
		at = *job.FinishedAt
	}
	return s.store.SetLinuxUserScan(ctx, store.LinuxUserScan{ServerID: job.ServerID, Accounts: job.Data, ScannedAt: at, JobID: job.ID})
}

// serverState is what the catalogue says about one server.
type serverState struct {
	srv        domain.Server
	family     string
	users      map[string]domain.LinuxUser
	assigned   map[string]domain.PrivilegeProfile // user id → effective profile
	provisions map[string]domain.LinuxUserProvision
	managed    []string
}

func (s *Service) stateOf(ctx context.Context, srv domain.Server) (serverState, error) {
	st := serverState{srv: srv, family: srv.PackageFamily, users: map[string]domain.LinuxUser{},
		assigned: map[string]domain.PrivilegeProfile{}, provisions: map[string]domain.LinuxUserProvision{}}
	if !privilege.ValidFamily(st.family) {
		st.family = "apt"
	}
	users, err := s.store.ListLinuxUsers(ctx)
	if err != nil {
		return st, err
	}
	as, err := s.store.ListLinuxUserAssignments(ctx, "")
	if err != nil {
		return st, err
	}
	ranks := groupRanks{}
	for _, u := range users {
		st.users[u.ID] = u
		r, err := s.resolve(ctx, u, srv, as, ranks)
		if err != nil {
			return st, err
		}
		if r.OK {
			st.assigned[u.ID] = r.Profile
		}
		if r.Warning != "" {
			s.log.Warn("linux users: "+r.Warning, "server_id", srv.ID, "user", u.Username)
		}
	}
	provs, err := s.store.ListLinuxUserProvisions(ctx, "", srv.ID)
	if err != nil {
		return st, err
	}
	for _, p := range provs {
		st.provisions[p.UserID] = p
	}
	profiles, err := s.store.ListProfiles(ctx)
	if err != nil {
		return st, err
	}
	st.managed = []string{AdminGroup(st.family)}
	for _, p := range profiles {
		if p.Kind == domain.ProfileCustom {
			st.managed = append(st.managed, privilege.GroupName(p.Slug))
		}
	}
	return st, nil
}

// applySpec builds the apply (or enable) operation of a user.
func (s *Service) applySpec(ctx context.Context, st serverState, u domain.LinuxUser, prof domain.PrivilegeProfile, op string) (actions.LinuxUserSpec, error) {
	spec := actions.LinuxUserSpec{UserID: u.ID, ProfileSlug: prof.Slug, Op: op, Username: u.Username, FullName: u.FullName,
		Shell: u.Shell, FileAccess: u.AccountType == domain.AccountFileAccess, SFTPChroot: u.SFTPChroot,
		HasPassword: u.PasswordHash != "", Group: GroupOf(prof, st.family), ManagedGroups: st.managed}
	for _, k := range u.Keys {
		spec.Keys = append(spec.Keys, k.PublicKey)
	}
	if prof.Kind == domain.ProfileCustom {
		r, err := s.RenderProfile(ctx, prof, st.family)
		if err != nil {
			return spec, err
		}
		spec.Sudoers = &actions.SudoersFile{Path: r.Path, Content: r.Sudoers}
		for _, a := range r.ACLs {
			spec.ACLs = append(spec.ACLs, actions.ACLGrant{Group: r.Group, Path: a.Path, Perms: a.Perms})
		}
	}
	if spec.FileAccess {
		// A file-access-only account never gets sudo rights.
		spec.Group, spec.Sudoers, spec.ACLs = "", nil, nil
		if prof.Kind == domain.ProfileCustom {
			spec.ACLs = nil
		}
	}
	return spec, nil
}

// Plan returns the operations a sync of srv runs: every assigned user is
// applied (disabled accounts stay disabled), every provisioned account no
// longer assigned is removed (home kept).
func (s *Service) Plan(ctx context.Context, srv domain.Server) ([]actions.LinuxUserSpec, error) {
	st, err := s.stateOf(ctx, srv)
	if err != nil {
		return nil, err
	}
	var out []actions.LinuxUserSpec
	for id, prof := range st.assigned {
		if p, ok := st.provisions[id]; ok && p.State == domain.ProvisionDisabled {
			continue
		}
		spec, err := s.applySpec(ctx, st, st.users[id], prof, actions.LinuxUserApply)
		if err != nil {
			return nil, err
		}
		out = append(out, spec)
	}
	for id, p := range st.provisions {
		if _, ok := st.assigned[id]; !ok {
			out = append(out, actions.LinuxUserSpec{UserID: id, Op: actions.LinuxUserRemove, Username: p.Username, ProfileSlug: p.ProfileSlug})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Username < out[j].Username })
	return out, nil
}

// Pending lists what a sync would change: users never provisioned or
// failed, profile changes, accounts to remove.
func (s *Service) Pending(ctx context.Context, p *domain.Principal, serverID string) ([]PendingSync, error) {
	srv, err := s.store.GetServer(ctx, store.ScopeOf(p), serverID)
	if err != nil {
		return nil, err
	}
	st, err := s.stateOf(ctx, srv)
	if err != nil {
		return nil, err
	}
	out := []PendingSync{}
	for id, prof := range st.assigned {
		u := st.users[id]
		prov, ok := st.provisions[id]
		switch {
		case !ok:
			out = append(out, PendingSync{UserID: id, Username: u.Username, Action: "create", Profile: prof.Name})
		case prov.State == domain.ProvisionFailed:
			out = append(out, PendingSync{UserID: id, Username: u.Username, Action: "retry", Profile: prof.Name, Reason: prov.Error})
		case prov.State == domain.ProvisionProvisioned && prov.ProfileSlug != prof.Slug:
			out = append(out, PendingSync{UserID: id, Username: u.Username, Action: "change_profile", Profile: prof.Name})
		}
	}
	for id, prov := range st.provisions {
		if _, ok := st.assigned[id]; !ok {
			out = append(out, PendingSync{UserID: id, Username: prov.Username, Action: "remove"})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Username < out[j].Username })
	return out, nil
}

// PendingSync is one change a sync would make.
type PendingSync struct {
	UserID   string `json:"user_id"`
	Username string `json:"username"`
	Action   string `json:"action"` // create, retry, change_profile, remove
	Profile  string `json:"profile,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

func (s *Service) submit(ctx context.Context, p *domain.Principal, srv domain.Server, params actions.LinuxUsersParams) (domain.Job, error) {
	if s.jobs == nil {
		return domain.Job{}, domain.Unavailable("no_jobs", "provisioning is not available")
	}
	return s.jobs.SubmitServer(ctx, p, srv, domain.JobLinuxUser, params)
}

// Sync reconciles a server with the catalogue (one job).
func (s *Service) Sync(ctx context.Context, p *domain.Principal, serverID string) (domain.Job, error) {
	srv, err := s.store.GetServer(ctx, store.ScopeOf(p), serverID)
	if err != nil {
		return domain.Job{}, err
	}
	specs, err := s.Plan(ctx, srv)
	if err != nil {
		return domain.Job{}, err
	}
	if len(specs) == 0 {
		return domain.Job{}, domain.Conflict("nothing_to_sync", "no Linux user is assigned to or provisioned on this server")
	}
	return s.submit(ctx, p, srv, actions.LinuxUsersParams{Users: specs})
}

// AssignServer assigns a user to a server with a profile and provisions it.
func (s *Service) AssignServer(ctx context.Context, p *domain.Principal, serverID, userID, profileID string) (domain.Job, error) {
	if _, err := s.store.GetServer(ctx, store.ScopeOf(p), serverID); err != nil {
		return domain.Job{}, err
	}
	if _, err := s.Assign(ctx, p, userID, domain.TargetServer, serverID, profileID); err != nil {
		return domain.Job{}, err
	}
	return s.UserOp(ctx, p, serverID, actions.LinuxUserApply, userID, false)
}

// RemoveUserFromServer drops a user's server assignment; the account goes
// unless a group still assigns the user to the server (then its profile
// is re-applied).
func (s *Service) RemoveUserFromServer(ctx context.Context, p *domain.Principal, serverID, userID string, removeHome bool) (domain.Job, error) {
	if _, err := s.store.GetServer(ctx, store.ScopeOf(p), serverID); err != nil {
		return domain.Job{}, err
	}
	if err := s.Unassign(ctx, p, userID, domain.TargetServer, serverID); err != nil && !isNotFound(err) {
		return domain.Job{}, err
	}
	srv, err := s.store.GetServer(ctx, store.ScopeOf(p), serverID)
	if err != nil {
		return domain.Job{}, err
	}
	st, err := s.stateOf(ctx, srv)
	if err != nil {
		return domain.Job{}, err
	}
	if _, still := st.assigned[userID]; still {
		// A group keeps the user on the server: its profile applies now.
		return s.UserOp(ctx, p, serverID, actions.LinuxUserApply, userID, false)
	}
	return s.UserOp(ctx, p, serverID, actions.LinuxUserRemove, userID, removeHome)
}

// UserOp runs one operation for one catalogue user on a server: apply,
// enable (both need an assignment), disable, remove (refused while the
// user is assigned to the server: the next sync would bring it back).
// Like sync-users, it is a server operation: servers:write on a server
// the caller sees is enough (a manager within the groups), because it
// applies or takes away only what an administrator assigned; assignments
// themselves (assign-user, remove-user, the catalogue) stay admin-only.
func (s *Service) UserOp(ctx context.Context, p *domain.Principal, serverID, op, userID string, removeHome bool) (domain.Job, error) {
	srv, err := s.store.GetServer(ctx, store.ScopeOf(p), serverID)
	if err != nil {
		return domain.Job{}, err
	}
	u, err := s.store.GetLinuxUser(ctx, userID)
	if err != nil {
		return domain.Job{}, err
	}
	st, err := s.stateOf(ctx, srv)
	if err != nil {
		return domain.Job{}, err
	}
	prof, assigned := st.assigned[u.ID]
	spec := actions.LinuxUserSpec{UserID: u.ID, Op: op, Username: u.Username, RemoveHome: removeHome}
	if prov, ok := st.provisions[u.ID]; ok {
		spec.ProfileSlug = prov.ProfileSlug
	}
	switch {
	case op == actions.LinuxUserRemove && assigned:
		return domain.Job{}, domain.Conflict("still_assigned", fmt.Sprintf("%s is assigned to this server (directly or through a group): remove the assignment, or disable the account", u.Username))
	case op == actions.LinuxUserApply || op == actions.LinuxUserEnable:
		if !assigned {
			return domain.Job{}, domain.Conflict("not_assigned", fmt.Sprintf("%s is not assigned to this server (directly or through a group)", u.Username))
		}
		if spec, err = s.applySpec(ctx, st, u, prof, op); err != nil {
			return domain.Job{}, err
		}
	case op == actions.LinuxUserDisable:
		if _, ok := st.provisions[u.ID]; !ok {
			return domain.Job{}, domain.Conflict("not_provisioned", fmt.Sprintf("%s has no account on this server", u.Username))
		}
	}
	return s.submit(ctx, p, srv, actions.LinuxUsersParams{Users: []actions.LinuxUserSpec{spec}, Op: op, Username: u.Username})
}

// UserOpByName is UserOp for an account name of the server's scan or
// provisions (the server page acts on accounts by name).
func (s *Service) UserOpByName(ctx context.Context, p *domain.Principal, serverID, op, username string, removeHome bool) (domain.Job, error) {
	provs, err := s.store.ListLinuxUserProvisions(ctx, "", serverID)
	if err != nil {
		return domain.Job{}, err
	}
	for _, pr := range provs {
		if pr.Username == username {
			return s.UserOp(ctx, p, serverID, op, pr.UserID, removeHome)
		}
	}
	users, err := s.store.ListLinuxUsers(ctx)
	if err != nil {
		return domain.Job{}, err
	}
	for _, u := range users {
		if u.Username == username {
			return s.UserOp(ctx, p, serverID, op, u.ID, removeHome)
		}
	}
	return domain.Job{}, domain.NotFound("Linux user " + username + " in the catalogue")
}

// RemoveFromServers drops every assignment of a user and removes the
// account from every server it is provisioned on (one job per server).
func (s *Service) RemoveFromServers(ctx context.Context, p *domain.Principal, userID string, removeHome bool) ([]domain.Job, error) {
	if err := requireAdmin(p); err != nil {
		return nil, err
	}
	u, err := s.store.GetLinuxUser(ctx, userID)
	if err != nil {
		return nil, err
	}
	as, err := s.store.ListLinuxUserAssignments(ctx, userID)
	if err != nil {
		return nil, err
	}
	for _, a := range as {
		if err := s.store.DeleteLinuxUserAssignment(ctx, userID, a.TargetType, a.TargetID); err != nil && !isNotFound(err) {
			return nil, err
		}
	}
	provs, err := s.store.ListLinuxUserProvisions(ctx, userID, "")
	if err != nil {
		return nil, err
	}
	jobs := []domain.Job{}
	var errs []error
	for _, pr := range provs {
		srv, err := s.store.GetServer(ctx, store.SystemScope, pr.ServerID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		j, err := s.submit(ctx, p, srv, actions.LinuxUsersParams{Op: actions.LinuxUserRemove, Username: u.Username,
			Users: []actions.LinuxUserSpec{{UserID: u.ID, Op: actions.LinuxUserRemove, Username: u.Username, ProfileSlug: pr.ProfileSlug, RemoveHome: removeHome}}})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		jobs = append(jobs, j)
	}
	return jobs, errors.Join(errs...)
}

// Scan submits an account scan of a server.
func (s *Service) Scan(ctx context.Context, p *domain.Principal, serverID string) (domain.Job, error) {
	if s.jobs == nil {
		return domain.Job{}, domain.Unavailable("no_jobs", "scans are not available")
	}
	return s.jobs.Submit(ctx, p, serverID, domain.JobLinuxUserScan, struct{}{})
}

// ServerUsers is a server's Users tab: the last scan and LCM's provisions.
type ServerUsers struct {
	ScannedAt  *time.Time                  `json:"scanned_at"`
	Accounts   []actions.Account           `json:"accounts"`
	Provisions []domain.LinuxUserProvision `json:"-"`
}

// ServerUsers returns the last scan and the provisions of a server.
func (s *Service) ServerUsers(ctx context.Context, p *domain.Principal, serverID string) (ServerUsers, error) {
	if _, err := s.store.GetServer(ctx, store.ScopeOf(p), serverID); err != nil {
		return ServerUsers{}, err
	}
	out := ServerUsers{Accounts: []actions.Account{}}
	sc, err := s.store.GetLinuxUserScan(ctx, serverID)
	switch {
	case err == nil:
		if err := json.Unmarshal(sc.Accounts, &out.Accounts); err != nil {
			return out, err
		}
		out.ScannedAt = &sc.ScannedAt
	case !isNotFound(err):
		return out, err
	}
	if out.Provisions, err = s.store.ListLinuxUserProvisions(ctx, "", serverID); err != nil {
		return out, err
	}
	return out, nil
}

// GroupMembershipChanged follows a server joining or leaving a group: when
// Linux users are assigned to the group (or provisioned on the server), a
// sync job gives the server the group's users or removes them (unless
// another assignment keeps them). A busy server is logged; its pending
// syncs show what is left and sync-users catches up.
func (s *Service) GroupMembershipChanged(ctx context.Context, groupID, serverID string, joined bool) {
	if s.jobs == nil {
		return
	}
	as, err := s.store.ListLinuxUserAssignments(ctx, "")
	if err != nil {
		s.log.Error("linux users: group change", "group_id", groupID, "server_id", serverID, "err", err)
		return
	}
	relevant := false
	for _, a := range as {
		relevant = relevant || a.TargetType == domain.TargetGroup && a.TargetID == groupID
	}
	if !relevant {
		return
	}
	srv, err := s.store.GetServer(ctx, store.SystemScope, serverID)
	if err != nil || !srv.Joined {
		return
	}
	specs, err := s.Plan(ctx, srv)
	if err != nil || len(specs) == 0 {
		return
	}
	j, err := s.jobs.SubmitServer(ctx, nil, srv, domain.JobLinuxUser, actions.LinuxUsersParams{Users: specs})
	if err != nil {
		s.log.Warn("linux users: sync after a group change not started; run sync-users", "server_id", serverID, "group_id", groupID, "joined", joined, "err", err)
		return
	}
	s.log.Info("linux users: sync after a group change", "server_id", serverID, "group_id", groupID, "joined", joined, "job_id", j.ID)
}

package fleet

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/jobs"
	"github.com/lcmproject/lcm/internal/pkgmgr"
	"github.com/lcmproject/lcm/internal/store"
)

// Bulk actions: what one request can run on many servers. Each maps to
// the job the single-server route starts.
var bulkActions = map[string]struct {
	kind   domain.JobKind
	pkgAct actions.PkgAction // for package-action jobs
}{
	"refresh":            {kind: domain.JobRefresh},
	"connectivity-check": {kind: domain.JobConnectivity},
	"upgrade-security":   {kind: domain.JobUpgradeSecurity},
	"upgrade-all":        {kind: domain.JobPackageAction, pkgAct: actions.PkgUpgradeAll},
	"refresh-lists":      {kind: domain.JobPackageAction, pkgAct: actions.PkgRefreshLists},
	"autoremove":         {kind: domain.JobPackageAction, pkgAct: actions.PkgAutoremove},
	"kernel-cleanup":     {kind: domain.JobPackageAction, pkgAct: actions.PkgKernelCleanup},
}

// BulkActions lists the actions a bulk run accepts, sorted.
func BulkActions() []string {
	return []string{"autoremove", "connectivity-check", "kernel-cleanup", "refresh", "refresh-lists", "upgrade-all", "upgrade-security"}
}

// MaxBulkSelection bounds an explicit selection of server ids.
const MaxBulkSelection = 10000

// UpdateAllAction is the bulk action name of the security page's "update
// all": a security upgrade of every server the caller may manage, one run
// at a time.
const UpdateAllAction = "update-all"

// BulkRequest is one bulk run: an action and exactly one target — server
// ids, a group, or all servers the caller may manage.
type BulkRequest struct {
	Action    string
	ServerIDs []string
	GroupID   string
	All       bool
}

// Bulk starts one job per target server. Servers the caller cannot see
// make the whole request fail (403, naming them) before anything starts;
// servers that cannot run the action now (not joined, busy, no security
// channel) are refused one by one in the run's items. The jobs are
// inserted and published in batches (jobs.SubmitBulk).
func (s *Service) Bulk(ctx context.Context, p *domain.Principal, r BulkRequest) (domain.BulkRun, error) {
	act, ok := bulkActions[r.Action]
	if !ok {
		return domain.BulkRun{}, domain.Invalid("unknown_action",
			fmt.Sprintf("unknown bulk action %q; one of: %s", r.Action, strings.Join(BulkActions(), ", ")))
	}
	return s.bulk(ctx, p, r, r.Action, act.kind, act.pkgAct)
}

// UpdateAll is the security page's "update all VMs": upgrade-security on
// every server p may manage. Only one such run at a time: while p's (for
// an admin: anyone's) latest one still has jobs pending or running, a new
// one is refused with a conflict naming it.
func (s *Service) UpdateAll(ctx context.Context, p *domain.Principal) (domain.BulkRun, error) {
	last, err := s.jobs.LatestBulk(ctx, p, UpdateAllAction)
	switch {
	case err == nil && !last.Progress().Done:
		return domain.BulkRun{}, &domain.Error{Kind: domain.ErrConflict, Code: "bulk_in_progress",
			Message: fmt.Sprintf("an update-all run (%s) is still in progress; wait for it to finish", last.ID)}
	case err != nil && !errors.Is(err, domain.ErrNotFound):
		return domain.BulkRun{}, err
	}
	return s.bulk(ctx, p, BulkRequest{All: true}, UpdateAllAction, domain.JobUpgradeSecurity, "")
}

// LatestUpdateAll returns p's newest update-all run.
func (s *Service) LatestUpdateAll(ctx context.Context, p *domain.Principal) (domain.BulkRun, error) {
	return s.jobs.LatestBulk(ctx, p, UpdateAllAction)
}

// GetBulk returns a bulk run visible to p.
func (s *Service) GetBulk(ctx context.Context, p *domain.Principal, id string) (domain.BulkRun, error) {
	return s.jobs.GetBulk(ctx, p, id)
}

func (s *Service) bulk(ctx context.Context, p *domain.Principal, r BulkRequest, action string, kind domain.JobKind, pkgAct actions.PkgAction) (domain.BulkRun, error) {
	targets := 0
	if len(r.ServerIDs) > 0 {
		targets++
	}
	if r.GroupID != "" {
		targets++
	}
	if r.All {
		targets++
	}
	if targets != 1 {
		return domain.BulkRun{}, domain.Invalid("invalid_target", "give exactly one target: server_ids (a non-empty list), group_id, or all: true")
	}
	run := domain.BulkRun{Action: action, Kind: kind, CreatedBy: principalUserID(p)}
	sc := store.ScopeOf(p)
	switch {
	case len(r.ServerIDs) > 0:
		if len(r.ServerIDs) > MaxBulkSelection {
			return domain.BulkRun{}, domain.Invalid("selection_too_large", fmt.Sprintf("at most %d server ids per request; use group_id or all", MaxBulkSelection))
		}
		for _, id := range r.ServerIDs {
			if id == "" || len(id) > 36 {
				return domain.BulkRun{}, domain.Invalid("invalid_server_id", "server_ids must hold server ids")
			}
		}
		run.Target = domain.BulkTargetServers
	case r.GroupID != "":
		if _, err := s.store.GetGroup(ctx, sc, r.GroupID); err != nil {
			return domain.BulkRun{}, err
		}
		run.Target, run.GroupID = domain.BulkTargetGroup, r.GroupID
	default:
		run.Target = domain.BulkTargetAll
	}
	list, missing, err := s.store.BulkTargets(ctx, sc, r.ServerIDs, r.GroupID, r.All)
	if err != nil {
		return domain.BulkRun{}, err
	}
	if len(missing) > 0 {
		shown := missing
		if len(shown) > 5 {
			shown = shown[:5]
		}
		return domain.BulkRun{}, &domain.Error{Kind: domain.ErrForbidden, Code: "servers_out_of_scope",
			Message: fmt.Sprintf("%d of the selected servers do not exist or are outside your groups (%s); nothing was started",
				len(missing), strings.Join(shown, ", "))}
	}
	if len(list) == 0 {
		return domain.BulkRun{}, domain.Invalid("no_servers", "the target holds no servers")
	}
	var todo []jobs.BulkJob
	var refused []domain.BulkItem
	for _, t := range list {
		if !t.Joined {
			refused = append(refused, domain.BulkItem{ServerID: t.ID, ServerName: t.Name, Refused: "not_joined",
				Reason: "the server has not joined yet; run join first"})
			continue
		}
		if reason := unsupported(t, kind, pkgAct); reason != "" {
			refused = append(refused, domain.BulkItem{ServerID: t.ID, ServerName: t.Name, Refused: "unsupported_action", Reason: reason})
			continue
		}
		j := jobs.BulkJob{Target: t, Kind: kind}
		if kind == domain.JobPackageAction {
			j.Params = actions.PackageParams{Action: pkgAct}
		}
		todo = append(todo, j)
	}
	return s.jobs.SubmitBulk(ctx, run, todo, refused)
}

// unsupported says why a server's package manager cannot do the action
// ("" when it can, or when the family is not recorded yet: the worker then
// detects the manager, as the single-server routes do).
func unsupported(t store.BulkTarget, kind domain.JobKind, act actions.PkgAction) string {
	if t.PackageFamily == "" || (kind != domain.JobUpgradeSecurity && kind != domain.JobPackageAction) {
		return ""
	}
	m, err := pkgmgr.New(pkgmgr.Family(t.PackageFamily))
	if err != nil {
		return err.Error()
	}
	if kind == domain.JobUpgradeSecurity {
		act = actions.PkgUpgradeSecurity
	}
	if _, err := actions.PackageCommand(m, act, nil); err != nil {
		var ue *pkgmgr.UnsupportedError
		if errors.As(err, &ue) {
			return ue.Answer
		}
		return err.Error()
	}
	return ""
}

func principalUserID(p *domain.Principal) string {
	if p == nil {
		return ""
	}
	return p.UserID
}

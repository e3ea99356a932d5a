package fleet

import (
	"context"
	"errors"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/pkgmgr"
	"github.com/lcmproject/lcm/internal/store"
)

// Refresh runs a refresh job (facts and package inventory) on a visible
// server.
func (s *Service) Refresh(ctx context.Context, p *domain.Principal, id string) (domain.Job, error) {
	return s.jobs.Submit(ctx, p, id, domain.JobRefresh, nil)
}

// Reboot reboots a visible server and waits for it to come back.
func (s *Service) Reboot(ctx context.Context, p *domain.Principal, id string) (domain.Job, error) {
	return s.jobs.Submit(ctx, p, id, domain.JobReboot, nil)
}

// PackageAction runs a package action on a visible server; the job ends
// with an inventory refresh. Bad names and actions the server's package
// manager cannot do are refused at once (400), before a job exists.
func (s *Service) PackageAction(ctx context.Context, p *domain.Principal, id string, action actions.PkgAction, names []string) (domain.Job, error) {
	if !action.Valid() {
		return domain.Job{}, domain.Invalid("unknown_action", "unknown package action "+string(action))
	}
	srv, err := s.store.GetServer(ctx, store.ScopeOf(p), id)
	if err != nil {
		return domain.Job{}, err
	}
	fam := pkgmgr.Family(srv.PackageFamily)
	if fam == "" {
		// Not recorded yet: the worker detects the manager on the server;
		// the names are checked by APT's rules, which support every action.
		fam = pkgmgr.FamilyAPT
	}
	m, err := pkgmgr.New(fam)
	if err != nil {
		return domain.Job{}, err
	}
	if _, err := actions.PackageCommand(m, action, names); err != nil {
		var ue *pkgmgr.UnsupportedError
		if errors.As(err, &ue) {
			return domain.Job{}, &domain.Error{Kind: domain.ErrInvalid, Code: "unsupported_action", Message: ue.Answer}
		}
		return domain.Job{}, err
	}
	return s.jobs.SubmitServer(ctx, p, srv, domain.JobPackageAction, actions.PackageParams{Action: action, Names: names})
}

// SubmitToAll submits a job of kind to every joined server as the system
// (the scheduler's fleet-wide refresh and storage sample). Busy servers are
// skipped: they run a job now, and the next round catches them. It returns
// how many jobs were submitted.
func (s *Service) SubmitToAll(ctx context.Context, kind domain.JobKind) (int, error) {
	ids, err := s.store.ServerIDs(ctx, true)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, id := range ids {
		if ctx.Err() != nil {
			return n, ctx.Err()
		}
		srv, err := s.store.GetServer(ctx, store.SystemScope, id)
		if err != nil {
			if errors.Is(err, domain.ErrNotFound) {
				continue // deleted meanwhile
			}
			return n, err
		}
		if _, err := s.jobs.SubmitServer(ctx, nil, srv, kind, nil); err != nil {
			if errors.Is(err, domain.ErrConflict) { // *jobs.BusyError
				continue
			}
			return n, err
		}
		n++
	}
	s.log.Info("scheduled jobs submitted", "job_name", kind, "submitted", n, "skipped_busy", len(ids)-n)
	return n, nil
}

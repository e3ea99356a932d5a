package fleet

import (
	"context"
	"encoding/json"
	"time"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/store"
)

// registerHardening registers the finish hooks of the hardening jobs.
func (s *Service) registerHardening() {
	for _, k := range []domain.JobKind{domain.JobHardenSSH, domain.JobUnhardenSSH, domain.JobSSHRootLogin, domain.JobSSHPort} {
		s.jobs.OnFinish(k, s.afterSSHJob)
	}
	s.jobs.OnFinish(domain.JobRestrictSudo, s.afterSudoJob)
	for _, k := range domain.JobKinds {
		if domain.UsesHelper(k) {
			s.jobs.OnFinish(k, s.afterHelperJob)
		}
	}
	s.registerFirewall()
}

// HardenSSH writes and proves LCM's SSH hardening on a visible server.
// fixMain allows LCM's marked, reversible edit of the main sshd_config.
func (s *Service) HardenSSH(ctx context.Context, p *domain.Principal, id string, fixMain bool) (domain.Job, error) {
	return s.submitSSH(ctx, p, id, domain.JobHardenSSH, actions.HardenParams{FixMainConfig: fixMain})
}

// UnhardenSSH removes LCM's SSH hardening from a visible server.
func (s *Service) UnhardenSSH(ctx context.Context, p *domain.Principal, id string) (domain.Job, error) {
	return s.submitSSH(ctx, p, id, domain.JobUnhardenSSH, nil)
}

// SetSSHRootLogin allows (key only) or forbids root's SSH login.
func (s *Service) SetSSHRootLogin(ctx context.Context, p *domain.Principal, id string, enabled bool) (domain.Job, error) {
	return s.submitSSH(ctx, p, id, domain.JobSSHRootLogin, actions.RootLoginParams{Enabled: enabled})
}

// SetSSHPort moves sshd to port; the server's stored port changes only
// after a fresh login on the new port worked.
func (s *Service) SetSSHPort(ctx context.Context, p *domain.Principal, id string, port int) (domain.Job, error) {
	if port < 1 || port > 65535 {
		return domain.Job{}, domain.Invalid("invalid_port", "port must be 1-65535")
	}
	return s.submitSSH(ctx, p, id, domain.JobSSHPort, actions.SSHPortParams{Port: port})
}

// submitSSH refuses a device LCM logs in to without a key: turning
// password logins off there would lock LCM out.
func (s *Service) submitSSH(ctx context.Context, p *domain.Principal, id string, kind domain.JobKind, params any) (domain.Job, error) {
	srv, err := s.store.GetServer(ctx, store.ScopeOf(p), id)
	if err != nil {
		return domain.Job{}, err
	}
	if srv.Joined {
		_, sec, err := s.store.ServerSecretsOf(ctx, srv.ID)
		if err != nil {
			return domain.Job{}, err
		}
		if sec.PrivateKey == "" {
			return domain.Job{}, domain.Conflict("password_login", "LCM logs in to this device with a password only; changing its sshd could lock LCM out, so LCM does not")
		}
	}
	return s.jobs.SubmitServer(ctx, p, srv, kind, params)
}

// afterSSHJob stores what an SSH job proved — also when it failed: a
// rollback that read back "yes" proves the server is not hardened. An
// unproven result changes nothing.
func (s *Service) afterSSHJob(ctx context.Context, job domain.Job) error {
	var res actions.Result
	if len(job.Result) == 0 || json.Unmarshal(job.Result, &res) != nil || res.SSH == nil || !res.SSH.Proven {
		return nil
	}
	at := time.Now().UTC()
	if job.FinishedAt != nil {
		at = *job.FinishedAt
	}
	// Each job proves its own part: harden and unharden the password
	// setting of the management user's connection, ssh-root-login root's.
	p := store.SSHProof{Lines: res.SSH.Lines, At: at}
	// A successful SSH job ended with a fresh login on the server's port
	// (ssh-port: on the new one).
	p.PortProven = job.Status == domain.JobSuccess
	switch job.Kind {
	case domain.JobSSHRootLogin:
		p.RootLogin = res.SSH.RootLogin
	case domain.JobSSHPort:
		if job.Status == domain.JobSuccess && res.SSH.Port > 0 {
			// The new port is proven: store it with its time, and drop
			// pooled connections to the old one (new credential version).
			p.Port = res.SSH.Port
			if err := s.store.RecordSSHProof(ctx, job.ServerID, p); err != nil {
				return err
			}
			return s.store.BumpCredVersion(ctx, job.ServerID)
		}
	default:
		h := res.SSH.Hardened()
		p.Hardened = &h
	}
	return s.store.RecordSSHProof(ctx, job.ServerID, p)
}

// RestrictSudo switches the management user's sudo mode (full or
// restricted) on a visible server; the stored mode changes only on proof.
func (s *Service) RestrictSudo(ctx context.Context, p *domain.Principal, id, mode string) (domain.Job, error) {
	if mode != domain.SudoFull && mode != domain.SudoRestricted {
		return domain.Job{}, domain.Invalid("invalid_mode", `mode must be "restricted" or "full"`)
	}
	return s.jobs.Submit(ctx, p, id, domain.JobRestrictSudo, actions.RestrictSudoParams{Mode: mode})
}

// afterSudoJob stores the sudo mode a job proved (also the full mode a
// failed switch restored) and the helper it installed or read back; an
// unproven result changes nothing.
func (s *Service) afterSudoJob(ctx context.Context, job domain.Job) error {
	var res actions.Result
	if len(job.Result) == 0 || json.Unmarshal(job.Result, &res) != nil {
		return nil
	}
	at := time.Now().UTC()
	if job.FinishedAt != nil {
		at = *job.FinishedAt
	}
	if h := res.Helper; h != nil && h.Version != "" {
		if err := s.store.RecordHelper(ctx, job.ServerID, h.Version, h.SHA256, at); err != nil {
			return err
		}
	}
	if res.Sudo == nil || !res.Sudo.Proven || res.Sudo.Mode == "" {
		return nil
	}
	return s.store.RecordSudoMode(ctx, job.ServerID, res.Sudo.Mode, at)
}

// afterHelperJob follows a job that used lcm-helper in restricted mode:
// the helper as read back (or upgraded) at its start, and the sudo mode
// an upgrade proved — restricted again, or full when the upgrade failed
// and full mode came back.
func (s *Service) afterHelperJob(ctx context.Context, job domain.Job) error {
	return s.afterSudoJob(ctx, job)
}

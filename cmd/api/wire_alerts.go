package main

import (
	"context"

	"github.com/lcmproject/lcm/internal/alerts"
	"github.com/lcmproject/lcm/internal/auth/mail"
	"github.com/lcmproject/lcm/internal/config"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/jobs"
	"github.com/lcmproject/lcm/internal/safe"
)

// wireAlerts builds the alerts service and moves config.json's SMTP
// settings into the encrypted system mail channel on the first start that
// sees them (the password is then deleted from the file; the database is
// authoritative after that). It returns the mailer account e-mails use:
// it reads the system mail channel at every send.
func (a *app) wireAlerts(ctx context.Context) (*alerts.Service, *mail.Sender, error) {
	svc := alerts.New(a.store, alerts.Options{Log: a.log, Fleet: a.fleetState})
	c := a.cfg.SMTP
	imported, err := svc.ImportMailConfig(ctx, mail.Config{Host: c.Host, Port: c.Port, From: c.From, Username: c.Username, Password: c.Password, TLS: c.TLS})
	if err != nil {
		return nil, nil, err
	}
	if imported {
		a.log.Info("moved the SMTP settings of config.json into the encrypted system mail channel (settings → mail)")
	}
	if _, configured, err := svc.SystemMail(ctx); err == nil && configured && a.cfg.Path != "" {
		removed, err := config.RemoveSMTPPassword(a.cfg.Path)
		switch {
		case err != nil:
			a.log.Warn("could not remove smtp.password from config.json; remove it by hand", "path", a.cfg.Path, "err", err)
		case removed:
			a.log.Info("removed smtp.password from config.json: it is stored encrypted in the database", "path", a.cfg.Path)
		}
	}
	a.alerts = svc
	go safe.Supervise(ctx, "alerts", svc.Run)
	return svc, mail.NewFromSource(svc.SystemMailConfig), nil
}

// registerAlertHooks evaluates the rules at once when jobs finish: a failed
// job, a server that became unreachable or a refresh that changed its facts
// may change the answer (one evaluation per burst, alerts.DefaultDebounce).
func registerAlertHooks(js *jobs.Service, svc *alerts.Service) {
	for _, k := range domain.JobKinds {
		js.OnFinishBatch(k, func(ctx context.Context, jobs []domain.Job) []error {
			svc.Trigger()
			return make([]error, len(jobs))
		})
	}
}

// fleetState is what the fleet-wide alert rules read: the vulnerability
// database's newest record (from the scanners) and the last successful
// system backup (from the backup service). A source that is not wired or
// cannot answer stays unknown, and its rule says so instead of firing.
func (a *app) fleetState(ctx context.Context) (alerts.FleetState, error) {
	var f alerts.FleetState
	if v := a.vulns.Load(); v != nil {
		if st, err := v.Status(ctx); err == nil && st.Newest != nil {
			f.VulnDBUpdatedAt, f.VulnDBKnown = *st.Newest, true
		}
	}
	if b := a.backup; b != nil {
		if st, err := b.Status(ctx); err == nil {
			// Known also when there never was one: "never" is overdue.
			f.BackupKnown = true
			if st.LastSuccess != nil {
				f.LastBackupAt = *st.LastSuccess
			}
		}
	}
	return f, nil
}

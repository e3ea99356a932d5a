package main

import (
	"context"
	"path/filepath"

	"github.com/lcmproject/lcm/internal/advisories"
	"github.com/lcmproject/lcm/internal/alerts"
	"github.com/lcmproject/lcm/internal/bus"
	"github.com/lcmproject/lcm/internal/scanner"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/vulnsvc"
)

// wireAdvisories builds the early warning: its mirror lives in
// <data dir>/osv-mirror, mirrored exports go to the scanners through the
// vulnerability service, and findings it creates trigger an alert
// evaluation ("early-warning findings created").
func (a *app) wireAdvisories(vulnSvc *vulnsvc.Service, al *alerts.Service) *advisories.Service {
	cl := &scanner.Client{Bus: a.bus}
	return advisories.New(a.store, advisories.Options{Log: a.log, MirrorDir: filepath.Join(a.dataDir, "osv-mirror"),
		Uploader:  vulnSvc,
		OnCreated: func(context.Context, []store.EarlyWarning) { al.Trigger() },
		ScannerCache: func(ctx context.Context) (*bus.CacheCounters, bool) {
			st, ok := cl.Status(ctx)
			return st.Cache, ok && st.Cache != nil
		}})
}

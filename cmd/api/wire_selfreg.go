package main

import (
	"context"

	"github.com/lcmproject/lcm/internal/fleet"
	"github.com/lcmproject/lcm/internal/safe"
	"github.com/lcmproject/lcm/internal/selfreg"
)

// wireSelfReg registers the deletion hook that sets self_server_disabled
// and, outside demo mode, runs the self-registration of this host in the
// background. The handover file is deleted whatever the outcome, in demo
// mode too.
func (a *app) wireSelfReg(ctx context.Context, fl *fleet.Service) {
	fl.OnDeleted(selfreg.OnDeleted(a.store, a.log))
	if a.cfg.Demo {
		selfreg.DiscardHandover(a.dataDir, a.log)
		return
	}
	go func() {
		defer safe.Recover("self-registration")
		d, err := selfreg.Run(ctx, selfreg.Deps{Store: a.store, Fleet: fl, Log: a.log, DataDir: a.dataDir})
		switch {
		case err != nil:
			a.log.Error("self-registration failed", "reason", d.Reason, "err", err)
		case !d.Register:
			a.log.Debug("self-registration skipped", "reason", d.Reason)
		}
	}()
}

package main

import (
	"context"

	"github.com/lcmproject/lcm/internal/demo"
	"github.com/lcmproject/lcm/internal/inventory"
	"github.com/lcmproject/lcm/internal/jobs"
	"github.com/lcmproject/lcm/internal/status"
)

// wireDemo, in demo mode, seeds the example data (idempotent) and makes
// the demo servers' jobs simulated. Outside demo mode the simulator is
// still installed when demo servers exist, so they are never contacted.
func (a *app) wireDemo(ctx context.Context, js *jobs.Service, inv *inventory.Service, st *status.Service) error {
	if !a.cfg.Demo {
		ids, err := demo.IDs(ctx, a.store)
		if err != nil || len(ids) == 0 {
			return err
		}
	}
	js.SetSimulator(demo.Simulator(a.store, a.log))
	if !a.cfg.Demo {
		return nil
	}
	_, err := demo.Seed(ctx, demo.Deps{Store: a.store, Inventory: inv, Status: st, Log: a.log})
	return err
}

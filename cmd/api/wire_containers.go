package main

import (
	"context"

	"github.com/lcmproject/lcm/internal/containersvc"
	"github.com/lcmproject/lcm/internal/inventory"
	"github.com/lcmproject/lcm/internal/jobs"
	"github.com/lcmproject/lcm/internal/registrysvc"
	"github.com/lcmproject/lcm/internal/status"
)

// wireContainers builds the containers service (issue 15) and registers
// its job finish hook; the container inventories regular refresh jobs read
// reach it through the inventory ingest. The newer-image check asks the
// registries through the registry service (stored credentials, shared
// caches).
func (a *app) wireContainers(js *jobs.Service, inv *inventory.Service, reg *registrysvc.Service, st *status.Service) *containersvc.Service {
	svc := containersvc.New(a.store, js, a.log)
	svc.RegisterJobs()
	if inv != nil {
		inv.OnContainers(svc.IngestRefreshes)
	}
	if st != nil {
		// Newer images are a yellow insight of the traffic light.
		svc.OnUpdatesChecked(func(ctx context.Context, serverID string) {
			if _, err := st.Recompute(ctx, serverID); err != nil {
				a.log.Warn("status recompute after the newer-image check", "server_id", serverID, "err", err)
			}
		})
	}
	if reg != nil {
		svc.SetUpdateChecker(containersvc.RegistryChecker(reg))
	}
	return svc
}

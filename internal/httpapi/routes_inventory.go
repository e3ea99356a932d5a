package httpapi

import (
	"net/http"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/domain"
)

// routesInventory: hardware, packages, storage history and the fleet
// package overview (issue 5), and the jobs that change or refresh them:
// package actions (each ends with an inventory refresh), the refresh and
// reboot. Every per-server route 404s for a server outside the caller's
// groups; the POSTs answer like upgrade-security (202 started, 409 blocked).
func (s *Server) routesInventory() {
	w := Need(domain.PermServersWrite)
	s.handle(http.MethodPost, "/api/v1/servers/:id/packages/refresh", w, s.packageAction(actions.PkgRefreshLists))
	s.handle(http.MethodPost, "/api/v1/servers/:id/packages/upgrade-all", w, s.packageAction(actions.PkgUpgradeAll))
	s.handle(http.MethodPost, "/api/v1/servers/:id/packages/update", w, s.packageAction(actions.PkgUpdate))
	s.handle(http.MethodPost, "/api/v1/servers/:id/packages/remove", w, s.packageAction(actions.PkgRemove))
	s.handle(http.MethodPost, "/api/v1/servers/:id/packages/autoremove", w, s.packageAction(actions.PkgAutoremove))
	s.handle(http.MethodPost, "/api/v1/servers/:id/packages/hold", w, s.packageAction(actions.PkgHold))
	s.handle(http.MethodPost, "/api/v1/servers/:id/packages/unhold", w, s.packageAction(actions.PkgUnhold))
	s.handle(http.MethodPost, "/api/v1/servers/:id/kernels/cleanup", w, s.packageAction(actions.PkgKernelCleanup))
	s.handle(http.MethodPost, "/api/v1/servers/:id/refresh-all", w, s.refreshServer)
	s.handle(http.MethodPost, "/api/v1/servers/:id/reboot", w, s.rebootServer)
	s.handle(http.MethodGet, "/api/v1/servers/:id/hardware", Need(domain.PermServersRead), s.getServerHardware)
	s.handle(http.MethodGet, "/api/v1/servers/:id/packages", Need(domain.PermServersRead), s.listServerPackages)
	s.handle(http.MethodGet, "/api/v1/servers/:id/outdated-packages", Need(domain.PermServersRead), s.listOutdatedPackages)
	s.handle(http.MethodGet, "/api/v1/servers/:id/storage-history", Need(domain.PermServersRead), s.getStorageHistory)
	s.handle(http.MethodGet, "/api/v1/servers/:id/storage-volumes", Need(domain.PermServersRead), s.getStorageVolumes)
	s.handle(http.MethodPut, "/api/v1/servers/:id/storage-volumes", w, s.setStorageVolumes)
	s.handle(http.MethodGet, "/api/v1/packages/overview", Need(domain.PermPackagesRead), s.getPackageOverview)
	s.handle(http.MethodGet, "/api/v1/settings/schedules", Need(domain.PermSettingsManage), s.getSchedules)
	s.handle(http.MethodPut, "/api/v1/settings/schedules", Need(domain.PermSettingsManage), s.setSchedules)
}

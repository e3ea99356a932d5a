package httpapi

import (
	"net/http"

	"github.com/lcmproject/lcm/internal/domain"
)

// routesAutomation: group schedules with ordered rules, custom actions,
// maintenance mode and the system schedules overview (issue 20). Paths
// follow the reference product's where it names them.
func (s *Server) routesAutomation() {
	rm := Need(domain.PermRulesManage)
	s.handle(http.MethodGet, "/api/v1/server-groups/:id/schedules", rm, s.listGroupSchedules)
	s.handle(http.MethodPost, "/api/v1/server-groups/:id/schedules/define", rm, s.defineSchedule)
	s.handle(http.MethodGet, "/api/v1/server-groups/:id/rules", rm, s.listGroupRules)
	s.handle(http.MethodPost, "/api/v1/server-groups/:id/rules/define", rm, s.defineRule)
	s.handle(http.MethodGet, "/api/v1/server-groups/:id/automation", rm, s.getGroupAutomation)
	s.handle(http.MethodPut, "/api/v1/server-groups/:id/automation", rm, s.setGroupAutomation)
	s.handle(http.MethodGet, "/api/v1/rules", rm, s.listRules)
	s.handle(http.MethodGet, "/api/v1/rule-types", rm, s.ruleTypes)
	s.handle(http.MethodPatch, "/api/v1/rules/:id/update", rm, s.updateRule)
	s.handle(http.MethodDelete, "/api/v1/rules/:id/remove", rm, s.removeRule)
	s.handle(http.MethodPost, "/api/v1/rules/:id/enable", rm, s.enableRule)
	s.handle(http.MethodPost, "/api/v1/rules/:id/disable", rm, s.disableRule)
	s.handle(http.MethodPost, "/api/v1/rules/:id/trigger-now", rm, s.triggerRule)
	s.handle(http.MethodGet, "/api/v1/schedules/:id", rm, s.getSchedule)
	s.handle(http.MethodPatch, "/api/v1/schedules/:id/update", rm, s.updateSchedule)
	s.handle(http.MethodDelete, "/api/v1/schedules/:id/remove", rm, s.removeSchedule)
	s.handle(http.MethodPost, "/api/v1/schedules/:id/enable", rm, s.enableSchedule)
	s.handle(http.MethodPost, "/api/v1/schedules/:id/disable", rm, s.disableSchedule)
	s.handle(http.MethodPost, "/api/v1/schedules/:id/trigger-now", rm, s.triggerSchedule)
	s.handle(http.MethodGet, "/api/v1/schedules/:id/history", rm, s.scheduleHistory)

	// Custom actions: readable with rules:manage; edited by admins only
	// (settings:manage, and the service checks the admin role) since they
	// run as root.
	s.handle(http.MethodGet, "/api/v1/custom-actions", rm, s.listCustomActions)
	s.handle(http.MethodPost, "/api/v1/custom-actions", Need(domain.PermSettingsManage), s.createCustomAction)
	s.handle(http.MethodPatch, "/api/v1/custom-actions/:id", Need(domain.PermSettingsManage), s.updateCustomAction)
	s.handle(http.MethodDelete, "/api/v1/custom-actions/:id", Need(domain.PermSettingsManage), s.deleteCustomAction)
	s.handle(http.MethodPost, "/api/v1/custom-actions/:id/run", rm, s.runCustomAction)

	// Maintenance mode.
	s.handle(http.MethodGet, "/api/v1/servers/:id/maintenance", Need(domain.PermServersRead), s.getMaintenance)
	s.handle(http.MethodPost, "/api/v1/servers/:id/maintenance/start", Need(domain.PermServersWrite), s.startMaintenance)
	s.handle(http.MethodPost, "/api/v1/servers/:id/maintenance/end", Need(domain.PermServersWrite), s.endMaintenance)

	// System schedules: the one registry of periodic tasks.
	sm := Need(domain.PermSettingsManage)
	s.handle(http.MethodGet, "/api/v1/system/schedules/overview", sm, s.systemSchedulesOverview)
	s.handle(http.MethodPost, "/api/v1/system/schedules/kind/:kind/trigger-now", sm, s.triggerSystemKind)
	s.handle(http.MethodPost, "/api/v1/system/schedules/:id/trigger-now", sm, s.triggerSystemTask)
}

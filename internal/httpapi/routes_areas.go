package httpapi

import (
	"github.com/lcmproject/lcm/internal/advisories"
	"github.com/lcmproject/lcm/internal/alerts"
	"github.com/lcmproject/lcm/internal/approvals"
	"github.com/lcmproject/lcm/internal/auth"
	"github.com/lcmproject/lcm/internal/automation"
	"github.com/lcmproject/lcm/internal/backup"
	"github.com/lcmproject/lcm/internal/containersvc"
	"github.com/lcmproject/lcm/internal/fleet"
	"github.com/lcmproject/lcm/internal/inventory"
	"github.com/lcmproject/lcm/internal/jobs"
	"github.com/lcmproject/lcm/internal/linuxusers"
	"github.com/lcmproject/lcm/internal/mcp"
	"github.com/lcmproject/lcm/internal/portal"
	"github.com/lcmproject/lcm/internal/recordsvc"
	"github.com/lcmproject/lcm/internal/registrysvc"
	"github.com/lcmproject/lcm/internal/rollout"
	"github.com/lcmproject/lcm/internal/schedule"
	"github.com/lcmproject/lcm/internal/speechsvc"
	"github.com/lcmproject/lcm/internal/status"
	"github.com/lcmproject/lcm/internal/updates"
	"github.com/lcmproject/lcm/internal/vulnsvc"
)

// Services holds the area services the routes call. Each area adds its
// service here when it lands.
type Services struct {
	// Auth is the identity service (issue 3): login, sessions, API keys,
	// users, roles, security settings, audit.
	Auth *auth.Service
	// Records is the records service (issue 7): projects, zones, record
	// sets, templates, sync groups, source hosts.
	Records *recordsvc.Service
	// Portal is the portal-message service (issue 8).
	Portal *portal.Service
	// Speech serves speech-to-text, voices and the speech settings (issue 8).
	Speech *speechsvc.Service
	// Fleet is the servers-and-groups service (issue 4).
	Fleet *fleet.Service
	// Jobs is the job ledger: history, output, live stream, abort (issue 4).
	Jobs *jobs.Service
	// Inventory serves hardware, packages and storage history (issue 5).
	Inventory *inventory.Service
	// Status is the traffic-light status service (issue 5).
	Status *status.Service
	// Schedules reads and changes the periodic tasks' schedules (issue 5).
	Schedules *schedule.Scheduler
	// MCP is the MCP listener's runtime switch (issue 19).
	MCP *mcp.Listener
	// Backups makes, lists and restores encrypted backups (issue 21).
	Backups *backup.Service
	// Alerts is notification channels, alert rules and history, and the
	// system mail channel (issue 17).
	Alerts *alerts.Service
	// LinuxUsers is the Linux users, privilege profiles and profile
	// blocks service (issue 14).
	LinuxUsers *linuxusers.Service
	// Vulns is vulnerability scanning: findings, SBOMs, scanner (issue 16).
	Vulns *vulnsvc.Service
	// Registries is the container registries' stored credentials and the
	// newer-image check (issue 15).
	Registries *registrysvc.Service
	// Advisories is the early warning: advisory polling, mirror,
	// early-warning findings, cache statistics.
	Advisories *advisories.Service
	// Updates checks the release feed for a newer LCM (issue 21).
	Updates *updates.Service
	// Rollouts runs fleet actions as staged rollouts; Approvals is the
	// four-eyes inbox (issue 20).
	Rollouts  *rollout.Service
	Approvals *approvals.Service
	// Containers is Docker and Podman on every server (issue 15).
	Containers *containersvc.Service
	// Automation is group schedules and rules, custom actions and
	// maintenance mode (issue 20).
	Automation *automation.Service
}

// routesAreas registers the routes of every area; each area adds one call
// to its own routes_<area>.go.
func (s *Server) routesAreas() {
	s.routesIdentity()
	s.routesRecords()
	s.routesPortal()
	s.routesAgents()
	s.routesSpeech()
	s.routesServers()
	s.routesGroups()
	s.routesJobs()
	s.routesBulk()
	s.routesRollouts()
	s.routesInventory()
	s.routesHardening()
	s.routesFirewall()
	s.routesMCP()
	s.routesSettings()
	s.routesBackups()
	s.routesAlerts()
	s.routesProfiles()
	s.routesLinuxUsers()
	s.routesServerUsers()
	s.routesSecurity()
	s.routesRegistries()
	s.routesAdvisories()
	s.routesDocs()
	s.routesUpdates()
	s.routesContainers()
	s.routesAutomation()
}

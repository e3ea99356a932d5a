package httpapi

import (
	"github.com/lcmproject/lcm/internal/auth"
	"github.com/lcmproject/lcm/internal/fleet"
	"github.com/lcmproject/lcm/internal/inventory"
	"github.com/lcmproject/lcm/internal/jobs"
	"github.com/lcmproject/lcm/internal/portal"
	"github.com/lcmproject/lcm/internal/recordsvc"
	"github.com/lcmproject/lcm/internal/schedule"
	"github.com/lcmproject/lcm/internal/speechsvc"
	"github.com/lcmproject/lcm/internal/status"
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
}

// routesAreas registers the routes of every area; each area adds one call
// to its own routes_<area>.go.
func (s *Server) routesAreas() {
	s.routesIdentity()
	s.routesRecords()
	s.routesPortal()
	s.routesSpeech()
	s.routesServers()
	s.routesGroups()
	s.routesJobs()
	s.routesInventory()
}

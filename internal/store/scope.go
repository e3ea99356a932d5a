package store

import (
	"gorm.io/gorm"

	"github.com/lcmproject/lcm/internal/domain"
)

// Scope is whose servers a query may see. Build it with ScopeOf for a
// request's principal, or use SystemScope for the control plane's own work
// (ingest, reaper, credential responder). Every server-bearing query takes a
// Scope and filters through applyServerScope, the one place that encodes
// "a manager sees only the servers of its groups".
type Scope struct {
	all    bool
	userID string
}

// SystemScope sees every server.
var SystemScope = Scope{all: true}

// ScopeOf returns the scope of a principal: admin sees all; everyone else
// sees the servers of the groups they manage; nil sees nothing.
func ScopeOf(p *domain.Principal) Scope {
	switch {
	case p == nil:
		return Scope{}
	case p.IsAdmin():
		return Scope{all: true}
	default:
		return Scope{userID: p.UserID}
	}
}

// All reports whether the scope is unrestricted.
func (sc Scope) All() bool { return sc.all }

// applyServerScope restricts q to rows whose column (a server id) names a
// server visible in sc.
func applyServerScope(q *gorm.DB, column string, sc Scope) *gorm.DB {
	if sc.all {
		return q
	}
	if sc.userID == "" {
		return q.Where("1 = 0")
	}
	return q.Where(column+` IN (SELECT gs.server_id FROM group_servers gs
		JOIN group_managers gm ON gm.group_id = gs.group_id WHERE gm.user_id = ?)`, sc.userID)
}

// applyGroupScope restricts q to groups (column = group id) sc manages.
func applyGroupScope(q *gorm.DB, column string, sc Scope) *gorm.DB {
	if sc.all {
		return q
	}
	if sc.userID == "" {
		return q.Where("1 = 0")
	}
	return q.Where(column+` IN (SELECT gm.group_id FROM group_managers gm WHERE gm.user_id = ?)`, sc.userID)
}

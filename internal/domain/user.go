package domain

import "slices"

// Permission codes, "<resource>:<action>". The set follows the reference
// product's 22 codes plus announcements:manage for portal messages.
const (
	PermUsersRead           = "users:read"
	PermUsersWrite          = "users:write"
	PermRolesRead           = "roles:read"
	PermRolesWrite          = "roles:write"
	PermServersRead         = "servers:read"
	PermServersWrite        = "servers:write"
	PermServersConsole      = "servers:console"
	PermGroupsRead          = "groups:read"
	PermGroupsWrite         = "groups:write"
	PermRulesManage         = "rules:manage"
	PermJobsRead            = "jobs:read"
	PermPackagesRead        = "packages:read"
	PermLinuxUsersRead      = "linuxusers:read"
	PermLinuxUsersWrite     = "linuxusers:write"
	PermProfilesRead        = "profiles:read"
	PermProfilesWrite       = "profiles:write"
	PermSettingsManage      = "settings:manage"
	PermBackupsManage       = "backups:manage"
	PermAuditRead           = "audit:read"
	PermAPIKeysManage       = "apikeys:manage"
	PermNotificationsManage = "notifications:manage"
	PermAlertsManage        = "alerts:manage"
	PermAnnouncementsManage = "announcements:manage"
)

// AllPermissions lists every permission code (seeded, granted to admin).
var AllPermissions = []string{
	PermUsersRead, PermUsersWrite, PermRolesRead, PermRolesWrite,
	PermServersRead, PermServersWrite, PermServersConsole,
	PermGroupsRead, PermGroupsWrite, PermRulesManage, PermJobsRead, PermPackagesRead,
	PermLinuxUsersRead, PermLinuxUsersWrite, PermProfilesRead, PermProfilesWrite,
	PermSettingsManage, PermBackupsManage, PermAuditRead, PermAPIKeysManage,
	PermNotificationsManage, PermAlertsManage, PermAnnouncementsManage,
}

// Seeded role names.
const (
	RoleAdmin   = "admin"
	RoleManager = "manager"
)

// ManagerPermissions is the manager role's set: it works on the servers of
// its assigned groups only.
var ManagerPermissions = []string{
	PermServersRead, PermServersWrite, PermGroupsRead, PermRulesManage, PermJobsRead, PermPackagesRead,
}

// SystemUsername is the seeded user for background processes; it can never
// log in with a password.
const SystemUsername = "system"

// Auth methods a principal can come from.
const (
	AuthJWT     = "jwt"
	AuthAPIKey  = "apikey"
	AuthSession = "session"
)

// API key scopes.
const (
	ScopeRead      = "read"
	ScopeReadWrite = "readwrite"
	ScopeMCP       = "mcp"
)

// Principal is the authenticated caller of one request: the user loaded
// fresh with roles and permissions, and how they authenticated.
type Principal struct {
	UserID      string
	Username    string
	Roles       []string
	Permissions map[string]bool
	// Method is AuthJWT, AuthAPIKey or AuthSession.
	Method string
	// APIKeyID and APIKeyScope are set for API-key requests.
	APIKeyID    string
	APIKeyScope string
	// Must2FASetup is true when a role requires 2FA and the user has none:
	// only the remediation allowlist is reachable.
	Must2FASetup bool
}

// Can reports whether the principal holds a permission.
func (p *Principal) Can(perm string) bool { return p != nil && p.Permissions[perm] }

// HasRole reports whether the principal has a role.
func (p *Principal) HasRole(role string) bool { return p != nil && slices.Contains(p.Roles, role) }

// IsAdmin reports whether the principal sees everything (role admin):
// server-group scoping does not apply to it.
func (p *Principal) IsAdmin() bool { return p.HasRole(RoleAdmin) }

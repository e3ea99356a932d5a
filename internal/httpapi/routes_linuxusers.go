package httpapi

import (
	"net/http"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/domain"
)

// routesProfiles: privilege profiles and profile blocks (issue 14). Reads
// need profiles:read; changes need profiles:write and, as content that
// runs as root, the admin role (the service checks).
func (s *Server) routesProfiles() {
	s.handle(http.MethodGet, "/api/v1/privilege-profiles", Need(domain.PermProfilesRead), s.listPrivProfiles)
	s.handle(http.MethodPost, "/api/v1/privilege-profiles/preview", Need(domain.PermProfilesRead), s.previewPrivProfile)
	s.handle(http.MethodGet, "/api/v1/privilege-profiles/:id", Need(domain.PermProfilesRead), s.getPrivProfile)
	s.handle(http.MethodPost, "/api/v1/privilege-profiles", Need(domain.PermProfilesWrite), s.createPrivProfile)
	s.handle(http.MethodPost, "/api/v1/privilege-profiles/:id/clone", Need(domain.PermProfilesWrite), s.clonePrivProfile)
	s.handle(http.MethodPatch, "/api/v1/privilege-profiles/:id", Need(domain.PermProfilesWrite), s.updatePrivProfile)
	s.handle(http.MethodDelete, "/api/v1/privilege-profiles/:id", Need(domain.PermProfilesWrite), s.deletePrivProfile)

	s.handle(http.MethodGet, "/api/v1/profile-blocks", Need(domain.PermProfilesRead), s.listBlocks)
	s.handle(http.MethodGet, "/api/v1/profile-blocks/:id/usage", Need(domain.PermProfilesRead), s.blockUsage)
	s.handle(http.MethodPost, "/api/v1/profile-blocks/:id/preview", Need(domain.PermProfilesRead), s.previewBlock)
	s.handle(http.MethodPost, "/api/v1/profile-blocks", Need(domain.PermProfilesWrite), s.createBlock)
	s.handle(http.MethodPost, "/api/v1/profile-blocks/:id/clone", Need(domain.PermProfilesWrite), s.cloneBlock)
	s.handle(http.MethodPatch, "/api/v1/profile-blocks/:id", Need(domain.PermProfilesWrite), s.updateBlock)
	s.handle(http.MethodDelete, "/api/v1/profile-blocks/:id", Need(domain.PermProfilesWrite), s.deleteBlock)
}

// routesLinuxUsers: the Linux users catalogue (issue 14). Changes need
// linuxusers:write and the admin role (the service checks); the activation
// link is consumed by the person, without an account.
func (s *Server) routesLinuxUsers() {
	p := "/api/v1/linux-users"
	s.handle(http.MethodGet, p, Need(domain.PermLinuxUsersRead), s.listLinuxUsers)
	s.handle(http.MethodPost, p+"/activation-links/consume", Public(), s.consumeLinuxUserActivation)
	s.handle(http.MethodPost, p, Need(domain.PermLinuxUsersWrite), s.createLinuxUser)
	s.handle(http.MethodDelete, p+"/keys/:keyId", Need(domain.PermLinuxUsersWrite), s.removeLinuxUserKey)
	s.handle(http.MethodGet, p+"/:id", Need(domain.PermLinuxUsersRead), s.getLinuxUser)
	s.handle(http.MethodPatch, p+"/:id", Need(domain.PermLinuxUsersWrite), s.updateLinuxUser)
	s.handle(http.MethodDelete, p+"/:id", Need(domain.PermLinuxUsersWrite), s.deleteLinuxUser)
	s.handle(http.MethodPost, p+"/:id/keys", Need(domain.PermLinuxUsersWrite), s.addLinuxUserKey)
	s.handle(http.MethodPost, p+"/:id/keys/generate", Need(domain.PermLinuxUsersWrite), s.generateLinuxUserKey)
	s.handle(http.MethodPost, p+"/:id/activation-links/generate", Need(domain.PermLinuxUsersWrite), s.generateLinuxUserActivation)
	s.handle(http.MethodPost, p+"/:id/remove-from-servers", Need(domain.PermLinuxUsersWrite), s.removeLinuxUserFromServers)
	s.handle(http.MethodPost, p+"/:id/assign-group", Need(domain.PermLinuxUsersWrite), s.assignLinuxUserGroup)
	s.handle(http.MethodPost, p+"/:id/group-profile", Need(domain.PermLinuxUsersWrite), s.setLinuxUserGroupProfile)
	s.handle(http.MethodGet, p+"/:id/group-assignments", Need(domain.PermLinuxUsersRead), s.linuxUserGroupAssignments)
	s.handle(http.MethodPost, p+"/:id/remove-group", Need(domain.PermLinuxUsersWrite), s.removeLinuxUserGroup)
}

// routesServerUsers: Linux users on a server (issue 14): servers:read or
// servers:write on a server the caller sees; the catalogue's root-run
// content is still changed by admins only (the service checks).
func (s *Server) routesServerUsers() {
	p := "/api/v1/servers/:id"
	s.handle(http.MethodPost, p+"/assign-user", Need(domain.PermServersWrite), s.serverAssignUser)
	s.handle(http.MethodPost, p+"/remove-user", Need(domain.PermServersWrite), s.serverRemoveUser)
	s.handle(http.MethodPost, p+"/sync-users", Need(domain.PermServersWrite), s.serverSyncUsers)
	s.handle(http.MethodGet, p+"/users", Need(domain.PermServersRead), s.serverUsers)
	s.handle(http.MethodGet, p+"/users/:username/logins", Need(domain.PermServersRead), s.serverUserLogins)
	s.handle(http.MethodGet, p+"/users/pending", Need(domain.PermServersRead), s.serverPendingUsers)
	s.handle(http.MethodPost, p+"/users/refresh", Need(domain.PermServersWrite), s.serverRefreshUsers)
	s.handle(http.MethodPost, p+"/users/disable", Need(domain.PermServersWrite), s.serverAccountOp(actions.LinuxUserDisable))
	s.handle(http.MethodPost, p+"/users/enable", Need(domain.PermServersWrite), s.serverAccountOp(actions.LinuxUserEnable))
	s.handle(http.MethodPost, p+"/users/remove", Need(domain.PermServersWrite), s.serverAccountOp(actions.LinuxUserRemove))
}

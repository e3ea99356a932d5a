package httpapi

import (
	"net/http"

	"github.com/lcmproject/lcm/internal/domain"
)

// routesIdentity is issue 3: authentication, users, roles, API keys,
// security settings, audit and the own profile (spec part 2).
func (s *Server) routesIdentity() {
	const p = "/api/v1"
	// Session.
	s.handle(http.MethodPost, p+"/auth/login", Public(), s.login)
	s.handle(http.MethodPost, p+"/auth/login/2fa", Public(), s.login2FA)
	s.handle(http.MethodPost, p+"/auth/logout", Login().Remediation(), s.logout)
	s.handle(http.MethodGet, p+"/auth/me", Login().Remediation(), s.getMe)
	s.handle(http.MethodPost, p+"/auth/2fa/setup", Login().Remediation(), s.setup2FA)
	s.handle(http.MethodPost, p+"/auth/2fa/enable", Login().Remediation(), s.enable2FA)
	s.handle(http.MethodPost, p+"/auth/2fa/disable", Login(), s.disable2FA)
	s.handle(http.MethodGet, p+"/auth/2fa/recovery-codes", Login(), s.getRecoveryCodes)
	s.handle(http.MethodPost, p+"/auth/2fa/recovery-codes", Login(), s.regenerateRecoveryCodes)
	s.handle(http.MethodPost, p+"/auth/password-reset", Public(), s.requestPasswordReset)
	s.handle(http.MethodPost, p+"/auth/password-reset/confirm", Public(), s.confirmPasswordReset)
	// Users and roles.
	s.handle(http.MethodGet, p+"/users", Need(domain.PermUsersRead), s.listUsers)
	s.handle(http.MethodPost, p+"/users", Need(domain.PermUsersWrite), s.createUser)
	s.handle(http.MethodPost, p+"/users/activation-links/generate", Need(domain.PermUsersWrite), s.generateActivationLink)
	s.handle(http.MethodPost, p+"/users/activation-links/consume", Public(), s.consumeActivationLink)
	s.handle(http.MethodGet, p+"/users/:id", Need(domain.PermUsersRead), s.getUser)
	s.handle(http.MethodPatch, p+"/users/:id/profile", Login(), s.updateUserProfile)
	s.handle(http.MethodPost, p+"/users/:id/reset-password", Login(), s.resetUserPassword)
	s.handle(http.MethodPost, p+"/users/:id/2fa/reset", Need(domain.PermUsersWrite), s.reset2FA)
	s.handle(http.MethodPut, p+"/users/:id/roles", Need(domain.PermRolesWrite), s.setUserRoles)
	s.handle(http.MethodPatch, p+"/users/:id/active", Need(domain.PermUsersWrite), s.setUserActive)
	s.handle(http.MethodDelete, p+"/users/:id", Need(domain.PermUsersWrite), s.deleteUser)
	s.handle(http.MethodGet, p+"/roles", Need(domain.PermRolesRead), s.listRoles)
	// API keys.
	s.handle(http.MethodGet, p+"/apikeys", Need(domain.PermAPIKeysManage), s.listAPIKeys)
	s.handle(http.MethodPost, p+"/apikeys", Need(domain.PermAPIKeysManage), s.createAPIKey)
	s.handle(http.MethodDelete, p+"/apikeys/:id", Need(domain.PermAPIKeysManage), s.deleteAPIKey)
	// Security settings and audit.
	s.handle(http.MethodGet, p+"/settings/security", Need(domain.PermSettingsManage), s.getSecuritySettings)
	s.handle(http.MethodPatch, p+"/settings/security", Need(domain.PermSettingsManage), s.updateSecuritySettings)
	s.handle(http.MethodGet, p+"/audit", Need(domain.PermAuditRead), s.listAudit)
	// Own profile (spec part 2).
	s.handle(http.MethodGet, p+"/profile", Login(), s.getProfile)
	s.handle(http.MethodPost, p+"/profile/update", Login(), s.updateProfile)
}

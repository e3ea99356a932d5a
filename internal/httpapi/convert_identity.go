package httpapi

import (
	"time"

	"github.com/lcmproject/lcm/internal/auth"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/store"
)

// userDTO is the contract's User.
type userDTO struct {
	ID           string     `json:"id"`
	Username     string     `json:"username"`
	FirstName    string     `json:"first_name"`
	LastName     string     `json:"last_name"`
	DisplayName  string     `json:"display_name"`
	Email        string     `json:"email"`
	Roles        []string   `json:"roles"`
	Permissions  []string   `json:"permissions"`
	Active       bool       `json:"active"`
	IsSystem     bool       `json:"is_system"`
	TOTPEnabled  bool       `json:"totp_enabled"`
	MustSetup2FA bool       `json:"must_setup_2fa"`
	CreatedAt    time.Time  `json:"created_at"`
	LastLoginAt  *time.Time `json:"last_login_at"`
}

func (s *Server) toUserDTO(c ctxer, u store.User) userDTO {
	return userDTO{ID: u.ID, Username: u.Username, FirstName: u.FirstName, LastName: u.LastName,
		DisplayName: u.DisplayName, Email: u.Email, Roles: strsOrEmpty(u.Roles), Permissions: strsOrEmpty(u.Permissions),
		Active: u.Active, IsSystem: u.IsSystem, TOTPEnabled: u.TOTPEnabled,
		MustSetup2FA: s.deps.Services.Auth.Must2FASetup(c.ctx(), u), CreatedAt: u.CreatedAt.UTC(), LastLoginAt: u.LastLoginAt}
}

func strsOrEmpty(v []string) []string {
	if v == nil {
		return []string{}
	}
	return v
}

// apiKeyDTO is the contract's ApiKey; Key is set only in the creation
// response.
type apiKeyDTO struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Prefix     string     `json:"prefix"`
	Scope      string     `json:"scope"`
	CreatedAt  time.Time  `json:"created_at"`
	ExpiresAt  *time.Time `json:"expires_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	RevokedAt  *time.Time `json:"revoked_at"`
	Key        string     `json:"key,omitempty"`
}

func toAPIKeyDTO(k store.APIKey) apiKeyDTO {
	return apiKeyDTO{ID: k.ID, Name: k.Name, Prefix: k.Prefix, Scope: k.Scope, CreatedAt: k.CreatedAt.UTC(),
		ExpiresAt: k.ExpiresAt, LastUsedAt: k.LastUsedAt, RevokedAt: k.RevokedAt}
}

type roleDTO struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Permissions []string `json:"permissions"`
}

type auditDTO struct {
	ID      int64          `json:"id"`
	At      time.Time      `json:"at"`
	Actor   string         `json:"actor"`
	Action  string         `json:"action"`
	Target  string         `json:"target"`
	IP      string         `json:"ip"`
	Details map[string]any `json:"details"`
}

func toAuditDTO(e store.AuditEntry) auditDTO {
	d := e.Details
	if d == nil {
		d = map[string]any{}
	}
	return auditDTO{ID: e.Seq, At: e.At, Actor: e.Actor, Action: e.Action, Target: e.Target, IP: e.IP, Details: d}
}

// profileDTO is spec part 2's Profile (camelCase).
type profileDTO struct {
	ID          string `json:"id"`
	Username    string `json:"username"`
	Role        string `json:"role"`
	DisplayName string `json:"displayName"`
	Email       string `json:"email"`
}

func toProfileDTO(u store.User) profileDTO {
	role := ""
	switch {
	case len(u.Roles) == 0:
	case roleListHas(u.Roles, domain.RoleAdmin):
		role = domain.RoleAdmin
	default:
		role = u.Roles[0]
	}
	return profileDTO{ID: u.ID, Username: u.Username, Role: role, DisplayName: u.DisplayName, Email: u.Email}
}

func roleListHas(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

type settingsDTO = auth.SecuritySettings

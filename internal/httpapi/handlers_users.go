package httpapi

import (
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/lcmproject/lcm/internal/auth"
	"github.com/lcmproject/lcm/internal/store"
)

func (s *Server) listUsers(c *gin.Context) {
	users, err := s.deps.Services.Auth.ListUsers(c.Request.Context())
	if err != nil {
		s.fail(c, err)
		return
	}
	out := make([]userDTO, len(users))
	for i, u := range users {
		out[i] = s.toUserDTO(ginCtx{c}, u)
	}
	c.JSON(http.StatusOK, out)
}

type createUserRequest struct {
	Username  *string  `json:"username"`
	FirstName string   `json:"first_name"`
	LastName  string   `json:"last_name"`
	Email     string   `json:"email"`
	Password  string   `json:"password"`
	Roles     []string `json:"roles"`
}

func (s *Server) createUser(c *gin.Context) {
	var req createUserRequest
	if !bindJSON(c, &req) {
		return
	}
	if req.Username == nil {
		writeError(c, http.StatusBadRequest, "invalid_request", "username is required")
		return
	}
	u, err := s.deps.Services.Auth.CreateUser(c.Request.Context(), principal(c), auth.NewUserInput{Username: *req.Username,
		FirstName: req.FirstName, LastName: req.LastName, Email: req.Email, Password: req.Password, Roles: req.Roles})
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusCreated, s.toUserDTO(ginCtx{c}, u))
}

func (s *Server) getUser(c *gin.Context) {
	u, err := s.deps.Services.Auth.GetUser(c.Request.Context(), c.Param("id"))
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, s.toUserDTO(ginCtx{c}, u))
}

type profilePatchRequest struct {
	FirstName   *string `json:"first_name"`
	LastName    *string `json:"last_name"`
	Email       *string `json:"email"`
	DisplayName *string `json:"display_name"`
}

func (s *Server) updateUserProfile(c *gin.Context) {
	var req profilePatchRequest
	if !bindJSON(c, &req) {
		return
	}
	u, err := s.deps.Services.Auth.UpdateProfile(c.Request.Context(), principal(c), c.Param("id"),
		auth.ProfilePatch{FirstName: req.FirstName, LastName: req.LastName, Email: req.Email, DisplayName: req.DisplayName})
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, s.toUserDTO(ginCtx{c}, u))
}

type passwordRequest struct {
	Password        *string `json:"password"`
	CurrentPassword string  `json:"current_password"`
	Code            string  `json:"code"`
}

func (s *Server) resetUserPassword(c *gin.Context) {
	var req passwordRequest
	if !bindJSON(c, &req) {
		return
	}
	if req.Password == nil {
		writeError(c, http.StatusBadRequest, "invalid_request", "password is required")
		return
	}
	err := s.deps.Services.Auth.ChangePassword(c.Request.Context(), principal(c), c.Param("id"),
		auth.PasswordChange{Password: *req.Password, CurrentPassword: req.CurrentPassword, Code: req.Code})
	if err != nil {
		s.fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

type rolesRequest struct {
	Roles *[]string `json:"roles"`
}

func (s *Server) setUserRoles(c *gin.Context) {
	var req rolesRequest
	if !bindJSON(c, &req) {
		return
	}
	if req.Roles == nil {
		writeError(c, http.StatusBadRequest, "invalid_request", "roles is required")
		return
	}
	u, err := s.deps.Services.Auth.SetRoles(c.Request.Context(), principal(c), c.Param("id"), *req.Roles)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, s.toUserDTO(ginCtx{c}, u))
}

type activeRequest struct {
	Active *bool `json:"active"`
}

func (s *Server) setUserActive(c *gin.Context) {
	var req activeRequest
	if !bindJSON(c, &req) {
		return
	}
	if req.Active == nil {
		writeError(c, http.StatusBadRequest, "invalid_request", "active is required")
		return
	}
	u, err := s.deps.Services.Auth.SetActive(c.Request.Context(), principal(c), c.Param("id"), *req.Active)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, s.toUserDTO(ginCtx{c}, u))
}

func (s *Server) deleteUser(c *gin.Context) {
	if err := s.deps.Services.Auth.DeleteUser(c.Request.Context(), principal(c), c.Param("id")); err != nil {
		s.fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// reset2FA switches another user's 2FA off (lost authenticator and
// recovery codes); the user sets it up again at the next sign-in.
func (s *Server) reset2FA(c *gin.Context) {
	if !emptyBody(c) {
		return
	}
	u, err := s.deps.Services.Auth.Reset2FA(c.Request.Context(), principal(c), c.Param("id"))
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, s.toUserDTO(ginCtx{c}, u))
}

type activationRequest struct {
	UserID *string `json:"user_id"`
}

func (s *Server) generateActivationLink(c *gin.Context) {
	var req activationRequest
	if !bindJSON(c, &req) {
		return
	}
	if req.UserID == nil || *req.UserID == "" {
		writeError(c, http.StatusBadRequest, "invalid_request", "user_id is required")
		return
	}
	r, err := s.deps.Services.Auth.SendActivationLink(c.Request.Context(), principal(c), *req.UserID)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"sent": true, "expires_at": r.ExpiresAt})
}

func (s *Server) listRoles(c *gin.Context) {
	roles, err := s.deps.Services.Auth.ListRoles(c.Request.Context())
	if err != nil {
		s.fail(c, err)
		return
	}
	out := make([]roleDTO, len(roles))
	for i, r := range roles {
		out[i] = roleDTO{ID: r.ID, Name: r.Name, Permissions: r.Permissions}
	}
	c.JSON(http.StatusOK, out)
}

func (s *Server) listAPIKeys(c *gin.Context) {
	keys, err := s.deps.Services.Auth.ListAPIKeys(c.Request.Context(), principal(c))
	if err != nil {
		s.fail(c, err)
		return
	}
	out := make([]apiKeyDTO, len(keys))
	for i, k := range keys {
		out[i] = toAPIKeyDTO(k)
	}
	c.JSON(http.StatusOK, out)
}

type createAPIKeyRequest struct {
	Name          *string `json:"name"`
	Scope         string  `json:"scope"`
	ExpiresInDays *int    `json:"expires_in_days"`
}

func (s *Server) createAPIKey(c *gin.Context) {
	var req createAPIKeyRequest
	if !bindJSON(c, &req) {
		return
	}
	if req.Name == nil {
		writeError(c, http.StatusBadRequest, "invalid_request", "name is required")
		return
	}
	k, err := s.deps.Services.Auth.CreateAPIKey(c.Request.Context(), principal(c),
		auth.NewAPIKey{Name: *req.Name, Scope: req.Scope, ExpiresInDays: req.ExpiresInDays})
	if err != nil {
		s.fail(c, err)
		return
	}
	dto := toAPIKeyDTO(k.APIKey)
	dto.Key = k.Plaintext
	c.Header("Cache-Control", "no-store")
	c.JSON(http.StatusCreated, dto)
}

func (s *Server) deleteAPIKey(c *gin.Context) {
	if err := s.deps.Services.Auth.DeleteAPIKey(c.Request.Context(), principal(c), c.Param("id")); err != nil {
		s.fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

func (s *Server) getSecuritySettings(c *gin.Context) {
	v, err := s.deps.Services.Auth.Settings(c.Request.Context())
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, settingsDTO(v))
}

func (s *Server) updateSecuritySettings(c *gin.Context) {
	var req auth.SecuritySettingsPatch
	if !bindJSON(c, &req) {
		return
	}
	v, err := s.deps.Services.Auth.UpdateSettings(c.Request.Context(), principal(c), req)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, settingsDTO(v))
}

type auditPageDTO struct {
	Items []auditDTO `json:"items"`
	Total int64      `json:"total"`
}

func (s *Server) listAudit(c *gin.Context) {
	f := store.AuditFilter{Action: c.Query("action"), Limit: 50}
	for name, dst := range map[string]*int{"limit": &f.Limit, "offset": &f.Offset} {
		if v := c.Query(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				writeError(c, http.StatusBadRequest, "invalid_request", name+" must be a non-negative integer")
				return
			}
			*dst = n
		}
	}
	page, err := s.deps.Services.Auth.ListAudit(c.Request.Context(), f)
	if err != nil {
		s.fail(c, err)
		return
	}
	out := auditPageDTO{Items: make([]auditDTO, len(page.Items)), Total: page.Total}
	for i, e := range page.Items {
		out.Items[i] = toAuditDTO(e)
	}
	c.JSON(http.StatusOK, out)
}

func (s *Server) getProfile(c *gin.Context) {
	u, err := s.deps.Services.Auth.GetUser(c.Request.Context(), principal(c).UserID)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, toProfileDTO(u))
}

type profileUpdateRequest struct {
	DisplayName *string `json:"displayName"`
	Email       *string `json:"email"`
}

func (s *Server) updateProfile(c *gin.Context) {
	var req profileUpdateRequest
	if !bindJSON(c, &req) {
		return
	}
	if req.DisplayName == nil || req.Email == nil {
		writeError(c, http.StatusBadRequest, "invalid_request", "displayName and email are required")
		return
	}
	u, err := s.deps.Services.Auth.UpdateOwnProfile(c.Request.Context(), principal(c), *req.DisplayName, *req.Email)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, toProfileDTO(u))
}

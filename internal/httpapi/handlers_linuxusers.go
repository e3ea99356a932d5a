package httpapi

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/audit"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/linuxusers"
)

type linuxUserKeyDTO struct {
	ID          string    `json:"id"`
	Type        string    `json:"type"`
	Bits        int       `json:"bits"`
	Fingerprint string    `json:"fingerprint"`
	Comment     string    `json:"comment"`
	PublicKey   string    `json:"public_key"`
	CreatedAt   time.Time `json:"created_at"`
}

// linuxUserDTO never carries the password hash: only whether one is set.
type linuxUserDTO struct {
	ID               string            `json:"id"`
	Username         string            `json:"username"`
	FullName         string            `json:"full_name"`
	Email            string            `json:"email"`
	Shell            string            `json:"shell"`
	AccountType      string            `json:"account_type"`
	SFTPChroot       bool              `json:"sftp_chroot"`
	DefaultProfileID string            `json:"default_profile_id"`
	PasswordSet      bool              `json:"password_set"`
	PasswordSetAt    *time.Time        `json:"password_set_at"`
	Keys             []linuxUserKeyDTO `json:"keys"`
	CreatedAt        time.Time         `json:"created_at"`
	UpdatedAt        time.Time         `json:"updated_at"`
}

func toLinuxUserKeyDTO(k domain.LinuxUserKey) linuxUserKeyDTO {
	return linuxUserKeyDTO{ID: k.ID, Type: k.Type, Bits: k.Bits, Fingerprint: k.Fingerprint, Comment: k.Comment, PublicKey: k.PublicKey, CreatedAt: k.CreatedAt.UTC()}
}

func toLinuxUserDTO(u domain.LinuxUser) linuxUserDTO {
	d := linuxUserDTO{ID: u.ID, Username: u.Username, FullName: u.FullName, Email: u.Email, Shell: u.Shell, AccountType: u.AccountType,
		SFTPChroot: u.SFTPChroot, DefaultProfileID: u.DefaultProfileID, PasswordSet: u.PasswordHash != "", PasswordSetAt: u.PasswordSetAt,
		Keys: make([]linuxUserKeyDTO, len(u.Keys)), CreatedAt: u.CreatedAt.UTC(), UpdatedAt: u.UpdatedAt.UTC()}
	for i, k := range u.Keys {
		d.Keys[i] = toLinuxUserKeyDTO(k)
	}
	return d
}

type linuxUserRequest struct {
	Username         string  `json:"username"`
	FullName         *string `json:"full_name"`
	Email            *string `json:"email"`
	Shell            *string `json:"shell"`
	AccountType      *string `json:"account_type"`
	SFTPChroot       *bool   `json:"sftp_chroot"`
	DefaultProfileID *string `json:"default_profile_id"`
}

func (r linuxUserRequest) input() linuxusers.UserInput {
	return linuxusers.UserInput{Username: r.Username, FullName: r.FullName, Email: r.Email, Shell: r.Shell,
		AccountType: r.AccountType, SFTPChroot: r.SFTPChroot, DefaultProfileID: r.DefaultProfileID}
}

func (r linuxUserRequest) changed() map[string]any {
	return changedFields(map[string]any{"full_name": r.FullName, "email": r.Email, "shell": r.Shell,
		"account_type": r.AccountType, "sftp_chroot": r.SFTPChroot, "default_profile_id": r.DefaultProfileID})
}

func (s *Server) lu() *linuxusers.Service { return s.deps.Services.LinuxUsers }

func (s *Server) respondLinuxUserWrite(c *gin.Context, action string, u domain.LinuxUser, err error, details map[string]any, status int) {
	id := u.ID
	if id == "" {
		id = c.Param("id")
	}
	if details == nil {
		details = map[string]any{}
	}
	if u.Username != "" {
		details["username"] = u.Username
	}
	s.note(c, action, audit.Target("linux_user", id), details)
	if err != nil {
		s.respondError(c, err)
		return
	}
	if status == http.StatusNoContent {
		c.Status(status)
		return
	}
	c.JSON(status, toLinuxUserDTO(u))
}

func (s *Server) listLinuxUsers(c *gin.Context) {
	list, err := s.lu().ListUsers(c.Request.Context())
	if err != nil {
		s.respondError(c, err)
		return
	}
	out := make([]linuxUserDTO, len(list))
	for i, u := range list {
		out[i] = toLinuxUserDTO(u)
	}
	c.JSON(http.StatusOK, out)
}

// linuxUserDetailDTO is one user with where it is assigned: the effective
// profile per server and the account's state there.
type linuxUserDetailDTO struct {
	linuxUserDTO
	Servers []linuxusers.UserServer `json:"servers"`
}

func (s *Server) getLinuxUser(c *gin.Context) {
	ctx := c.Request.Context()
	u, err := s.lu().GetUser(ctx, c.Param("id"))
	if err != nil {
		s.respondError(c, err)
		return
	}
	servers, err := s.lu().UserServers(ctx, u.ID)
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, linuxUserDetailDTO{linuxUserDTO: toLinuxUserDTO(u), Servers: servers})
}

func (s *Server) createLinuxUser(c *gin.Context) {
	var req linuxUserRequest
	if !bindJSON(c, &req) {
		return
	}
	u, err := s.lu().CreateUser(c.Request.Context(), principal(c), req.input())
	s.respondLinuxUserWrite(c, "linux_user.create", u, err, req.changed(), http.StatusCreated)
}

func (s *Server) updateLinuxUser(c *gin.Context) {
	var req linuxUserRequest
	if !bindJSON(c, &req) {
		return
	}
	if req.Username != "" {
		writeError(c, http.StatusBadRequest, "username_fixed", "the user name cannot change: it is the account on every server")
		return
	}
	u, err := s.lu().UpdateUser(c.Request.Context(), principal(c), c.Param("id"), req.input())
	s.respondLinuxUserWrite(c, "linux_user.update", u, err, req.changed(), http.StatusOK)
}

func (s *Server) deleteLinuxUser(c *gin.Context) {
	u, err := s.lu().DeleteUser(c.Request.Context(), principal(c), c.Param("id"))
	s.respondLinuxUserWrite(c, "linux_user.delete", u, err, nil, http.StatusNoContent)
}

type addKeyRequest struct {
	PublicKey string `json:"public_key"`
}

func (s *Server) addLinuxUserKey(c *gin.Context) {
	var req addKeyRequest
	if !bindJSON(c, &req) {
		return
	}
	k, err := s.lu().AddKey(c.Request.Context(), principal(c), c.Param("id"), req.PublicKey)
	var push groupChangeDTO
	var ids []string
	if err == nil {
		push, ids = toGroupChangeDTO(s.lu().PushKeys(c.Request.Context(), principal(c), c.Param("id")), false)
	}
	s.note(c, "linux_user.key_add", audit.Target("linux_user", c.Param("id")), map[string]any{"fingerprint": k.Fingerprint, "type": k.Type, "job_ids": ids})
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusCreated, keyWithJobsDTO{linuxUserKeyDTO: toLinuxUserKeyDTO(k), Jobs: push.Jobs, NotStarted: push.NotStarted})
}

// keyWithJobsDTO is a new key and the jobs that take it to the servers
// where the account is provisioned.
type keyWithJobsDTO struct {
	linuxUserKeyDTO
	Jobs       []jobStartedDTO         `json:"jobs"`
	NotStarted []linuxusers.NotStarted `json:"not_started"`
}

type generatedKeyDTO struct {
	keyWithJobsDTO
	// PrivateKey is shown once: LCM does not keep it.
	PrivateKey string `json:"private_key"`
}

func (s *Server) generateLinuxUserKey(c *gin.Context) {
	g, err := s.lu().GenerateKey(c.Request.Context(), principal(c), c.Param("id"))
	var push groupChangeDTO
	var ids []string
	if err == nil {
		push, ids = toGroupChangeDTO(s.lu().PushKeys(c.Request.Context(), principal(c), c.Param("id")), false)
	}
	s.note(c, "linux_user.key_generate", audit.Target("linux_user", c.Param("id")), map[string]any{"fingerprint": g.Key.Fingerprint, "job_ids": ids})
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.Header("Cache-Control", "no-store")
	c.JSON(http.StatusCreated, generatedKeyDTO{keyWithJobsDTO: keyWithJobsDTO{linuxUserKeyDTO: toLinuxUserKeyDTO(g.Key), Jobs: push.Jobs, NotStarted: push.NotStarted},
		PrivateKey: g.PrivateKey})
}

// removeLinuxUserKey removes a key; jobs take the key out of LCM's block
// on the servers where the account is provisioned (their ids are in the
// audit entry and the servers' job history).
func (s *Server) removeLinuxUserKey(c *gin.Context) {
	k, err := s.lu().RemoveKey(c.Request.Context(), principal(c), c.Param("keyId"))
	var ids []string
	if err == nil {
		_, ids = toGroupChangeDTO(s.lu().PushKeys(c.Request.Context(), principal(c), k.UserID), false)
	}
	s.note(c, "linux_user.key_remove", audit.Target("linux_user", k.UserID), map[string]any{"key_id": c.Param("keyId"), "fingerprint": k.Fingerprint, "job_ids": ids})
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

type activationLinkDTO struct {
	Token     string    `json:"token"`
	Path      string    `json:"path"`
	ExpiresAt time.Time `json:"expires_at"`
}

func (s *Server) generateLinuxUserActivation(c *gin.Context) {
	l, err := s.lu().GenerateActivationLink(c.Request.Context(), principal(c), c.Param("id"))
	s.note(c, "linux_user.activation_link", audit.Target("linux_user", c.Param("id")), map[string]any{"expires_at": l.ExpiresAt})
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.Header("Cache-Control", "no-store")
	c.JSON(http.StatusCreated, activationLinkDTO{Token: l.Token, Path: l.Path, ExpiresAt: l.ExpiresAt})
}

type consumeActivationRequest struct {
	Token    string `json:"token"`
	Password string `json:"password"`
}

// consumeLinuxUserActivation is public: the person sets the account's
// password; only its crypt hash is kept (encrypted).
func (s *Server) consumeLinuxUserActivation(c *gin.Context) {
	var req consumeActivationRequest
	if !bindJSON(c, &req) {
		return
	}
	u, err := s.lu().ConsumeActivationLink(c.Request.Context(), req.Token, req.Password)
	s.note(c, "linux_user.password_set", audit.Target("linux_user", u.ID), map[string]any{"username": u.Username})
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"username": u.Username, "password_set": true,
		"message": "password set; it reaches the servers with the next sync"})
}

type removeFromServersRequest struct {
	RemoveHome bool `json:"remove_home"`
}

func (s *Server) removeLinuxUserFromServers(c *gin.Context) {
	var req removeFromServersRequest
	if !bindJSON(c, &req) {
		return
	}
	jobs, err := s.lu().RemoveFromServers(c.Request.Context(), principal(c), c.Param("id"), req.RemoveHome)
	ids := make([]string, len(jobs))
	out := make([]jobStartedDTO, len(jobs))
	for i, j := range jobs {
		ids[i], out[i] = j.ID, toJobStarted(j)
	}
	s.note(c, "linux_user.remove_from_servers", audit.Target("linux_user", c.Param("id")), map[string]any{"job_ids": ids, "remove_home": req.RemoveHome})
	if err != nil && len(jobs) == 0 {
		s.respondJobError(c, err)
		return
	}
	body := gin.H{"jobs": out}
	if err != nil {
		body["error"] = err.Error()
	}
	c.JSON(http.StatusAccepted, body)
}

type groupAssignRequest struct {
	GroupID   string `json:"group_id"`
	ProfileID string `json:"profile_id"`
}

type assignmentDTO struct {
	ID         string    `json:"id"`
	UserID     string    `json:"user_id"`
	TargetType string    `json:"target_type"`
	TargetID   string    `json:"target_id"`
	ProfileID  string    `json:"profile_id"`
	CreatedAt  time.Time `json:"created_at"`
}

func toAssignmentDTO(a domain.LinuxUserAssignment) assignmentDTO {
	return assignmentDTO{ID: a.ID, UserID: a.UserID, TargetType: a.TargetType, TargetID: a.TargetID, ProfileID: a.ProfileID, CreatedAt: a.CreatedAt.UTC()}
}

// groupChangeDTO is a group assignment change: the assignment (not for a
// removal), the provisioning jobs it started, the servers where none
// could start.
type groupChangeDTO struct {
	*assignmentDTO
	Jobs       []jobStartedDTO         `json:"jobs"`
	NotStarted []linuxusers.NotStarted `json:"not_started"`
}

func toGroupChangeDTO(ch linuxusers.GroupChange, withAssignment bool) (groupChangeDTO, []string) {
	out := groupChangeDTO{Jobs: make([]jobStartedDTO, len(ch.Jobs)), NotStarted: ch.NotStarted}
	if out.NotStarted == nil {
		out.NotStarted = []linuxusers.NotStarted{}
	}
	ids := make([]string, len(ch.Jobs))
	for i, j := range ch.Jobs {
		out.Jobs[i], ids[i] = toJobStarted(j), j.ID
	}
	if withAssignment {
		a := toAssignmentDTO(ch.Assignment)
		out.assignmentDTO = &a
	}
	return out, ids
}

// assignLinuxUserGroup assigns the user to a group and provisions the
// group's servers at once (one job per server that changes).
func (s *Server) assignLinuxUserGroup(c *gin.Context) {
	var req groupAssignRequest
	if !bindJSON(c, &req) {
		return
	}
	ch, err := s.lu().AssignGroup(c.Request.Context(), principal(c), c.Param("id"), req.GroupID, req.ProfileID)
	body, ids := toGroupChangeDTO(ch, true)
	s.note(c, "linux_user.assign_group", audit.Target("linux_user", c.Param("id")), map[string]any{"group_id": req.GroupID, "profile_id": req.ProfileID, "job_ids": ids})
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, body)
}

// setLinuxUserGroupProfile overrides the profile of an existing group
// assignment and re-provisions the servers where it changes.
func (s *Server) setLinuxUserGroupProfile(c *gin.Context) {
	var req groupAssignRequest
	if !bindJSON(c, &req) {
		return
	}
	ch, err := s.lu().SetGroupProfile(c.Request.Context(), principal(c), c.Param("id"), req.GroupID, req.ProfileID)
	body, ids := toGroupChangeDTO(ch, true)
	s.note(c, "linux_user.group_profile", audit.Target("linux_user", c.Param("id")), map[string]any{"group_id": req.GroupID, "profile_id": req.ProfileID, "job_ids": ids})
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, body)
}

func (s *Server) linuxUserGroupAssignments(c *gin.Context) {
	as, err := s.lu().Assignments(c.Request.Context(), c.Param("id"))
	if err != nil {
		s.respondError(c, err)
		return
	}
	out := []assignmentDTO{}
	for _, a := range as {
		out = append(out, toAssignmentDTO(a))
	}
	c.JSON(http.StatusOK, out)
}

type groupRemoveRequest struct {
	GroupID string `json:"group_id"`
}

// removeLinuxUserGroup drops a group assignment and deprovisions the
// group's servers where no other assignment keeps the user.
func (s *Server) removeLinuxUserGroup(c *gin.Context) {
	var req groupRemoveRequest
	if !bindJSON(c, &req) {
		return
	}
	ch, err := s.lu().UnassignGroup(c.Request.Context(), principal(c), c.Param("id"), req.GroupID)
	body, ids := toGroupChangeDTO(ch, false)
	s.note(c, "linux_user.remove_group", audit.Target("linux_user", c.Param("id")), map[string]any{"group_id": req.GroupID, "job_ids": ids})
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, body)
}

// ---- on a server ----

type serverUserRequest struct {
	UserID     string `json:"user_id"`
	ProfileID  string `json:"profile_id"`
	RemoveHome bool   `json:"remove_home"`
}

func (s *Server) serverAssignUser(c *gin.Context) {
	var req serverUserRequest
	if !bindJSON(c, &req) {
		return
	}
	j, err := s.lu().AssignServer(c.Request.Context(), principal(c), c.Param("id"), req.UserID, req.ProfileID)
	s.respondJobWith(c, j, err, map[string]any{"user_id": req.UserID, "profile_id": req.ProfileID})
}

func (s *Server) serverRemoveUser(c *gin.Context) {
	var req serverUserRequest
	if !bindJSON(c, &req) {
		return
	}
	j, err := s.lu().RemoveUserFromServer(c.Request.Context(), principal(c), c.Param("id"), req.UserID, req.RemoveHome)
	s.respondJobWith(c, j, err, map[string]any{"user_id": req.UserID, "remove_home": req.RemoveHome})
}

func (s *Server) serverSyncUsers(c *gin.Context) {
	j, err := s.lu().Sync(c.Request.Context(), principal(c), c.Param("id"))
	s.respondJob(c, j, err)
}

func (s *Server) serverRefreshUsers(c *gin.Context) {
	j, err := s.lu().Scan(c.Request.Context(), principal(c), c.Param("id"))
	s.respondJob(c, j, err)
}

type provisionDTO struct {
	UserID      string    `json:"user_id"`
	Username    string    `json:"username"`
	ProfileSlug string    `json:"profile_slug"`
	State       string    `json:"state"`
	JobID       string    `json:"job_id"`
	Error       string    `json:"error"`
	UpdatedAt   time.Time `json:"updated_at"`
}

func (s *Server) serverUsers(c *gin.Context) {
	su, err := s.lu().ServerUsers(c.Request.Context(), principal(c), c.Param("id"))
	if err != nil {
		s.respondError(c, err)
		return
	}
	provs := make([]provisionDTO, len(su.Provisions))
	for i, p := range su.Provisions {
		provs[i] = provisionDTO{UserID: p.UserID, Username: p.Username, ProfileSlug: p.ProfileSlug, State: p.State, JobID: p.JobID, Error: p.Error, UpdatedAt: p.UpdatedAt.UTC()}
	}
	human, system := []actions.Account{}, []actions.Account{}
	for _, a := range su.Accounts {
		if a.Human {
			human = append(human, a)
		} else {
			system = append(system, a)
		}
	}
	c.JSON(http.StatusOK, gin.H{"scanned_at": su.ScannedAt, "human": human, "system": system, "provisions": provs})
}

func (s *Server) serverUserLogins(c *gin.Context) {
	su, err := s.lu().ServerUsers(c.Request.Context(), principal(c), c.Param("id"))
	if err != nil {
		s.respondError(c, err)
		return
	}
	for _, a := range su.Accounts {
		if a.Username == c.Param("username") {
			c.JSON(http.StatusOK, gin.H{"username": a.Username, "last_login": a.LastLogin, "scanned_at": su.ScannedAt})
			return
		}
	}
	s.respondError(c, domain.NotFound("account "+c.Param("username")+" in the last scan"))
}

func (s *Server) serverPendingUsers(c *gin.Context) {
	list, err := s.lu().Pending(c.Request.Context(), principal(c), c.Param("id"))
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, list)
}

type serverAccountRequest struct {
	Username   string `json:"username"`
	RemoveHome bool   `json:"remove_home"`
}

func (s *Server) serverAccountOp(op string) gin.HandlerFunc {
	return func(c *gin.Context) {
		var req serverAccountRequest
		if !bindJSON(c, &req) {
			return
		}
		j, err := s.lu().UserOpByName(c.Request.Context(), principal(c), c.Param("id"), op, req.Username, req.RemoveHome)
		s.respondJobWith(c, j, err, map[string]any{"username": req.Username, "op": op})
	}
}

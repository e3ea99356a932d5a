package httpapi

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/lcmproject/lcm/internal/audit"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/linuxusers"
	"github.com/lcmproject/lcm/internal/privilege"
)

type privProfileDTO struct {
	ID          string               `json:"id"`
	Slug        string               `json:"slug"`
	Group       string               `json:"group"`
	Name        string               `json:"name"`
	Description string               `json:"description"`
	Kind        string               `json:"kind"`
	BuiltIn     bool                 `json:"built_in"`
	Rules       []domain.ProfileRule `json:"rules"`
	Blocks      []domain.BlockUse    `json:"blocks"`
	CreatedAt   time.Time            `json:"created_at"`
	UpdatedAt   time.Time            `json:"updated_at"`
	// Rendered is the profile for the family of ?family=.
	Rendered *linuxusers.Rendered `json:"rendered,omitempty"`
}

func toPrivProfileDTO(p domain.PrivilegeProfile) privProfileDTO {
	d := privProfileDTO{ID: p.ID, Slug: p.Slug, Name: p.Name, Description: p.Description, Kind: p.Kind, BuiltIn: p.BuiltIn,
		Rules: p.Rules, Blocks: p.Blocks, CreatedAt: p.CreatedAt.UTC(), UpdatedAt: p.UpdatedAt.UTC()}
	if p.Kind == domain.ProfileCustom {
		d.Group = privilege.GroupName(p.Slug)
	}
	if d.Rules == nil {
		d.Rules = []domain.ProfileRule{}
	}
	if d.Blocks == nil {
		d.Blocks = []domain.BlockUse{}
	}
	return d
}

type profileRequest struct {
	Name        *string               `json:"name"`
	Description *string               `json:"description"`
	Rules       *[]domain.ProfileRule `json:"rules"`
	Blocks      *[]domain.BlockUse    `json:"blocks"`
}

func (r profileRequest) input() linuxusers.ProfileInput {
	return linuxusers.ProfileInput{Name: r.Name, Description: r.Description, Rules: r.Rules, Blocks: r.Blocks}
}

func (r profileRequest) changed() map[string]any {
	d := changedFields(map[string]any{"name": r.Name, "description": r.Description})
	if r.Rules != nil {
		d["rules"] = len(*r.Rules)
	}
	if r.Blocks != nil {
		d["blocks"] = len(*r.Blocks)
	}
	return d
}

type cloneRequest struct {
	Name string `json:"name"`
}

// respondProfileWrite notes the write and one profile.dangerous_confirmed
// entry per newly confirmed dangerous rule (naming the rule; the entry's
// actor is the person).
func (s *Server) respondProfileWrite(c *gin.Context, action string, w linuxusers.ProfileWrite, err error, details map[string]any, status int) {
	id := w.Profile.ID
	if id == "" {
		id = c.Param("id")
	}
	s.note(c, action, audit.Target("profile", id), details)
	for _, rule := range w.Confirmations {
		s.note(c, "profile.dangerous_confirmed", audit.Target("profile", id), map[string]any{"rule": rule, "profile": w.Profile.Name})
	}
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(status, toPrivProfileDTO(w.Profile))
}

func (s *Server) listPrivProfiles(c *gin.Context) {
	list, err := s.deps.Services.LinuxUsers.ListProfiles(c.Request.Context())
	if err != nil {
		s.respondError(c, err)
		return
	}
	out := make([]privProfileDTO, len(list))
	for i, p := range list {
		out[i] = toPrivProfileDTO(p)
	}
	c.JSON(http.StatusOK, out)
}

func (s *Server) getPrivProfile(c *gin.Context) {
	svc := s.deps.Services.LinuxUsers
	p, err := svc.GetProfile(c.Request.Context(), c.Param("id"))
	if err != nil {
		s.respondError(c, err)
		return
	}
	d := toPrivProfileDTO(p)
	if fam := c.Query("family"); fam != "" {
		r, err := svc.RenderProfile(c.Request.Context(), p, fam)
		if err != nil {
			s.respondError(c, err)
			return
		}
		d.Rendered = &r
	}
	c.JSON(http.StatusOK, d)
}

type profilePreviewRequest struct {
	profileRequest
	ProfileID string `json:"profile_id"`
	Family    string `json:"family"`
}

func (s *Server) previewPrivProfile(c *gin.Context) {
	var req profilePreviewRequest
	if !bindJSON(c, &req) {
		return
	}
	r, err := s.deps.Services.LinuxUsers.PreviewProfile(c.Request.Context(), req.ProfileID, req.input(), req.Family)
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, r)
}

func (s *Server) createPrivProfile(c *gin.Context) {
	var req profileRequest
	if !bindJSON(c, &req) {
		return
	}
	w, err := s.deps.Services.LinuxUsers.CreateProfile(c.Request.Context(), principal(c), req.input())
	s.respondProfileWrite(c, "profile.create", w, err, req.changed(), http.StatusCreated)
}

func (s *Server) clonePrivProfile(c *gin.Context) {
	var req cloneRequest
	if !bindJSON(c, &req) {
		return
	}
	w, err := s.deps.Services.LinuxUsers.CloneProfile(c.Request.Context(), principal(c), c.Param("id"), req.Name)
	s.respondProfileWrite(c, "profile.clone", w, err, map[string]any{"source": c.Param("id")}, http.StatusCreated)
}

func (s *Server) updatePrivProfile(c *gin.Context) {
	var req profileRequest
	if !bindJSON(c, &req) {
		return
	}
	w, err := s.deps.Services.LinuxUsers.UpdateProfile(c.Request.Context(), principal(c), c.Param("id"), req.input())
	s.respondProfileWrite(c, "profile.update", w, err, req.changed(), http.StatusOK)
}

func (s *Server) deletePrivProfile(c *gin.Context) {
	p, err := s.deps.Services.LinuxUsers.DeleteProfile(c.Request.Context(), principal(c), c.Param("id"))
	s.note(c, "profile.delete", audit.Target("profile", c.Param("id")), map[string]any{"name": p.Name})
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// ---- blocks ----

type blockDTO struct {
	ID          string                          `json:"id"`
	Slug        string                          `json:"slug"`
	Name        string                          `json:"name"`
	Description string                          `json:"description"`
	BuiltIn     bool                            `json:"built_in"`
	Params      []domain.BlockParam             `json:"params"`
	RunAs       string                          `json:"run_as"`
	Variants    map[string][]domain.ProfileRule `json:"variants"`
	Families    []string                        `json:"families"`
	CreatedAt   time.Time                       `json:"created_at"`
	UpdatedAt   time.Time                       `json:"updated_at"`
}

func toBlockDTO(b domain.ProfileBlock) blockDTO {
	d := blockDTO{ID: b.ID, Slug: b.Slug, Name: b.Name, Description: b.Description, BuiltIn: b.BuiltIn, Params: b.Params,
		RunAs: b.RunAs, Variants: b.Variants, Families: strsOrEmpty(privilege.FromDomain(b).SupportedFamilies()),
		CreatedAt: b.CreatedAt.UTC(), UpdatedAt: b.UpdatedAt.UTC()}
	if d.Params == nil {
		d.Params = []domain.BlockParam{}
	}
	return d
}

type blockRequest struct {
	Name        *string                          `json:"name"`
	Description *string                          `json:"description"`
	Params      *[]domain.BlockParam             `json:"params"`
	RunAs       *string                          `json:"run_as"`
	Variants    *map[string][]domain.ProfileRule `json:"variants"`
}

func (r blockRequest) input() linuxusers.BlockInput {
	return linuxusers.BlockInput{Name: r.Name, Description: r.Description, Params: r.Params, RunAs: r.RunAs, Variants: r.Variants}
}

func (r blockRequest) changed() map[string]any {
	d := changedFields(map[string]any{"name": r.Name, "description": r.Description, "run_as": r.RunAs})
	if r.Variants != nil {
		d["variants"] = len(*r.Variants)
	}
	return d
}

func (s *Server) respondBlockWrite(c *gin.Context, action string, b domain.ProfileBlock, err error, details map[string]any, status int) {
	id := b.ID
	if id == "" {
		id = c.Param("id")
	}
	s.note(c, action, audit.Target("profile_block", id), details)
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(status, toBlockDTO(b))
}

func (s *Server) listBlocks(c *gin.Context) {
	list, err := s.deps.Services.LinuxUsers.ListBlocks(c.Request.Context())
	if err != nil {
		s.respondError(c, err)
		return
	}
	out := make([]blockDTO, len(list))
	for i, b := range list {
		out[i] = toBlockDTO(b)
	}
	c.JSON(http.StatusOK, out)
}

func (s *Server) blockUsage(c *gin.Context) {
	list, err := s.deps.Services.LinuxUsers.BlockUsage(c.Request.Context(), c.Param("id"))
	if err != nil {
		s.respondError(c, err)
		return
	}
	out := make([]privProfileDTO, len(list))
	for i, p := range list {
		out[i] = toPrivProfileDTO(p)
	}
	c.JSON(http.StatusOK, out)
}

type blockPreviewRequest struct {
	Family string            `json:"family"`
	Params map[string]string `json:"params"`
}

func (s *Server) previewBlock(c *gin.Context) {
	var req blockPreviewRequest
	if !bindJSON(c, &req) {
		return
	}
	p, err := s.deps.Services.LinuxUsers.PreviewBlock(c.Request.Context(), c.Param("id"), req.Family, req.Params)
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, p)
}

func (s *Server) createBlock(c *gin.Context) {
	var req blockRequest
	if !bindJSON(c, &req) {
		return
	}
	b, err := s.deps.Services.LinuxUsers.CreateBlock(c.Request.Context(), principal(c), req.input())
	s.respondBlockWrite(c, "profile_block.create", b, err, req.changed(), http.StatusCreated)
}

func (s *Server) cloneBlock(c *gin.Context) {
	var req cloneRequest
	if !bindJSON(c, &req) {
		return
	}
	b, err := s.deps.Services.LinuxUsers.CloneBlock(c.Request.Context(), principal(c), c.Param("id"), req.Name)
	s.respondBlockWrite(c, "profile_block.clone", b, err, map[string]any{"source": c.Param("id")}, http.StatusCreated)
}

func (s *Server) updateBlock(c *gin.Context) {
	var req blockRequest
	if !bindJSON(c, &req) {
		return
	}
	b, err := s.deps.Services.LinuxUsers.UpdateBlock(c.Request.Context(), principal(c), c.Param("id"), req.input())
	s.respondBlockWrite(c, "profile_block.update", b, err, req.changed(), http.StatusOK)
}

func (s *Server) deleteBlock(c *gin.Context) {
	b, err := s.deps.Services.LinuxUsers.DeleteBlock(c.Request.Context(), principal(c), c.Param("id"))
	s.note(c, "profile_block.delete", audit.Target("profile_block", c.Param("id")), map[string]any{"name": b.Name})
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

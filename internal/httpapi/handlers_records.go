package httpapi

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/lcmproject/lcm/internal/audit"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/recordsvc"
)

// Handlers of the records area: bind → records service → convert → respond.
// The service checks the caller's project role; a malformed uuid in the
// path or body is 400 before any lookup.

// uuidParam returns path parameter name as a canonical uuid, or writes 400.
func uuidParam(c *gin.Context, name string) (string, bool) {
	return checkUUID(c, name, c.Param(name))
}

func checkUUID(c *gin.Context, name, v string) (string, bool) {
	u, err := uuid.Parse(v)
	if err != nil || len(v) != 36 {
		writeError(c, http.StatusBadRequest, "invalid_id", name+" must be a uuid")
		return "", false
	}
	return u.String(), true
}

// uuidParams reads several path uuids; false once one was malformed.
func uuidParams(c *gin.Context, names ...string) ([]string, bool) {
	out := make([]string, len(names))
	for i, n := range names {
		v, ok := uuidParam(c, n)
		if !ok {
			return nil, false
		}
		out[i] = v
	}
	return out, true
}

func (s *Server) recs() *recordsvc.Service { return s.deps.Services.Records }

// ok answers 200 with body, or maps err.
func (s *Server) answer(c *gin.Context, status int, body any, err error) {
	if err != nil {
		s.respondError(c, err)
		return
	}
	if body == nil {
		c.Status(status)
		return
	}
	c.JSON(status, body)
}

type projectReq struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

func (s *Server) createProject(c *gin.Context) {
	var req projectReq
	if !bindJSON(c, &req) {
		return
	}
	p, err := s.recs().CreateProject(c.Request.Context(), principal(c), recordsvc.ProjectInput(req))
	s.note(c, "project.create", audit.Target("project", p.ID), map[string]any{"name": p.Name})
	s.answer(c, http.StatusCreated, toProjectDTO(p), err)
}

func (s *Server) listProjects(c *gin.Context) {
	ps, err := s.recs().ListProjects(c.Request.Context(), principal(c))
	s.answer(c, http.StatusOK, recList(ps, toProjectDTO), err)
}

func (s *Server) getProject(c *gin.Context) {
	id, ok := uuidParam(c, "projectId")
	if !ok {
		return
	}
	p, err := s.recs().GetProject(c.Request.Context(), principal(c), id)
	s.answer(c, http.StatusOK, toProjectDTO(p), err)
}

func (s *Server) updateProject(c *gin.Context) {
	id, ok := uuidParam(c, "projectId")
	var req projectReq
	if !ok || !bindJSON(c, &req) {
		return
	}
	p, err := s.recs().UpdateProject(c.Request.Context(), principal(c), id, recordsvc.ProjectInput(req))
	s.note(c, "project.update", audit.Target("project", id), map[string]any{"name": p.Name})
	s.answer(c, http.StatusOK, toProjectDTO(p), err)
}

func (s *Server) deleteProject(c *gin.Context) {
	id, ok := uuidParam(c, "projectId")
	if !ok {
		return
	}
	s.note(c, "project.delete", audit.Target("project", id), nil)
	s.answer(c, http.StatusNoContent, nil, s.recs().DeleteProject(c.Request.Context(), principal(c), id))
}

func (s *Server) listMembers(c *gin.Context) {
	id, ok := uuidParam(c, "projectId")
	if !ok {
		return
	}
	ms, err := s.recs().ListMembers(c.Request.Context(), principal(c), id)
	s.answer(c, http.StatusOK, recList(ms, toMemberDTO), err)
}

type memberReq struct {
	UserID string `json:"userId"`
	Role   string `json:"role"`
}

func (s *Server) addMember(c *gin.Context) {
	id, ok := uuidParam(c, "projectId")
	var req memberReq
	if !ok || !bindJSON(c, &req) {
		return
	}
	user, ok := checkUUID(c, "userId", req.UserID)
	if !ok {
		return
	}
	m, err := s.recs().AddMember(c.Request.Context(), principal(c), id, recordsvc.MemberInput{UserID: user, Role: req.Role})
	s.note(c, "project.member_add", audit.Target("project", id), map[string]any{"user_id": user, "role": req.Role})
	s.answer(c, http.StatusCreated, toMemberDTO(m), err)
}

type roleReq struct {
	Role string `json:"role"`
}

func (s *Server) updateMember(c *gin.Context) {
	ids, ok := uuidParams(c, "projectId", "userId")
	var req roleReq
	if !ok || !bindJSON(c, &req) {
		return
	}
	m, err := s.recs().UpdateMember(c.Request.Context(), principal(c), ids[0], ids[1], req.Role)
	s.note(c, "project.member_update", audit.Target("project", ids[0]), map[string]any{"user_id": ids[1], "role": req.Role})
	s.answer(c, http.StatusOK, toMemberDTO(m), err)
}

func (s *Server) removeMember(c *gin.Context) {
	ids, ok := uuidParams(c, "projectId", "userId")
	if !ok {
		return
	}
	s.note(c, "project.member_remove", audit.Target("project", ids[0]), map[string]any{"user_id": ids[1]})
	s.answer(c, http.StatusNoContent, nil, s.recs().RemoveMember(c.Request.Context(), principal(c), ids[0], ids[1]))
}

type zoneReq struct {
	Name       string  `json:"name"`
	DefaultTTL *int64  `json:"defaultTtl"`
	MName      *string `json:"mname"`
	RName      *string `json:"rname"`
	Refresh    *uint32 `json:"refresh"`
	Retry      *uint32 `json:"retry"`
	Expire     *uint32 `json:"expire"`
	Minimum    *uint32 `json:"minimum"`
}

func (r zoneReq) input() recordsvc.ZoneInput {
	return recordsvc.ZoneInput{Name: r.Name, DefaultTTL: r.DefaultTTL, MName: r.MName, RName: r.RName,
		Refresh: r.Refresh, Retry: r.Retry, Expire: r.Expire, Minimum: r.Minimum}
}

func (s *Server) createZone(c *gin.Context) {
	id, ok := uuidParam(c, "projectId")
	var req zoneReq
	if !ok || !bindJSON(c, &req) {
		return
	}
	z, err := s.recs().CreateZone(c.Request.Context(), principal(c), id, req.input())
	s.note(c, "zone.create", audit.Target("zone", z.ID), map[string]any{"project_id": id, "name": z.Name})
	s.answer(c, http.StatusCreated, toZoneDTO(z), err)
}

func (s *Server) listZones(c *gin.Context) {
	id, ok := uuidParam(c, "projectId")
	if !ok {
		return
	}
	zs, err := s.recs().ListZones(c.Request.Context(), principal(c), id)
	s.answer(c, http.StatusOK, recList(zs, toZoneDTO), err)
}

func (s *Server) getZone(c *gin.Context) {
	id, ok := uuidParam(c, "zoneId")
	if !ok {
		return
	}
	z, err := s.recs().GetZone(c.Request.Context(), principal(c), id)
	s.answer(c, http.StatusOK, toZoneDTO(z), err)
}

func (s *Server) updateZone(c *gin.Context) {
	id, ok := uuidParam(c, "zoneId")
	var req zoneReq
	if !ok || !bindJSON(c, &req) {
		return
	}
	z, err := s.recs().UpdateZone(c.Request.Context(), principal(c), id, req.input())
	s.note(c, "zone.update", audit.Target("zone", id), map[string]any{"name": z.Name})
	s.answer(c, http.StatusOK, toZoneDTO(z), err)
}

func (s *Server) deleteZone(c *gin.Context) {
	id, ok := uuidParam(c, "zoneId")
	if !ok {
		return
	}
	s.note(c, "zone.delete", audit.Target("zone", id), nil)
	s.answer(c, http.StatusNoContent, nil, s.recs().DeleteZone(c.Request.Context(), principal(c), id))
}

func (s *Server) exportZone(c *gin.Context) {
	id, ok := uuidParam(c, "zoneId")
	if !ok {
		return
	}
	z, err := s.recs().GetZone(c.Request.Context(), principal(c), id)
	if err != nil {
		s.respondError(c, err)
		return
	}
	out, err := s.recs().ExportZone(c.Request.Context(), principal(c), id)
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.Header("Content-Disposition", `attachment; filename="`+strings.TrimSuffix(z.Name, ".")+`.zone"`)
	c.Data(http.StatusOK, "text/dns; charset=utf-8", out)
}

func (s *Server) listRecordSets(c *gin.Context) {
	id, ok := uuidParam(c, "zoneId")
	if !ok {
		return
	}
	sets, err := s.recs().ListRecordSets(c.Request.Context(), principal(c), id)
	s.answer(c, http.StatusOK, recList(sets, toZoneSetDTO), err)
}

func (s *Server) createRecordSet(c *gin.Context) {
	id, ok := uuidParam(c, "zoneId")
	var req setDTO
	if !ok || !bindJSON(c, &req) {
		return
	}
	set, err := s.recs().CreateRecordSet(c.Request.Context(), principal(c), id, fromSetDTO(req))
	s.note(c, "record_set.create", audit.Target("record_set", set.ID), map[string]any{"zone_id": id, "name": req.Name, "type": req.Type})
	s.answer(c, http.StatusCreated, toZoneSetDTO(set), err)
}

func (s *Server) updateRecordSet(c *gin.Context) {
	ids, ok := uuidParams(c, "zoneId", "setId")
	var req setDTO
	if !ok || !bindJSON(c, &req) {
		return
	}
	set, err := s.recs().UpdateRecordSet(c.Request.Context(), principal(c), ids[0], ids[1], fromSetDTO(req))
	s.note(c, "record_set.update", audit.Target("record_set", ids[1]), map[string]any{"zone_id": ids[0], "name": req.Name, "type": req.Type})
	s.answer(c, http.StatusOK, toZoneSetDTO(set), err)
}

func (s *Server) deleteRecordSet(c *gin.Context) {
	ids, ok := uuidParams(c, "zoneId", "setId")
	if !ok {
		return
	}
	s.note(c, "record_set.delete", audit.Target("record_set", ids[1]), map[string]any{"zone_id": ids[0]})
	s.answer(c, http.StatusNoContent, nil, s.recs().DeleteRecordSet(c.Request.Context(), principal(c), ids[0], ids[1]))
}

type templateReq struct {
	Name string   `json:"name"`
	Sets []setDTO `json:"sets"`
}

func (s *Server) createTemplate(c *gin.Context) {
	id, ok := uuidParam(c, "projectId")
	var req templateReq
	if !ok || !bindJSON(c, &req) {
		return
	}
	t, err := s.recs().CreateTemplate(c.Request.Context(), principal(c), id, recordsvc.TemplateInput{Name: req.Name, Sets: fromSetDTOs(req.Sets)})
	s.note(c, "template.create", audit.Target("template", t.ID), map[string]any{"project_id": id, "name": req.Name})
	s.answer(c, http.StatusCreated, toTemplateDTO(t), err)
}

func (s *Server) listTemplates(c *gin.Context) {
	id, ok := uuidParam(c, "projectId")
	if !ok {
		return
	}
	ts, err := s.recs().ListTemplates(c.Request.Context(), principal(c), id)
	s.answer(c, http.StatusOK, recList(ts, toTemplateDTO), err)
}

func (s *Server) getTemplate(c *gin.Context) {
	id, ok := uuidParam(c, "templateId")
	if !ok {
		return
	}
	t, err := s.recs().GetTemplate(c.Request.Context(), principal(c), id)
	s.answer(c, http.StatusOK, toTemplateDTO(t), err)
}

func (s *Server) updateTemplate(c *gin.Context) {
	id, ok := uuidParam(c, "templateId")
	var req templateReq
	if !ok || !bindJSON(c, &req) {
		return
	}
	t, err := s.recs().UpdateTemplate(c.Request.Context(), principal(c), id, recordsvc.TemplateInput{Name: req.Name, Sets: fromSetDTOs(req.Sets)})
	s.note(c, "template.update", audit.Target("template", id), map[string]any{"name": req.Name})
	s.answer(c, http.StatusOK, toTemplateDTO(t), err)
}

func (s *Server) deleteTemplate(c *gin.Context) {
	id, ok := uuidParam(c, "templateId")
	if !ok {
		return
	}
	s.note(c, "template.delete", audit.Target("template", id), nil)
	s.answer(c, http.StatusNoContent, nil, s.recs().DeleteTemplate(c.Request.Context(), principal(c), id))
}

type zoneRefReq struct {
	ZoneID string `json:"zoneId"`
}

// bindZoneRef binds {zoneId} and checks the uuid.
func bindZoneRef(c *gin.Context) (string, bool) {
	var req zoneRefReq
	if !bindJSON(c, &req) {
		return "", false
	}
	return checkUUID(c, "zoneId", req.ZoneID)
}

func (s *Server) applyTemplate(c *gin.Context) {
	id, ok := uuidParam(c, "templateId")
	if !ok {
		return
	}
	zoneID, ok := bindZoneRef(c)
	if !ok {
		return
	}
	rep, err := s.recs().ApplyTemplate(c.Request.Context(), principal(c), id, zoneID)
	s.note(c, "template.apply", audit.Target("template", id), map[string]any{"zone_id": zoneID})
	s.answer(c, http.StatusOK, toReportDTO(rep), err)
}

type syncGroupReq struct {
	Name     string `json:"name"`
	Priority *int   `json:"priority"`
}

func (s *Server) createSyncGroup(c *gin.Context) {
	var req syncGroupReq
	if !bindJSON(c, &req) {
		return
	}
	if req.Priority == nil {
		s.respondError(c, domain.Invalid("priority_required", "priority is required (lower wins)"))
		return
	}
	g, err := s.recs().CreateSyncGroup(c.Request.Context(), principal(c), recordsvc.SyncGroupInput{Name: req.Name, Priority: *req.Priority})
	s.note(c, "sync_group.create", audit.Target("sync_group", g.ID), map[string]any{"name": req.Name, "priority": *req.Priority})
	s.answer(c, http.StatusCreated, toSyncGroupDTO(g), err)
}

func (s *Server) listSyncGroups(c *gin.Context) {
	gs, err := s.recs().ListSyncGroups(c.Request.Context(), principal(c))
	s.answer(c, http.StatusOK, recList(gs, toSyncGroupDTO), err)
}

func (s *Server) getSyncGroup(c *gin.Context) {
	id, ok := uuidParam(c, "groupId")
	if !ok {
		return
	}
	g, err := s.recs().GetSyncGroup(c.Request.Context(), principal(c), id)
	s.answer(c, http.StatusOK, toSyncGroupDTO(g), err)
}

func (s *Server) addSyncGroupMember(c *gin.Context) {
	id, ok := uuidParam(c, "groupId")
	if !ok {
		return
	}
	zoneID, ok := bindZoneRef(c)
	if !ok {
		return
	}
	rep, err := s.recs().AddSyncGroupMember(c.Request.Context(), principal(c), id, zoneID)
	s.note(c, "sync_group.member_add", audit.Target("sync_group", id), map[string]any{"zone_id": zoneID})
	s.answer(c, http.StatusOK, toReportDTO(rep), err)
}

func (s *Server) removeSyncGroupMember(c *gin.Context) {
	id, ok := uuidParam(c, "groupId")
	if !ok {
		return
	}
	zoneID, ok := bindZoneRef(c)
	if !ok {
		return
	}
	s.note(c, "sync_group.member_remove", audit.Target("sync_group", id), map[string]any{"zone_id": zoneID})
	s.answer(c, http.StatusNoContent, nil, s.recs().RemoveSyncGroupMember(c.Request.Context(), principal(c), id, zoneID))
}

type updateSetsReq struct {
	Sets []setDTO `json:"sets"`
}

func (s *Server) updateSyncGroupSets(c *gin.Context) {
	id, ok := uuidParam(c, "groupId")
	var req updateSetsReq
	if !ok || !bindJSON(c, &req) {
		return
	}
	reps, err := s.recs().UpdateSyncGroupSets(c.Request.Context(), principal(c), id, fromSetDTOs(req.Sets))
	s.note(c, "sync_group.update_sets", audit.Target("sync_group", id), map[string]any{"sets": len(req.Sets)})
	s.answer(c, http.StatusOK, recList(reps, toReportDTO), err)
}

func (s *Server) deleteSyncGroup(c *gin.Context) {
	id, ok := uuidParam(c, "groupId")
	if !ok {
		return
	}
	s.note(c, "sync_group.delete", audit.Target("sync_group", id), nil)
	s.answer(c, http.StatusNoContent, nil, s.recs().DeleteSyncGroup(c.Request.Context(), principal(c), id))
}

type sourceReq struct {
	Name string   `json:"name"`
	IPv4 []string `json:"ipv4"`
	IPv6 []string `json:"ipv6"`
}

func (s *Server) createSourceHost(c *gin.Context) {
	id, ok := uuidParam(c, "projectId")
	var req sourceReq
	if !ok || !bindJSON(c, &req) {
		return
	}
	h, err := s.recs().CreateSourceHost(c.Request.Context(), principal(c), id, recordsvc.SourceInput(req))
	s.note(c, "source_host.create", audit.Target("source_host", h.ID), map[string]any{"project_id": id, "name": req.Name})
	s.answer(c, http.StatusCreated, toSourceHostDTO(h), err)
}

func (s *Server) listSourceHosts(c *gin.Context) {
	id, ok := uuidParam(c, "projectId")
	if !ok {
		return
	}
	hs, err := s.recs().ListSourceHosts(c.Request.Context(), principal(c), id)
	s.answer(c, http.StatusOK, recList(hs, toSourceHostDTO), err)
}

func (s *Server) getSourceHost(c *gin.Context) {
	id, ok := uuidParam(c, "sourceId")
	if !ok {
		return
	}
	h, err := s.recs().GetSourceHost(c.Request.Context(), principal(c), id)
	s.answer(c, http.StatusOK, toSourceHostDTO(h), err)
}

func (s *Server) updateSourceHost(c *gin.Context) {
	id, ok := uuidParam(c, "sourceId")
	var req sourceReq
	if !ok || !bindJSON(c, &req) {
		return
	}
	h, err := s.recs().UpdateSourceHost(c.Request.Context(), principal(c), id, recordsvc.SourceInput(req))
	s.note(c, "source_host.update", audit.Target("source_host", id), map[string]any{"name": req.Name})
	s.answer(c, http.StatusOK, toSourceHostDTO(h), err)
}

func (s *Server) deleteSourceHost(c *gin.Context) {
	id, ok := uuidParam(c, "sourceId")
	if !ok {
		return
	}
	s.note(c, "source_host.delete", audit.Target("source_host", id), nil)
	s.answer(c, http.StatusNoContent, nil, s.recs().DeleteSourceHost(c.Request.Context(), principal(c), id))
}

type bindReq struct {
	ZoneID string `json:"zoneId"`
	Name   string `json:"name"`
	Type   string `json:"type"`
}

// bindBinding reads the source id and a {zoneId, name, type} body.
func bindBinding(c *gin.Context) (string, recordsvc.BindInput, bool) {
	id, ok := uuidParam(c, "sourceId")
	var req bindReq
	if !ok || !bindJSON(c, &req) {
		return "", recordsvc.BindInput{}, false
	}
	zoneID, ok := checkUUID(c, "zoneId", req.ZoneID)
	return id, recordsvc.BindInput{ZoneID: zoneID, Name: req.Name, Type: req.Type}, ok
}

func (s *Server) bindSourceHost(c *gin.Context) {
	id, in, ok := bindBinding(c)
	if !ok {
		return
	}
	set, err := s.recs().BindSourceHost(c.Request.Context(), principal(c), id, in)
	s.note(c, "source_host.bind", audit.Target("source_host", id), map[string]any{"zone_id": in.ZoneID, "name": in.Name, "type": in.Type})
	s.answer(c, http.StatusOK, toZoneSetDTO(set), err)
}

func (s *Server) unbindSourceHost(c *gin.Context) {
	id, in, ok := bindBinding(c)
	if !ok {
		return
	}
	s.note(c, "source_host.unbind", audit.Target("source_host", id), map[string]any{"zone_id": in.ZoneID, "name": in.Name, "type": in.Type})
	s.answer(c, http.StatusNoContent, nil, s.recs().UnbindSourceHost(c.Request.Context(), principal(c), id, in))
}

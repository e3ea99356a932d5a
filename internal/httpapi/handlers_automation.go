package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/lcmproject/lcm/internal/automation"
	"github.com/lcmproject/lcm/internal/domain"
)

type autoRuleDTO struct {
	ID         string            `json:"id"`
	ScheduleID string            `json:"schedule_id"`
	Position   int               `json:"position"`
	Type       string            `json:"type"`
	Params     domain.RuleParams `json:"params"`
	Enabled    bool              `json:"enabled"`
	CreatedAt  time.Time         `json:"created_at"`
	UpdatedAt  time.Time         `json:"updated_at"`
}

type autoScheduleDTO struct {
	ID               string        `json:"id"`
	GroupID          string        `json:"group_id"`
	Name             string        `json:"name"`
	Cron             string        `json:"cron"`
	TimeZone         string        `json:"time_zone"`
	WindowStart      string        `json:"window_start"`
	WindowEnd        string        `json:"window_end"`
	OutsideWindow    string        `json:"outside_window"`
	Enabled          bool          `json:"enabled"`
	RequiresApproval bool          `json:"requires_approval"`
	LastRunAt        *time.Time    `json:"last_run_at"`
	NextRunAt        *time.Time    `json:"next_run_at"`
	CreatedBy        string        `json:"created_by"`
	UpdatedBy        string        `json:"updated_by"`
	CreatedAt        time.Time     `json:"created_at"`
	UpdatedAt        time.Time     `json:"updated_at"`
	Rules            []autoRuleDTO `json:"rules"`
}

func toRuleDTO(r domain.Rule) autoRuleDTO {
	return autoRuleDTO{ID: r.ID, ScheduleID: r.ScheduleID, Position: r.Position, Type: r.Type, Params: r.Params, Enabled: r.Enabled,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
}

func toScheduleDTO(s domain.Schedule) autoScheduleDTO {
	d := autoScheduleDTO{ID: s.ID, GroupID: s.GroupID, Name: s.Name, Cron: s.Cron, TimeZone: s.TimeZone, WindowStart: s.WindowStart,
		WindowEnd: s.WindowEnd, OutsideWindow: s.OutsideWindow, Enabled: s.Enabled, RequiresApproval: s.RequiresApproval,
		LastRunAt: s.LastRunAt, NextRunAt: s.NextRunAt, CreatedBy: s.CreatedBy, UpdatedBy: s.UpdatedBy, CreatedAt: s.CreatedAt,
		UpdatedAt: s.UpdatedAt, Rules: []autoRuleDTO{}}
	for _, r := range s.Rules {
		d.Rules = append(d.Rules, toRuleDTO(r))
	}
	return d
}

func toSchedulesDTO(list []domain.Schedule) gin.H {
	out := make([]autoScheduleDTO, len(list))
	for i, s := range list {
		out[i] = toScheduleDTO(s)
	}
	return gin.H{"schedules": out}
}

type autoRunDTO struct {
	ID          string           `json:"id"`
	ScheduleID  string           `json:"schedule_id"`
	Trigger     string           `json:"trigger"`
	Status      string           `json:"status"`
	Reason      string           `json:"reason"`
	DueAt       time.Time        `json:"due_at"`
	StartedAt   *time.Time       `json:"started_at"`
	FinishedAt  *time.Time       `json:"finished_at"`
	CreatedAt   time.Time        `json:"created_at"`
	RequestedBy string           `json:"requested_by"`
	Steps       []domain.RunStep `json:"steps"`
}

func toRunDTO(r domain.ScheduleRun) autoRunDTO {
	return autoRunDTO{ID: r.ID, ScheduleID: r.ScheduleID, Trigger: r.Trigger, Status: r.Status, Reason: r.Reason, DueAt: r.DueAt,
		StartedAt: r.StartedAt, FinishedAt: r.FinishedAt, CreatedAt: r.CreatedAt, RequestedBy: r.RequestedBy, Steps: r.Steps}
}

func (s *Server) automation(c *gin.Context) *automation.Service {
	a := s.deps.Services.Automation
	if a == nil {
		s.respondError(c, domain.Unavailable("automation_unavailable", "automation is not running in this process"))
	}
	return a
}

type autoScheduleRequest struct {
	Name             *string `json:"name"`
	Cron             *string `json:"cron"`
	TimeZone         *string `json:"time_zone"`
	WindowStart      *string `json:"window_start"`
	WindowEnd        *string `json:"window_end"`
	OutsideWindow    *string `json:"outside_window"`
	Enabled          *bool   `json:"enabled"`
	RequiresApproval *bool   `json:"requires_approval"`
}

func (r autoScheduleRequest) input() automation.ScheduleInput {
	return automation.ScheduleInput{Name: r.Name, Cron: r.Cron, TimeZone: r.TimeZone, WindowStart: r.WindowStart,
		WindowEnd: r.WindowEnd, OutsideWindow: r.OutsideWindow, Enabled: r.Enabled, RequiresApproval: r.RequiresApproval}
}

func (r autoScheduleRequest) details() map[string]any {
	return changedFields(map[string]any{"name": r.Name, "cron": r.Cron, "time_zone": r.TimeZone, "window_start": r.WindowStart,
		"window_end": r.WindowEnd, "outside_window": r.OutsideWindow, "enabled": r.Enabled, "requires_approval": r.RequiresApproval})
}

func (s *Server) listGroupSchedules(c *gin.Context) {
	a := s.automation(c)
	if a == nil {
		return
	}
	list, err := a.ListSchedules(c.Request.Context(), principal(c), c.Param("id"))
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, toSchedulesDTO(list))
}

func (s *Server) defineSchedule(c *gin.Context) {
	var req autoScheduleRequest
	if !bindJSON(c, &req) {
		return
	}
	a := s.automation(c)
	if a == nil {
		return
	}
	sch, err := a.DefineSchedule(c.Request.Context(), principal(c), c.Param("id"), req.input())
	if err != nil {
		s.respondError(c, err)
		return
	}
	s.note(c, "schedule.define", "schedule:"+sch.ID, map[string]any{"group_id": sch.GroupID, "name": sch.Name, "cron": sch.Cron})
	c.JSON(http.StatusCreated, toScheduleDTO(sch))
}

func (s *Server) getSchedule(c *gin.Context) {
	a := s.automation(c)
	if a == nil {
		return
	}
	sch, err := a.GetSchedule(c.Request.Context(), principal(c), c.Param("id"))
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, toScheduleDTO(sch))
}

func (s *Server) updateSchedule(c *gin.Context) {
	var req autoScheduleRequest
	if !bindJSON(c, &req) {
		return
	}
	a := s.automation(c)
	if a == nil {
		return
	}
	sch, err := a.UpdateSchedule(c.Request.Context(), principal(c), c.Param("id"), req.input())
	if err != nil {
		s.respondError(c, err)
		return
	}
	s.note(c, "schedule.update", "schedule:"+sch.ID, req.details())
	c.JSON(http.StatusOK, toScheduleDTO(sch))
}

func (s *Server) setScheduleEnabled(c *gin.Context, on bool) {
	a := s.automation(c)
	if a == nil {
		return
	}
	sch, err := a.SetScheduleEnabled(c.Request.Context(), principal(c), c.Param("id"), on)
	if err != nil {
		s.respondError(c, err)
		return
	}
	action := "schedule.disable"
	if on {
		action = "schedule.enable"
	}
	s.note(c, action, "schedule:"+sch.ID, nil)
	c.JSON(http.StatusOK, toScheduleDTO(sch))
}

func (s *Server) enableSchedule(c *gin.Context)  { s.setScheduleEnabled(c, true) }
func (s *Server) disableSchedule(c *gin.Context) { s.setScheduleEnabled(c, false) }

func (s *Server) removeSchedule(c *gin.Context) {
	a := s.automation(c)
	if a == nil {
		return
	}
	sch, err := a.RemoveSchedule(c.Request.Context(), principal(c), c.Param("id"))
	if err != nil {
		s.respondError(c, err)
		return
	}
	s.note(c, "schedule.remove", "schedule:"+sch.ID, map[string]any{"name": sch.Name, "group_id": sch.GroupID})
	c.Status(http.StatusNoContent)
}

func (s *Server) triggerSchedule(c *gin.Context) {
	a := s.automation(c)
	if a == nil {
		return
	}
	run, err := a.TriggerNow(c.Request.Context(), principal(c), c.Param("id"))
	if err != nil {
		s.respondError(c, err)
		return
	}
	s.note(c, "schedule.trigger", "schedule:"+run.ScheduleID, map[string]any{"run_id": run.ID, "status": run.Status})
	c.JSON(http.StatusAccepted, toRunDTO(run))
}

func (s *Server) scheduleHistory(c *gin.Context) {
	a := s.automation(c)
	if a == nil {
		return
	}
	limit := 0
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 200 {
			s.respondError(c, domain.Invalid("limit_out_of_range", "limit must be between 1 and 200"))
			return
		}
		limit = n
	}
	runs, err := a.History(c.Request.Context(), principal(c), c.Param("id"), limit)
	if err != nil {
		s.respondError(c, err)
		return
	}
	out := make([]autoRunDTO, len(runs))
	for i, r := range runs {
		out[i] = toRunDTO(r)
	}
	c.JSON(http.StatusOK, gin.H{"runs": out})
}

type autoRuleRequest struct {
	ScheduleID string             `json:"schedule_id"`
	Position   *int               `json:"position"`
	Type       *string            `json:"type"`
	Params     *domain.RuleParams `json:"params"`
	Enabled    *bool              `json:"enabled"`
}

func (r autoRuleRequest) input() automation.RuleInput {
	return automation.RuleInput{ScheduleID: r.ScheduleID, Position: r.Position, Type: r.Type, Params: r.Params, Enabled: r.Enabled}
}

func (s *Server) listGroupRules(c *gin.Context) {
	a := s.automation(c)
	if a == nil {
		return
	}
	list, err := a.ListRules(c.Request.Context(), principal(c), c.Param("id"))
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, toSchedulesDTO(list))
}

func (s *Server) listRules(c *gin.Context) {
	a := s.automation(c)
	if a == nil {
		return
	}
	list, err := a.ListRules(c.Request.Context(), principal(c), "")
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, toSchedulesDTO(list))
}

func (s *Server) ruleTypes(c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{"types": automation.RuleTypes})
}

func (s *Server) defineRule(c *gin.Context) {
	var req autoRuleRequest
	if !bindJSON(c, &req) {
		return
	}
	a := s.automation(c)
	if a == nil {
		return
	}
	r, err := a.DefineRule(c.Request.Context(), principal(c), c.Param("id"), req.input())
	if err != nil {
		s.respondError(c, err)
		return
	}
	s.note(c, "rule.define", "rule:"+r.ID, map[string]any{"schedule_id": r.ScheduleID, "type": r.Type})
	c.JSON(http.StatusCreated, toRuleDTO(r))
}

func (s *Server) updateRule(c *gin.Context) {
	var req autoRuleRequest
	if !bindJSON(c, &req) {
		return
	}
	a := s.automation(c)
	if a == nil {
		return
	}
	r, err := a.UpdateRule(c.Request.Context(), principal(c), c.Param("id"), req.input())
	if err != nil {
		s.respondError(c, err)
		return
	}
	s.note(c, "rule.update", "rule:"+r.ID, changedFields(map[string]any{"type": req.Type, "position": req.Position, "enabled": req.Enabled}))
	c.JSON(http.StatusOK, toRuleDTO(r))
}

func (s *Server) setRuleEnabled(c *gin.Context, on bool) {
	a := s.automation(c)
	if a == nil {
		return
	}
	r, err := a.SetRuleEnabled(c.Request.Context(), principal(c), c.Param("id"), on)
	if err != nil {
		s.respondError(c, err)
		return
	}
	action := "rule.disable"
	if on {
		action = "rule.enable"
	}
	s.note(c, action, "rule:"+r.ID, map[string]any{"schedule_id": r.ScheduleID, "type": r.Type})
	c.JSON(http.StatusOK, toRuleDTO(r))
}

func (s *Server) enableRule(c *gin.Context)  { s.setRuleEnabled(c, true) }
func (s *Server) disableRule(c *gin.Context) { s.setRuleEnabled(c, false) }

// triggerRule runs one rule of a schedule now (the rule alone; windows
// and the schedule's approval requirement apply).
func (s *Server) triggerRule(c *gin.Context) {
	a := s.automation(c)
	if a == nil {
		return
	}
	run, err := a.TriggerRule(c.Request.Context(), principal(c), c.Param("id"))
	if err != nil {
		s.respondError(c, err)
		return
	}
	s.note(c, "rule.trigger", "rule:"+c.Param("id"), map[string]any{"schedule_id": run.ScheduleID, "run_id": run.ID, "status": run.Status})
	c.JSON(http.StatusAccepted, toRunDTO(run))
}

func (s *Server) removeRule(c *gin.Context) {
	a := s.automation(c)
	if a == nil {
		return
	}
	r, err := a.RemoveRule(c.Request.Context(), principal(c), c.Param("id"))
	if err != nil {
		s.respondError(c, err)
		return
	}
	s.note(c, "rule.remove", "rule:"+r.ID, map[string]any{"schedule_id": r.ScheduleID, "type": r.Type})
	c.Status(http.StatusNoContent)
}

type groupAutomationDTO struct {
	GroupID     string `json:"group_id"`
	Priority    int    `json:"priority"`
	WindowStart string `json:"window_start"`
	WindowEnd   string `json:"window_end"`
	WindowTZ    string `json:"window_tz"`
}

func (s *Server) getGroupAutomation(c *gin.Context) {
	a := s.automation(c)
	if a == nil {
		return
	}
	g, err := a.GroupSettings(c.Request.Context(), principal(c), c.Param("id"))
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, groupAutomationDTO{GroupID: g.GroupID, Priority: g.Priority, WindowStart: g.WindowStart, WindowEnd: g.WindowEnd, WindowTZ: g.WindowTZ})
}

func (s *Server) setGroupAutomation(c *gin.Context) {
	var req groupAutomationDTO
	if !bindJSON(c, &req) {
		return
	}
	a := s.automation(c)
	if a == nil {
		return
	}
	g, err := a.SetGroupSettings(c.Request.Context(), principal(c), domain.GroupAutomation{GroupID: c.Param("id"), Priority: req.Priority,
		WindowStart: req.WindowStart, WindowEnd: req.WindowEnd, WindowTZ: req.WindowTZ})
	if err != nil {
		s.respondError(c, err)
		return
	}
	s.note(c, "group.automation", "group:"+g.GroupID, map[string]any{"priority": g.Priority, "window_start": g.WindowStart,
		"window_end": g.WindowEnd, "window_tz": g.WindowTZ})
	c.JSON(http.StatusOK, groupAutomationDTO{GroupID: g.GroupID, Priority: g.Priority, WindowStart: g.WindowStart, WindowEnd: g.WindowEnd, WindowTZ: g.WindowTZ})
}

type customActionDTO struct {
	ID               string    `json:"id"`
	Name             string    `json:"name"`
	Description      string    `json:"description"`
	Commands         []string  `json:"commands"`
	RequiresApproval bool      `json:"requires_approval"`
	CreatedAt        time.Time `json:"created_at"`
	UpdatedAt        time.Time `json:"updated_at"`
}

func toCustomActionDTO(a domain.CustomAction) customActionDTO {
	return customActionDTO{ID: a.ID, Name: a.Name, Description: a.Description, Commands: a.Commands,
		RequiresApproval: a.RequiresApproval, CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt}
}

type customActionRequest struct {
	Name             *string   `json:"name"`
	Description      *string   `json:"description"`
	Commands         *[]string `json:"commands"`
	RequiresApproval *bool     `json:"requires_approval"`
}

func (s *Server) listCustomActions(c *gin.Context) {
	a := s.automation(c)
	if a == nil {
		return
	}
	list, err := a.ListCustomActions(c.Request.Context())
	if err != nil {
		s.respondError(c, err)
		return
	}
	out := make([]customActionDTO, len(list))
	for i, x := range list {
		out[i] = toCustomActionDTO(x)
	}
	c.JSON(http.StatusOK, gin.H{"custom_actions": out})
}

func (s *Server) saveCustomAction(c *gin.Context, id string) {
	var req customActionRequest
	if !bindJSON(c, &req) {
		return
	}
	a := s.automation(c)
	if a == nil {
		return
	}
	x, err := a.SaveCustomAction(c.Request.Context(), principal(c), id, automation.CustomActionInput{Name: req.Name,
		Description: req.Description, Commands: req.Commands, RequiresApproval: req.RequiresApproval})
	if err != nil {
		s.respondError(c, err)
		return
	}
	action, status := "custom_action.update", http.StatusOK
	if id == "" {
		action, status = "custom_action.create", http.StatusCreated
	}
	d := map[string]any{"name": x.Name, "commands": len(x.Commands), "requires_approval": x.RequiresApproval}
	if req.RequiresApproval != nil {
		d["requires_approval_set"] = *req.RequiresApproval
	}
	s.note(c, action, "custom_action:"+x.ID, d)
	c.JSON(status, toCustomActionDTO(x))
}

func (s *Server) createCustomAction(c *gin.Context) { s.saveCustomAction(c, "") }
func (s *Server) updateCustomAction(c *gin.Context) {
	if id := c.Param("id"); id != "" && len(id) <= 36 {
		s.saveCustomAction(c, id)
		return
	}
	s.respondError(c, domain.NotFound("custom action"))
}

func (s *Server) deleteCustomAction(c *gin.Context) {
	a := s.automation(c)
	if a == nil {
		return
	}
	x, err := a.DeleteCustomAction(c.Request.Context(), principal(c), c.Param("id"))
	if err != nil {
		s.respondError(c, err)
		return
	}
	s.note(c, "custom_action.delete", "custom_action:"+x.ID, map[string]any{"name": x.Name})
	c.Status(http.StatusNoContent)
}

type runCustomActionRequest struct {
	ServerIDs []string `json:"server_ids"`
	GroupID   string   `json:"group_id"`
}

func (s *Server) runCustomAction(c *gin.Context) {
	var req runCustomActionRequest
	if !bindJSON(c, &req) {
		return
	}
	a := s.automation(c)
	if a == nil {
		return
	}
	run, err := a.RunCustomAction(c.Request.Context(), principal(c), c.Param("id"), automation.RunTarget{ServerIDs: req.ServerIDs, GroupID: req.GroupID})
	if err != nil {
		s.respondError(c, err)
		return
	}
	s.note(c, "custom_action.run", "custom_action:"+c.Param("id"), map[string]any{"bulk_id": run.ID, "servers": len(run.Items), "group_id": req.GroupID})
	c.JSON(http.StatusAccepted, toBulkRunDTO(run))
}

type maintenanceDTO struct {
	Active    bool       `json:"active"`
	Reason    string     `json:"reason"`
	StartedBy string     `json:"started_by"`
	StartedAt *time.Time `json:"started_at"`
	EndsAt    *time.Time `json:"ends_at"`
}

type conflictDTO struct {
	RuleType   string   `json:"rule_type"`
	Winner     string   `json:"winner"`
	WinnerID   string   `json:"winner_id"`
	Superseded []string `json:"superseded"`
	Tie        bool     `json:"tie"`
	Warning    string   `json:"warning"`
}

func toMaintenanceDTO(m *domain.Maintenance) maintenanceDTO {
	if m == nil {
		return maintenanceDTO{}
	}
	return maintenanceDTO{Active: true, Reason: m.Reason, StartedBy: m.StartedBy, StartedAt: &m.StartedAt, EndsAt: m.EndsAt}
}

func (s *Server) getMaintenance(c *gin.Context) {
	a := s.automation(c)
	if a == nil {
		return
	}
	ctx, p, id := c.Request.Context(), principal(c), c.Param("id")
	m, err := a.Maintenance(ctx, p, id)
	if err != nil {
		s.respondError(c, err)
		return
	}
	cs, err := a.Conflicts(ctx, p, id)
	if err != nil {
		s.respondError(c, err)
		return
	}
	out := []conflictDTO{}
	for _, x := range cs {
		out = append(out, conflictDTO{RuleType: x.RuleType, Winner: x.Winner, WinnerID: x.WinnerID, Superseded: x.Superseded, Tie: x.Tie, Warning: x.Warning})
	}
	c.JSON(http.StatusOK, gin.H{"maintenance": toMaintenanceDTO(m), "rule_conflicts": out})
}

type startMaintenanceRequest struct {
	Reason string     `json:"reason"`
	EndsAt *time.Time `json:"ends_at"`
}

func (s *Server) startMaintenance(c *gin.Context) {
	var req startMaintenanceRequest
	if c.Request.ContentLength != 0 && !bindJSON(c, &req) {
		return
	}
	a := s.automation(c)
	if a == nil {
		return
	}
	m, err := a.StartMaintenance(c.Request.Context(), principal(c), c.Param("id"), req.Reason, req.EndsAt)
	if err != nil {
		s.respondError(c, err)
		return
	}
	s.note(c, "server.maintenance.start", "server:"+m.ServerID, map[string]any{"reason": m.Reason, "ends_at": m.EndsAt})
	c.JSON(http.StatusOK, toMaintenanceDTO(&m))
}

func (s *Server) endMaintenance(c *gin.Context) {
	a := s.automation(c)
	if a == nil {
		return
	}
	ended, err := a.EndMaintenance(c.Request.Context(), principal(c), c.Param("id"))
	if err != nil {
		s.respondError(c, err)
		return
	}
	s.note(c, "server.maintenance.end", "server:"+c.Param("id"), map[string]any{"was_active": ended})
	c.JSON(http.StatusOK, maintenanceDTO{})
}

func (s *Server) systemSchedulesOverview(c *gin.Context) {
	sch, err := s.schedules()
	if err != nil {
		s.respondError(c, err)
		return
	}
	items, err := sch.Overview(c.Request.Context(), time.Now().UTC())
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"schedules": items})
}

func (s *Server) triggerSystem(c *gin.Context, key string, byKind bool) {
	sch, err := s.schedules()
	if err != nil {
		s.respondError(c, err)
		return
	}
	name, err := sch.Trigger(c.Request.Context(), key, byKind)
	if err != nil {
		s.respondError(c, err)
		return
	}
	s.note(c, "system_schedule.trigger", "schedule:"+name, nil)
	c.JSON(http.StatusAccepted, gin.H{"triggered": name})
}

func (s *Server) triggerSystemKind(c *gin.Context) { s.triggerSystem(c, c.Param("kind"), true) }
func (s *Server) triggerSystemTask(c *gin.Context) { s.triggerSystem(c, c.Param("id"), false) }

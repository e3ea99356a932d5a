package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/lcmproject/lcm/internal/domain"
)

func autoScheduleOf(r autoScheduleRow) domain.Schedule {
	return domain.Schedule{ID: r.ID, GroupID: r.GroupID, Name: r.Name, Cron: r.Cron, TimeZone: r.TimeZone,
		WindowStart: r.WindowStart, WindowEnd: r.WindowEnd, OutsideWindow: r.OutsideWindow, Enabled: r.Enabled,
		RequiresApproval: r.RequiresApproval, LastRunAt: r.LastRunAt, NextRunAt: r.NextRunAt, CreatedBy: r.CreatedBy,
		UpdatedBy: r.UpdatedBy, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, Rules: []domain.Rule{}}
}

func autoRuleOf(r autoRuleRow) domain.Rule {
	out := domain.Rule{ID: r.ID, ScheduleID: r.ScheduleID, Position: r.Position, Type: r.Type, Enabled: r.Enabled,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	_ = json.Unmarshal([]byte(r.Params), &out.Params)
	return out
}

// ListSchedules returns the schedules of a group (all groups: groupID "")
// visible in sc, each with its rules in order.
func (s *Store) ListSchedules(ctx context.Context, sc Scope, groupID string) ([]domain.Schedule, error) {
	q := applyGroupScope(s.conn(ctx).Model(&autoScheduleRow{}), "group_id", sc)
	if groupID != "" {
		q = q.Where("group_id = ?", groupID)
	}
	var rows []autoScheduleRow
	if err := q.Order("created_at, id").Find(&rows).Error; err != nil {
		return nil, mapErr(err, "schedules")
	}
	return s.withRules(ctx, rows)
}

func (s *Store) withRules(ctx context.Context, rows []autoScheduleRow) ([]domain.Schedule, error) {
	out := make([]domain.Schedule, len(rows))
	idx := map[string]int{}
	ids := make([]string, len(rows))
	for i, r := range rows {
		out[i] = autoScheduleOf(r)
		idx[r.ID] = i
		ids[i] = r.ID
	}
	if len(ids) == 0 {
		return out, nil
	}
	var rules []autoRuleRow
	for chunk := range chunksOf(ids, 200) {
		var part []autoRuleRow
		if err := s.conn(ctx).Where("schedule_id IN ?", chunk).Order("position, created_at, id").Find(&part).Error; err != nil {
			return nil, mapErr(err, "rules")
		}
		rules = append(rules, part...)
	}
	for _, r := range rules {
		i := idx[r.ScheduleID]
		out[i].Rules = append(out[i].Rules, autoRuleOf(r))
	}
	return out, nil
}

// GetSchedule returns a schedule visible in sc with its rules.
func (s *Store) GetSchedule(ctx context.Context, sc Scope, id string) (domain.Schedule, error) {
	var rows []autoScheduleRow
	if err := applyGroupScope(s.conn(ctx).Model(&autoScheduleRow{}), "group_id", sc).Where("id = ?", id).Limit(1).Find(&rows).Error; err != nil {
		return domain.Schedule{}, mapErr(err, "schedule")
	}
	if len(rows) == 0 {
		return domain.Schedule{}, domain.NotFound("schedule")
	}
	out, err := s.withRules(ctx, rows)
	if err != nil {
		return domain.Schedule{}, err
	}
	return out[0], nil
}

// CreateSchedule stores a new schedule (without rules).
func (s *Store) CreateSchedule(ctx context.Context, sch domain.Schedule) (domain.Schedule, error) {
	now := time.Now().UTC()
	row := autoScheduleRow{ID: uuid.NewString(), GroupID: sch.GroupID, Name: sch.Name, Cron: sch.Cron, TimeZone: sch.TimeZone,
		WindowStart: sch.WindowStart, WindowEnd: sch.WindowEnd, OutsideWindow: sch.OutsideWindow, Enabled: sch.Enabled,
		RequiresApproval: sch.RequiresApproval, NextRunAt: sch.NextRunAt, CreatedBy: sch.CreatedBy, UpdatedBy: sch.CreatedBy,
		CreatedAt: now, UpdatedAt: now}
	if err := s.conn(ctx).Omit("Group").Create(&row).Error; err != nil {
		return domain.Schedule{}, mapErr(err, "schedule")
	}
	return s.GetSchedule(ctx, SystemScope, row.ID)
}

// SaveSchedule replaces a schedule's settings (not its rules, run times
// other than next_run_at).
func (s *Store) SaveSchedule(ctx context.Context, sch domain.Schedule) (domain.Schedule, error) {
	res := s.conn(ctx).Model(&autoScheduleRow{}).Where("id = ?", sch.ID).Updates(map[string]any{
		"name": sch.Name, "cron": sch.Cron, "time_zone": sch.TimeZone, "window_start": sch.WindowStart, "window_end": sch.WindowEnd,
		"outside_window": sch.OutsideWindow, "enabled": sch.Enabled, "requires_approval": sch.RequiresApproval,
		"next_run_at": sch.NextRunAt, "updated_by": sch.UpdatedBy, "updated_at": time.Now().UTC()})
	if res.Error != nil {
		return domain.Schedule{}, mapErr(res.Error, "schedule")
	}
	if res.RowsAffected == 0 {
		return domain.Schedule{}, domain.NotFound("schedule")
	}
	return s.GetSchedule(ctx, SystemScope, sch.ID)
}

// TouchSchedule records that userID changed the schedule (one of its
// rules): it is the schedule's last editor.
func (s *Store) TouchSchedule(ctx context.Context, id, userID string) error {
	return mapErr(s.conn(ctx).Model(&autoScheduleRow{}).Where("id = ?", id).
		Updates(map[string]any{"updated_by": userID, "updated_at": time.Now().UTC()}).Error, "schedule")
}

// DeleteSchedule removes a schedule with its rules and runs.
func (s *Store) DeleteSchedule(ctx context.Context, id string) error {
	return s.conn(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Where("schedule_id = ?", id).Delete(&autoRuleRow{}).Error; err != nil {
			return mapErr(err, "rules")
		}
		if err := tx.Where("schedule_id = ?", id).Delete(&autoRunRow{}).Error; err != nil {
			return mapErr(err, "runs")
		}
		res := tx.Where("id = ?", id).Delete(&autoScheduleRow{})
		if res.Error != nil {
			return mapErr(res.Error, "schedule")
		}
		if res.RowsAffected == 0 {
			return domain.NotFound("schedule")
		}
		return nil
	})
}

// DueSchedules returns the enabled schedules whose next run is at or
// before now, or not yet computed.
func (s *Store) DueSchedules(ctx context.Context, now time.Time) ([]domain.Schedule, error) {
	var rows []autoScheduleRow
	if err := s.conn(ctx).Where("enabled = ? AND (next_run_at IS NULL OR next_run_at <= ?)", true, now).Order("next_run_at").Find(&rows).Error; err != nil {
		return nil, mapErr(err, "schedules")
	}
	return s.withRules(ctx, rows)
}

// AdvanceSchedule moves a schedule's next run from prev (nil: not yet
// computed) to next; false when another replica already moved it.
func (s *Store) AdvanceSchedule(ctx context.Context, id string, prev, next *time.Time) (bool, error) {
	q := s.conn(ctx).Model(&autoScheduleRow{}).Where("id = ?", id)
	if prev == nil {
		q = q.Where("next_run_at IS NULL")
	} else {
		q = q.Where("next_run_at = ?", *prev)
	}
	res := q.Update("next_run_at", next)
	return res.RowsAffected == 1, mapErr(res.Error, "schedule")
}

// CreateRule appends a rule to a schedule (Position < 0: at the end).
func (s *Store) CreateRule(ctx context.Context, r domain.Rule) (domain.Rule, error) {
	now := time.Now().UTC()
	params, _ := json.Marshal(r.Params)
	row := autoRuleRow{ID: uuid.NewString(), ScheduleID: r.ScheduleID, Position: r.Position, Type: r.Type, Params: string(params),
		Enabled: r.Enabled, CreatedAt: now, UpdatedAt: now}
	err := s.conn(ctx).Transaction(func(tx *gorm.DB) error {
		if row.Position < 0 {
			var max *int
			if err := tx.Model(&autoRuleRow{}).Where("schedule_id = ?", r.ScheduleID).Select("MAX(position)").Scan(&max).Error; err != nil {
				return err
			}
			row.Position = 0
			if max != nil {
				row.Position = *max + 1
			}
		}
		return tx.Omit("Schedule").Create(&row).Error
	})
	if err != nil {
		return domain.Rule{}, mapErr(err, "rule")
	}
	return autoRuleOf(row), nil
}

// GetRule returns a rule whose schedule's group is visible in sc.
func (s *Store) GetRule(ctx context.Context, sc Scope, id string) (domain.Rule, domain.Schedule, error) {
	var row autoRuleRow
	if err := s.conn(ctx).Where("id = ?", id).First(&row).Error; err != nil {
		return domain.Rule{}, domain.Schedule{}, mapErr(err, "rule")
	}
	sch, err := s.GetSchedule(ctx, sc, row.ScheduleID)
	if errors.Is(err, domain.ErrNotFound) {
		return domain.Rule{}, domain.Schedule{}, domain.NotFound("rule")
	}
	return autoRuleOf(row), sch, err
}

// SaveRule replaces a rule's position, type, params and flag.
func (s *Store) SaveRule(ctx context.Context, r domain.Rule) (domain.Rule, error) {
	params, _ := json.Marshal(r.Params)
	res := s.conn(ctx).Model(&autoRuleRow{}).Where("id = ?", r.ID).Updates(map[string]any{"position": r.Position, "type": r.Type,
		"params": string(params), "enabled": r.Enabled, "updated_at": time.Now().UTC()})
	if res.Error != nil {
		return domain.Rule{}, mapErr(res.Error, "rule")
	}
	var row autoRuleRow
	if err := s.conn(ctx).Where("id = ?", r.ID).First(&row).Error; err != nil {
		return domain.Rule{}, mapErr(err, "rule")
	}
	return autoRuleOf(row), nil
}

// DeleteRule removes a rule.
func (s *Store) DeleteRule(ctx context.Context, id string) error {
	res := s.conn(ctx).Where("id = ?", id).Delete(&autoRuleRow{})
	if res.Error != nil {
		return mapErr(res.Error, "rule")
	}
	if res.RowsAffected == 0 {
		return domain.NotFound("rule")
	}
	return nil
}

// ListRules returns the rules of every schedule visible in sc (of one
// group when groupID is set), with their schedules.
func (s *Store) ListRules(ctx context.Context, sc Scope, groupID string) ([]domain.Schedule, error) {
	return s.ListSchedules(ctx, sc, groupID)
}

func autoRunOf(r autoRunRow) domain.ScheduleRun {
	out := domain.ScheduleRun{ID: r.ID, ScheduleID: r.ScheduleID, GroupID: r.GroupID, Trigger: r.Trigger, Status: r.Status,
		Reason: r.Reason, SlotKey: r.SlotKey, DueAt: r.DueAt, RuleIndex: r.RuleIndex, Owner: r.Owner, Heartbeat: r.Heartbeat,
		StartedAt: r.StartedAt, FinishedAt: r.FinishedAt, CreatedAt: r.CreatedAt, RequestedBy: r.RequestedBy, Steps: []domain.RunStep{}}
	_ = json.Unmarshal([]byte(r.Steps), &out.Steps)
	return out
}

// CreateRun stores a run; false (and no error) when the schedule's slot
// already has one (another replica fired it).
func (s *Store) CreateRun(ctx context.Context, r domain.ScheduleRun) (bool, error) {
	steps, _ := json.Marshal(r.Steps)
	row := autoRunRow{ID: r.ID, ScheduleID: r.ScheduleID, GroupID: r.GroupID, SlotKey: r.SlotKey, Trigger: r.Trigger,
		Status: r.Status, Reason: r.Reason, DueAt: r.DueAt, Owner: r.Owner, Heartbeat: r.Heartbeat, StartedAt: r.StartedAt,
		FinishedAt: r.FinishedAt, Steps: string(steps), CreatedAt: r.CreatedAt, RequestedBy: r.RequestedBy}
	res := s.conn(ctx).Omit("Schedule").Clauses(clause.OnConflict{DoNothing: true}).Create(&row)
	if res.Error != nil {
		return false, mapErr(res.Error, "run")
	}
	if res.RowsAffected == 0 {
		return false, nil
	}
	if err := s.conn(ctx).Model(&autoScheduleRow{}).Where("id = ?", r.ScheduleID).Update("last_run_at", r.CreatedAt).Error; err != nil {
		return true, mapErr(err, "schedule")
	}
	return true, nil
}

// SaveRun stores a run's progress while owner still holds it; false when
// another replica took it over.
func (s *Store) SaveRun(ctx context.Context, r domain.ScheduleRun) (bool, error) {
	steps, _ := json.Marshal(r.Steps)
	res := s.conn(ctx).Model(&autoRunRow{}).Where("id = ? AND owner = ?", r.ID, r.Owner).Updates(map[string]any{
		"status": r.Status, "reason": r.Reason, "rule_index": r.RuleIndex, "heartbeat_at": r.Heartbeat,
		"started_at": r.StartedAt, "finished_at": r.FinishedAt, "steps": string(steps), "due_at": r.DueAt})
	return res.RowsAffected == 1, mapErr(res.Error, "run")
}

// ClaimRun makes owner the run's owner if it still is as seen (status,
// owner, heartbeat): a waiting run that is due, or a running one whose
// owner stopped beating.
func (s *Store) ClaimRun(ctx context.Context, seen domain.ScheduleRun, owner string, now time.Time) (bool, error) {
	q := s.conn(ctx).Model(&autoRunRow{}).Where("id = ? AND status = ? AND owner = ?", seen.ID, seen.Status, seen.Owner)
	if seen.Heartbeat == nil {
		q = q.Where("heartbeat_at IS NULL")
	} else {
		q = q.Where("heartbeat_at = ?", *seen.Heartbeat)
	}
	res := q.Updates(map[string]any{"owner": owner, "heartbeat_at": now, "status": "running"})
	return res.RowsAffected == 1, mapErr(res.Error, "run")
}

// ClaimableRuns returns waiting runs due at or before now and running
// runs whose heartbeat is older than stale.
func (s *Store) ClaimableRuns(ctx context.Context, now, stale time.Time) ([]domain.ScheduleRun, error) {
	var rows []autoRunRow
	err := s.conn(ctx).Where("(status = ? AND due_at <= ?) OR (status = ? AND (heartbeat_at IS NULL OR heartbeat_at < ?))",
		"waiting", now, "running", stale).Order("due_at").Limit(100).Find(&rows).Error
	if err != nil {
		return nil, mapErr(err, "runs")
	}
	out := make([]domain.ScheduleRun, len(rows))
	for i, r := range rows {
		out[i] = autoRunOf(r)
	}
	return out, nil
}

// GetRun returns one run.
func (s *Store) GetRun(ctx context.Context, id string) (domain.ScheduleRun, error) {
	var row autoRunRow
	if err := s.conn(ctx).Where("id = ?", id).First(&row).Error; err != nil {
		return domain.ScheduleRun{}, mapErr(err, "run")
	}
	return autoRunOf(row), nil
}

// ListRuns returns a schedule's newest runs.
func (s *Store) ListRuns(ctx context.Context, scheduleID string, limit int) ([]domain.ScheduleRun, error) {
	var rows []autoRunRow
	if err := s.conn(ctx).Where("schedule_id = ?", scheduleID).Order("created_at DESC, id").Limit(limit).Find(&rows).Error; err != nil {
		return nil, mapErr(err, "runs")
	}
	out := make([]domain.ScheduleRun, len(rows))
	for i, r := range rows {
		out[i] = autoRunOf(r)
	}
	return out, nil
}

// GroupAutomation returns a group's automation settings (defaults when
// none are stored).
func (s *Store) GroupAutomation(ctx context.Context, groupID string) (domain.GroupAutomation, error) {
	var rows []groupAutomationRow
	if err := s.conn(ctx).Where("group_id = ?", groupID).Limit(1).Find(&rows).Error; err != nil {
		return domain.GroupAutomation{}, mapErr(err, "group settings")
	}
	if len(rows) == 0 {
		return domain.GroupAutomation{GroupID: groupID, Priority: domain.DefaultGroupPriority}, nil
	}
	r := rows[0]
	return domain.GroupAutomation{GroupID: r.GroupID, Priority: r.Priority, WindowStart: r.WindowStart, WindowEnd: r.WindowEnd,
		WindowTZ: r.WindowTZ, UpdatedAt: r.UpdatedAt}, nil
}

// SetGroupAutomation stores a group's automation settings.
func (s *Store) SetGroupAutomation(ctx context.Context, g domain.GroupAutomation) (domain.GroupAutomation, error) {
	row := groupAutomationRow{GroupID: g.GroupID, Priority: g.Priority, WindowStart: g.WindowStart, WindowEnd: g.WindowEnd,
		WindowTZ: g.WindowTZ, UpdatedAt: time.Now().UTC()}
	err := s.conn(ctx).Omit("Group").Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "group_id"}},
		DoUpdates: clause.AssignmentColumns([]string{"priority", "window_start", "window_end", "window_tz", "updated_at"})}).Create(&row).Error
	if err != nil {
		return domain.GroupAutomation{}, mapErr(err, "group settings")
	}
	return s.GroupAutomation(ctx, g.GroupID)
}

// AutomationTarget is a server as a schedule run sees it.
type AutomationTarget struct {
	BulkTarget
	RebootRequired bool
	SudoMode       string
}

// GroupTargets returns the servers of a group with what a run decides on.
func (s *Store) GroupTargets(ctx context.Context, groupID string) ([]AutomationTarget, error) {
	targets, _, err := s.BulkTargets(ctx, SystemScope, nil, groupID, false)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(targets))
	for i, t := range targets {
		ids[i] = t.ID
	}
	type extra struct {
		ID             string
		RebootRequired bool
		SudoMode       string
	}
	ex := map[string]extra{}
	for chunk := range chunksOf(ids, 200) {
		var rows []extra
		if err := s.conn(ctx).Model(&serverRow{}).Select("id, reboot_required, sudo_mode").Where("id IN ?", chunk).Scan(&rows).Error; err != nil {
			return nil, mapErr(err, "servers")
		}
		for _, r := range rows {
			ex[r.ID] = r
		}
	}
	out := make([]AutomationTarget, len(targets))
	for i, t := range targets {
		out[i] = AutomationTarget{BulkTarget: t, RebootRequired: ex[t.ID].RebootRequired, SudoMode: ex[t.ID].SudoMode}
	}
	return out, nil
}

// ServerGroupIDs returns the groups of the given servers.
func (s *Store) ServerGroupIDs(ctx context.Context, serverIDs []string) (map[string][]string, error) {
	out := map[string][]string{}
	for chunk := range chunksOf(serverIDs, 200) {
		var rows []groupServerRow
		if err := s.conn(ctx).Select("group_id, server_id").Where("server_id IN ?", chunk).Find(&rows).Error; err != nil {
			return nil, mapErr(err, "group members")
		}
		for _, r := range rows {
			out[r.ServerID] = append(out[r.ServerID], r.GroupID)
		}
	}
	return out, nil
}

func customActionOf(r customActionRow) domain.CustomAction {
	a := domain.CustomAction{ID: r.ID, Name: r.Name, Description: r.Description, RequiresApproval: r.RequiresApproval,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, Commands: []string{}}
	_ = json.Unmarshal([]byte(r.Commands), &a.Commands)
	return a
}

// ListCustomActions returns every custom action by name.
func (s *Store) ListCustomActions(ctx context.Context) ([]domain.CustomAction, error) {
	var rows []customActionRow
	if err := s.conn(ctx).Order("name").Find(&rows).Error; err != nil {
		return nil, mapErr(err, "custom actions")
	}
	out := make([]domain.CustomAction, len(rows))
	for i, r := range rows {
		out[i] = customActionOf(r)
	}
	return out, nil
}

// GetCustomAction returns one custom action.
func (s *Store) GetCustomAction(ctx context.Context, id string) (domain.CustomAction, error) {
	var rows []customActionRow
	if err := s.conn(ctx).Where("id = ?", id).Limit(1).Find(&rows).Error; err != nil {
		return domain.CustomAction{}, mapErr(err, "custom action")
	}
	if len(rows) == 0 {
		return domain.CustomAction{}, domain.NotFound("custom action")
	}
	return customActionOf(rows[0]), nil
}

// SaveCustomAction creates (empty ID) or replaces a custom action.
func (s *Store) SaveCustomAction(ctx context.Context, a domain.CustomAction) (domain.CustomAction, error) {
	now := time.Now().UTC()
	cmds, _ := json.Marshal(a.Commands)
	if a.ID == "" {
		row := customActionRow{ID: uuid.NewString(), Name: a.Name, Description: a.Description, Commands: string(cmds),
			RequiresApproval: a.RequiresApproval, CreatedAt: now, UpdatedAt: now}
		if err := s.conn(ctx).Create(&row).Error; err != nil {
			return domain.CustomAction{}, mapErr(err, "custom action "+a.Name)
		}
		return customActionOf(row), nil
	}
	res := s.conn(ctx).Model(&customActionRow{}).Where("id = ?", a.ID).Updates(map[string]any{"name": a.Name,
		"description": a.Description, "commands": string(cmds), "requires_approval": a.RequiresApproval, "updated_at": now})
	if res.Error != nil {
		return domain.CustomAction{}, mapErr(res.Error, "custom action "+a.Name)
	}
	if res.RowsAffected == 0 {
		return domain.CustomAction{}, domain.NotFound("custom action")
	}
	return s.GetCustomAction(ctx, a.ID)
}

// DeleteCustomAction removes a custom action.
func (s *Store) DeleteCustomAction(ctx context.Context, id string) error {
	res := s.conn(ctx).Where("id = ?", id).Delete(&customActionRow{})
	if res.Error != nil {
		return mapErr(res.Error, "custom action")
	}
	if res.RowsAffected == 0 {
		return domain.NotFound("custom action")
	}
	return nil
}

// GetMaintenance returns a server's maintenance mode (ok false: off).
func (s *Store) GetMaintenance(ctx context.Context, serverID string) (domain.Maintenance, bool, error) {
	var rows []maintenanceRow
	if err := s.conn(ctx).Where("server_id = ?", serverID).Limit(1).Find(&rows).Error; err != nil {
		return domain.Maintenance{}, false, mapErr(err, "maintenance")
	}
	if len(rows) == 0 {
		return domain.Maintenance{}, false, nil
	}
	r := rows[0]
	return domain.Maintenance{ServerID: r.ServerID, Reason: r.Reason, StartedBy: r.StartedBy, StartedAt: r.StartedAt, EndsAt: r.EndsAt}, true, nil
}

// StartMaintenance puts a server in maintenance (replacing an earlier
// start: a new reason or end time).
func (s *Store) StartMaintenance(ctx context.Context, m domain.Maintenance) error {
	row := maintenanceRow{ServerID: m.ServerID, Reason: m.Reason, StartedBy: m.StartedBy, StartedAt: m.StartedAt, EndsAt: m.EndsAt}
	return mapErr(s.conn(ctx).Omit("Server").Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "server_id"}},
		DoUpdates: clause.AssignmentColumns([]string{"reason", "started_by", "started_at", "ends_at"})}).Create(&row).Error, "maintenance")
}

// EndMaintenance ends a server's maintenance; false when it was off.
func (s *Store) EndMaintenance(ctx context.Context, serverID string) (bool, error) {
	res := s.conn(ctx).Where("server_id = ?", serverID).Delete(&maintenanceRow{})
	return res.RowsAffected == 1, mapErr(res.Error, "maintenance")
}

// ExpiredMaintenance returns maintenance modes whose end time passed.
func (s *Store) ExpiredMaintenance(ctx context.Context, now time.Time) ([]domain.Maintenance, error) {
	var rows []maintenanceRow
	if err := s.conn(ctx).Where("ends_at IS NOT NULL AND ends_at <= ?", now).Find(&rows).Error; err != nil {
		return nil, mapErr(err, "maintenance")
	}
	out := make([]domain.Maintenance, len(rows))
	for i, r := range rows {
		out[i] = domain.Maintenance{ServerID: r.ServerID, Reason: r.Reason, StartedBy: r.StartedBy, StartedAt: r.StartedAt, EndsAt: r.EndsAt}
	}
	return out, nil
}

// InMaintenance returns which of the servers are in maintenance at now
// (an expired end time counts as ended).
func (s *Store) InMaintenance(ctx context.Context, serverIDs []string, now time.Time) (map[string]bool, error) {
	out := map[string]bool{}
	for chunk := range chunksOf(serverIDs, 200) {
		var rows []maintenanceRow
		if err := s.conn(ctx).Where("server_id IN ? AND (ends_at IS NULL OR ends_at > ?)", chunk, now).Find(&rows).Error; err != nil {
			return nil, mapErr(err, "maintenance")
		}
		for _, r := range rows {
			out[r.ServerID] = true
		}
	}
	return out, nil
}

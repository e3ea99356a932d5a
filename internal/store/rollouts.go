package store

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
)

// rolloutRow is one staged rollout: its plan and where it stands. The
// leader replica drives it from these rows alone, so a restarted or new
// leader resumes where the old one stopped.
type rolloutRow struct {
	ID                string `gorm:"primaryKey;size:36"`
	Action            string `gorm:"size:64;not null"`
	Target            string `gorm:"size:16;not null"`
	GroupID           string `gorm:"size:36;not null;default:''"`
	Status            string `gorm:"size:24;not null;index"`
	Reason            string `gorm:"type:text;not null;default:''"`
	CanarySize        int    `gorm:"not null;default:0"`
	BatchSize         int    `gorm:"not null;default:0"`
	BatchPercent      int    `gorm:"not null;default:0"`
	MaxFailures       int    `gorm:"not null;default:0"`
	MaxFailurePercent int    `gorm:"not null;default:0"`
	PauseSeconds      int    `gorm:"not null;default:0"`
	Concurrency       int    `gorm:"not null;default:0"`
	AbortRunning      bool   `gorm:"not null;default:false"`
	Batches           int    `gorm:"not null;default:0"`
	CurrentBatch      int    `gorm:"not null;default:0"`
	NextAt            *time.Time
	ApprovalID        string `gorm:"size:36;not null;default:''"`
	// ActionParams freezes the job params of an action that can change
	// (a custom action's commands) when the rollout is created.
	ActionParams string    `gorm:"type:text;not null;default:''"`
	CreatedBy    string    `gorm:"size:36;not null;default:''"`
	CreatedAt    time.Time `gorm:"not null;index"`
	UpdatedAt    time.Time `gorm:"not null"`
	FinishedAt   *time.Time
}

func (rolloutRow) TableName() string { return "rollouts" }

// rolloutItemRow is one server of a rollout. No foreign key to servers or
// jobs: the rollout's record outlives both.
type rolloutItemRow struct {
	RolloutID    string `gorm:"primaryKey;size:36"`
	ServerID     string `gorm:"primaryKey;size:36;index"`
	Batch        int    `gorm:"not null"`
	State        string `gorm:"size:16;not null"`
	JobID        string `gorm:"size:36;not null;default:''"`
	RefreshJobID string `gorm:"size:36;not null;default:''"`
	Reason       string `gorm:"type:text;not null;default:''"`
}

func (rolloutItemRow) TableName() string { return "rollout_items" }

func rolloutToRow(r domain.Rollout) rolloutRow {
	row := rolloutRow{ID: r.ID, Action: r.Action, Target: r.Target, GroupID: r.GroupID, Status: r.Status, Reason: r.Reason,
		CanarySize: r.CanarySize, BatchSize: r.BatchSize, BatchPercent: r.BatchPercent, MaxFailures: r.MaxFailures,
		MaxFailurePercent: r.MaxFailurePercent, PauseSeconds: r.PauseSeconds, Concurrency: r.Concurrency,
		AbortRunning: r.AbortRunning, Batches: r.Batches, CurrentBatch: r.CurrentBatch, ApprovalID: r.ApprovalID,
		ActionParams: string(r.ActionParams), CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, FinishedAt: r.FinishedAt}
	if !r.NextAt.IsZero() {
		t := r.NextAt
		row.NextAt = &t
	}
	return row
}

func rolloutFromRow(row rolloutRow) domain.Rollout {
	r := domain.Rollout{ID: row.ID, Action: row.Action, Target: row.Target, GroupID: row.GroupID, Status: row.Status,
		Reason: row.Reason, CanarySize: row.CanarySize, BatchSize: row.BatchSize, BatchPercent: row.BatchPercent,
		MaxFailures: row.MaxFailures, MaxFailurePercent: row.MaxFailurePercent, PauseSeconds: row.PauseSeconds,
		Concurrency: row.Concurrency, AbortRunning: row.AbortRunning, Batches: row.Batches, CurrentBatch: row.CurrentBatch,
		ApprovalID: row.ApprovalID, CreatedBy: row.CreatedBy, CreatedAt: row.CreatedAt, UpdatedAt: row.UpdatedAt,
		FinishedAt: row.FinishedAt}
	if row.ActionParams != "" {
		r.ActionParams = json.RawMessage(row.ActionParams)
	}
	if row.NextAt != nil {
		r.NextAt = *row.NextAt
	}
	return r
}

// CreateRollout stores a rollout with its items in one transaction. A
// server that belongs to another active rollout (awaiting approval,
// running or paused) refuses the whole rollout with a conflict
// (rollout_in_progress) naming that rollout: one rollout at a time per
// server, so per scope.
func (s *Store) CreateRollout(ctx context.Context, r domain.Rollout) error {
	return s.InTx(ctx, func(tx *Store) error {
		ids := make([]string, len(r.Items))
		for i, it := range r.Items {
			ids[i] = it.ServerID
		}
		if other, err := tx.activeRolloutOf(ctx, ids); err != nil {
			return err
		} else if other != "" {
			return domain.Conflict("rollout_in_progress",
				fmt.Sprintf("rollout %s is still active on some of these servers; one rollout at a time per scope (wait, or abort it)", other))
		}
		row := rolloutToRow(r)
		if err := tx.conn(ctx).Create(&row).Error; err != nil {
			return mapErr(err, "rollout")
		}
		items := make([]rolloutItemRow, len(r.Items))
		for i, it := range r.Items {
			items[i] = rolloutItemRow{RolloutID: r.ID, ServerID: it.ServerID, Batch: it.Batch, State: it.State, Reason: it.Reason}
		}
		if len(items) > 0 {
			if err := tx.conn(ctx).CreateInBatches(items, tx.bulkInsertRows()).Error; err != nil {
				return mapErr(err, "rollout items")
			}
		}
		return nil
	})
}

func activeRolloutStatuses() []string {
	return []string{domain.RolloutAwaitingApproval, domain.RolloutRunning, domain.RolloutPaused}
}

// activeRolloutOf returns an active rollout holding one of the servers.
func (s *Store) activeRolloutOf(ctx context.Context, serverIDs []string) (string, error) {
	for chunk := range chunksOf(serverIDs, 200) {
		var ids []string
		err := s.conn(ctx).Table("rollout_items i").Joins("JOIN rollouts r ON r.id = i.rollout_id").
			Where("i.server_id IN ? AND r.status IN ?", chunk, activeRolloutStatuses()).Limit(1).Pluck("r.id", &ids).Error
		if err != nil {
			return "", mapErr(err, "rollouts")
		}
		if len(ids) > 0 {
			return ids[0], nil
		}
	}
	return "", nil
}

// GetRollout returns a rollout with its items (current job statuses and
// server names) if every one of its servers is visible in sc.
func (s *Store) GetRollout(ctx context.Context, sc Scope, id string) (domain.Rollout, error) {
	var row rolloutRow
	if err := s.conn(ctx).Where("id = ?", id).Take(&row).Error; err != nil {
		return domain.Rollout{}, mapErr(err, "rollout")
	}
	if !sc.all {
		ok, err := s.rolloutInScope(ctx, sc, id)
		if err != nil {
			return domain.Rollout{}, err
		}
		if !ok {
			return domain.Rollout{}, domain.NotFound("rollout")
		}
	}
	r := rolloutFromRow(row)
	items, err := s.RolloutItems(ctx, id)
	if err != nil {
		return r, err
	}
	r.Items = items
	return r, nil
}

func (s *Store) rolloutInScope(ctx context.Context, sc Scope, id string) (bool, error) {
	var total, visible int64
	if err := s.conn(ctx).Model(&rolloutItemRow{}).Where("rollout_id = ?", id).Count(&total).Error; err != nil {
		return false, mapErr(err, "rollout items")
	}
	q := applyServerScope(s.conn(ctx).Model(&rolloutItemRow{}).Where("rollout_id = ?", id), "server_id", sc)
	if err := q.Count(&visible).Error; err != nil {
		return false, mapErr(err, "rollout items")
	}
	return total == visible, nil
}

// RolloutItems returns a rollout's items with their jobs' statuses and
// server names, by batch then server name.
func (s *Store) RolloutItems(ctx context.Context, id string) ([]domain.RolloutItem, error) {
	return s.rolloutItems(ctx, id, true)
}

// RolloutState returns a rollout with its items' states and job statuses
// but without server names (the driver's read: names cost a second query
// per 200 servers and decryption).
func (s *Store) RolloutState(ctx context.Context, id string) (domain.Rollout, error) {
	var row rolloutRow
	if err := s.conn(ctx).Where("id = ?", id).Take(&row).Error; err != nil {
		return domain.Rollout{}, mapErr(err, "rollout")
	}
	r := rolloutFromRow(row)
	items, err := s.rolloutItems(ctx, id, false)
	r.Items = items
	return r, err
}

func (s *Store) rolloutItems(ctx context.Context, id string, withNames bool) ([]domain.RolloutItem, error) {
	type itemStatus struct {
		ServerID     string
		Batch        int
		State        string
		JobID        string
		RefreshJobID string
		Reason       string
		JobStatus    *string
	}
	var rows []itemStatus
	err := s.conn(ctx).Table("rollout_items i").
		Select("i.server_id AS server_id, i.batch AS batch, i.state AS state, i.job_id AS job_id, i.refresh_job_id AS refresh_job_id, i.reason AS reason, COALESCE(rj.status, j.status) AS job_status").
		// Two joins on the primary key (a join on an expression would scan
		// the jobs table once per item).
		Joins("LEFT JOIN jobs j ON j.id = i.job_id").
		Joins("LEFT JOIN jobs rj ON rj.id = i.refresh_job_id").
		Where("i.rollout_id = ?", id).Scan(&rows).Error
	if err != nil {
		return nil, mapErr(err, "rollout items")
	}
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.ServerID
	}
	names := map[string]string{}
	if !withNames {
		ids = nil
	}
	for chunk := range chunksOf(ids, 200) {
		var srv []serverRow
		if err := s.conn(ctx).Select("id", "name").Where("id IN ?", chunk).Find(&srv).Error; err != nil {
			return nil, mapErr(err, "servers")
		}
		for _, r := range srv {
			names[r.ID] = r.Name
		}
	}
	out := make([]domain.RolloutItem, len(rows))
	for i, r := range rows {
		it := domain.RolloutItem{ServerID: r.ServerID, ServerName: names[r.ServerID], Batch: r.Batch, State: r.State, JobID: r.JobID,
			RefreshJobID: r.RefreshJobID, Reason: r.Reason}
		if r.JobStatus != nil {
			it.JobStatus = domain.JobStatus(*r.JobStatus)
		} else if r.JobID != "" {
			it.JobStatus = domain.JobFailed // the job row is gone (history retention)
		}
		out[i] = it
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Batch != out[j].Batch {
			return out[i].Batch < out[j].Batch
		}
		if out[i].ServerName != out[j].ServerName {
			return out[i].ServerName < out[j].ServerName
		}
		return out[i].ServerID < out[j].ServerID
	})
	return out, nil
}

// RolloutFilter selects rollouts to list.
type RolloutFilter struct {
	Status string
	Limit  int
}

// ListRollouts lists the rollouts visible in sc, newest first, without
// items.
func (s *Store) ListRollouts(ctx context.Context, sc Scope, f RolloutFilter) ([]domain.Rollout, error) {
	q := s.conn(ctx).Model(&rolloutRow{})
	if f.Status != "" {
		q = q.Where("status = ?", f.Status)
	}
	if !sc.all {
		if sc.userID == "" {
			return []domain.Rollout{}, nil
		}
		q = q.Where(`id NOT IN (SELECT i.rollout_id FROM rollout_items i WHERE i.server_id NOT IN (SELECT gs.server_id FROM group_servers gs
			JOIN group_managers gm ON gm.group_id = gs.group_id WHERE gm.user_id = ?))`, sc.userID)
	}
	if f.Limit <= 0 || f.Limit > 500 {
		f.Limit = 100
	}
	var rows []rolloutRow
	if err := q.Order("created_at DESC").Limit(f.Limit).Find(&rows).Error; err != nil {
		return nil, mapErr(err, "rollouts")
	}
	out := make([]domain.Rollout, len(rows))
	for i, r := range rows {
		out[i] = rolloutFromRow(r)
	}
	return out, nil
}

// RolloutSummaries returns item counts per state of the given rollouts.
func (s *Store) RolloutSummaries(ctx context.Context, ids []string) (map[string]map[string]int, error) {
	out := map[string]map[string]int{}
	for chunk := range chunksOf(ids, 200) {
		var rows []struct {
			RolloutID string
			State     string
			N         int
		}
		err := s.conn(ctx).Model(&rolloutItemRow{}).Select("rollout_id, state, COUNT(*) AS n").
			Where("rollout_id IN ?", chunk).Group("rollout_id, state").Scan(&rows).Error
		if err != nil {
			return nil, mapErr(err, "rollout items")
		}
		for _, r := range rows {
			if out[r.RolloutID] == nil {
				out[r.RolloutID] = map[string]int{}
			}
			out[r.RolloutID][r.State] = r.N
		}
	}
	return out, nil
}

// RolloutIDsWithStatus lists the ids of rollouts with a status, oldest
// first.
func (s *Store) RolloutIDsWithStatus(ctx context.Context, status string) ([]string, error) {
	var ids []string
	err := s.conn(ctx).Model(&rolloutRow{}).Where("status = ?", status).Order("created_at").Pluck("id", &ids).Error
	return ids, mapErr(err, "rollouts")
}

// RolloutUpdate is a change of a rollout's state.
type RolloutUpdate struct {
	Status       *string
	Reason       *string
	CurrentBatch *int
	NextAt       *time.Time
	ApprovalID   *string
	AbortRunning *bool
	Finished     bool
}

// UpdateRollout applies u if the rollout's status is one of from (any when
// from is empty) and reports whether it did.
func (s *Store) UpdateRollout(ctx context.Context, id string, from []string, u RolloutUpdate, now time.Time) (bool, error) {
	set := map[string]any{"updated_at": now}
	if u.Status != nil {
		set["status"] = *u.Status
	}
	if u.Reason != nil {
		set["reason"] = *u.Reason
	}
	if u.CurrentBatch != nil {
		set["current_batch"] = *u.CurrentBatch
	}
	if u.NextAt != nil {
		set["next_at"] = *u.NextAt
	}
	if u.ApprovalID != nil {
		set["approval_id"] = *u.ApprovalID
	}
	if u.AbortRunning != nil {
		set["abort_running"] = *u.AbortRunning
	}
	if u.Finished {
		set["finished_at"] = now
	}
	q := s.conn(ctx).Model(&rolloutRow{}).Where("id = ?", id)
	if len(from) > 0 {
		q = q.Where("status IN ?", from)
	}
	res := q.Updates(set)
	if res.Error != nil {
		return false, mapErr(res.Error, "rollout")
	}
	return res.RowsAffected > 0, nil
}

// RolloutItemUpdate changes one item.
type RolloutItemUpdate struct {
	ServerID     string
	State        string
	JobID        *string
	RefreshJobID *string
	Reason       *string
}

// UpdateRolloutItems applies the item changes in one transaction.
func (s *Store) UpdateRolloutItems(ctx context.Context, rolloutID string, us []RolloutItemUpdate) error {
	if len(us) == 0 {
		return nil
	}
	return s.InTx(ctx, func(tx *Store) error {
		for _, u := range us {
			set := map[string]any{"state": u.State}
			if u.JobID != nil {
				set["job_id"] = *u.JobID
			}
			if u.RefreshJobID != nil {
				set["refresh_job_id"] = *u.RefreshJobID
			}
			if u.Reason != nil {
				set["reason"] = *u.Reason
			}
			err := tx.conn(ctx).Model(&rolloutItemRow{}).Where("rollout_id = ? AND server_id = ?", rolloutID, u.ServerID).Updates(set).Error
			if err != nil {
				return mapErr(err, "rollout items")
			}
		}
		return nil
	})
}

// AbortRolloutPending marks every pending item of a rollout aborted with a
// reason.
func (s *Store) AbortRolloutPending(ctx context.Context, rolloutID, reason string) error {
	err := s.conn(ctx).Model(&rolloutItemRow{}).Where("rollout_id = ? AND state = ?", rolloutID, domain.ItemPending).
		Updates(map[string]any{"state": domain.ItemAborted, "reason": reason}).Error
	return mapErr(err, "rollout items")
}

// RolloutPlanTarget is a server of a planned rollout with what the
// inventory says about it.
type RolloutPlanTarget struct {
	BulkTarget
	RebootRequired  bool
	Updates         int
	SecurityUpdates int
}

// RolloutTargets resolves a rollout's servers as BulkTargets does, with
// their reboot-required flag and update counters.
func (s *Store) RolloutTargets(ctx context.Context, sc Scope, ids []string, groupID string, all bool) ([]RolloutPlanTarget, []string, error) {
	ts, missing, err := s.BulkTargets(ctx, sc, ids, groupID, all)
	if err != nil || len(ts) == 0 {
		return nil, missing, err
	}
	byID := map[string]*RolloutPlanTarget{}
	out := make([]RolloutPlanTarget, len(ts))
	sids := make([]string, len(ts))
	for i, t := range ts {
		out[i] = RolloutPlanTarget{BulkTarget: t}
		byID[t.ID] = &out[i]
		sids[i] = t.ID
	}
	for chunk := range chunksOf(sids, 200) {
		var rows []serverFactsRow
		if err := s.conn(ctx).Omit("Server").Select("server_id", "updates", "security_updates", "reboot_required").
			Where("server_id IN ?", chunk).Find(&rows).Error; err != nil {
			return nil, nil, mapErr(err, "server facts")
		}
		for _, r := range rows {
			if t := byID[r.ServerID]; t != nil {
				t.RebootRequired, t.Updates, t.SecurityUpdates = r.RebootRequired, r.Updates, r.SecurityUpdates
			}
		}
	}
	return out, missing, nil
}

// OutdatedOf returns the outdated packages of servers (no scope: the
// caller resolved the servers through its scope), by server id.
func (s *Store) OutdatedOf(ctx context.Context, serverIDs []string) (map[string][]OutdatedRecord, error) {
	out := map[string][]OutdatedRecord{}
	for chunk := range chunksOf(serverIDs, 200) {
		var rows []serverOutdatedRow
		if err := s.conn(ctx).Omit("Server").Where("server_id IN ?", chunk).Order("server_id, name, arch").Find(&rows).Error; err != nil {
			return nil, mapErr(err, "outdated packages")
		}
		for _, r := range rows {
			out[r.ServerID] = append(out[r.ServerID], OutdatedRecord{Name: r.Name, Arch: r.Arch, Current: r.Current,
				Candidate: r.Candidate, Security: r.Security, Held: r.Held})
		}
	}
	return out, nil
}

// UserNames returns the usernames of user ids (unknown ids are left out).
func (s *Store) UserNames(ctx context.Context, ids []string) (map[string]string, error) {
	out := map[string]string{}
	var uniq []string
	seen := map[string]bool{}
	for _, id := range ids {
		if id != "" && !seen[id] {
			seen[id] = true
			uniq = append(uniq, id)
		}
	}
	for chunk := range chunksOf(uniq, 200) {
		var rows []userRow
		if err := s.conn(ctx).Select("id", "username").Where("id IN ?", chunk).Find(&rows).Error; err != nil {
			return nil, mapErr(err, "users")
		}
		for _, r := range rows {
			out[r.ID] = r.Username
		}
	}
	return out, nil
}

// RolloutsToDrive lists the rollouts the driver must look at: running
// ones, and any with items still in flight; oldest first.
func (s *Store) RolloutsToDrive(ctx context.Context) ([]string, error) {
	var ids []string
	err := s.conn(ctx).Model(&rolloutRow{}).
		Where("status = ? OR id IN (SELECT rollout_id FROM rollout_items WHERE state IN ?)", domain.RolloutRunning,
			[]string{domain.ItemRunning, domain.ItemRefreshing}).
		Order("created_at").Pluck("id", &ids).Error
	return ids, mapErr(err, "rollouts")
}

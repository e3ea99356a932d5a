package store

import (
	"context"
	"sort"
	"time"

	"gorm.io/gorm"

	"github.com/lcmproject/lcm/internal/domain"
)

// bulkRunRow is one bulk run (one request, many servers).
type bulkRunRow struct {
	ID string `gorm:"primaryKey;size:36"`
	// Action names what ran: "rollout:custom:<id>" or
	// "custom-action:<name>" need more than 32 characters.
	Action    string    `gorm:"size:200;not null"`
	Kind      string    `gorm:"size:32;not null;index"`
	Target    string    `gorm:"size:16;not null"`
	GroupID   string    `gorm:"size:36;not null;default:''"`
	CreatedBy string    `gorm:"size:36;not null;default:''"`
	CreatedAt time.Time `gorm:"index"`
}

func (bulkRunRow) TableName() string { return "bulk_runs" }

// bulkItemRow is one server of a bulk run: its job id, or the refusal.
// No foreign key to servers or jobs: the run's record outlives both.
type bulkItemRow struct {
	BulkID   string `gorm:"primaryKey;size:36"`
	ServerID string `gorm:"primaryKey;size:36"`
	JobID    string `gorm:"size:36;not null;default:'';index"`
	Refused  string `gorm:"size:32;not null;default:''"`
	Reason   string `gorm:"type:text;not null;default:''"`
}

func (bulkItemRow) TableName() string { return "bulk_run_items" }

var bulkMigration = Migration{ID: "fleet/003_bulk_runs", Up: func(tx *gorm.DB) error {
	return tx.AutoMigrate(&bulkRunRow{}, &bulkItemRow{})
}}

// BulkTarget is a server a bulk run may start a job on.
type BulkTarget struct {
	ID            string
	Name          string
	Joined        bool
	Segment       string // resolved: own, else first group's (by name), else default
	PackageFamily string
}

// BulkTargets resolves a bulk run's servers visible in sc: the given ids
// (missing lists those that do not exist or are not visible), every
// server of groupID, or (all) every visible server. Credentials are never
// read.
func (s *Store) BulkTargets(ctx context.Context, sc Scope, ids []string, groupID string, all bool) (targets []BulkTarget, missing []string, err error) {
	var rows []serverRow
	cols := []string{"id", "name", "joined", "segment", "pkg_family"}
	switch {
	case len(ids) > 0:
		for chunk := range chunksOf(ids, 200) {
			var part []serverRow
			q := applyServerScope(s.conn(ctx).Model(&serverRow{}), "id", sc).Select(cols).Where("id IN ?", chunk)
			if err := q.Find(&part).Error; err != nil {
				return nil, nil, mapErr(err, "servers")
			}
			rows = append(rows, part...)
		}
		found := make(map[string]bool, len(rows))
		for _, r := range rows {
			found[r.ID] = true
		}
		seen := map[string]bool{}
		for _, id := range ids {
			if !found[id] && !seen[id] {
				missing = append(missing, id)
			}
			seen[id] = true
		}
	case groupID != "":
		q := applyServerScope(s.conn(ctx).Model(&serverRow{}), "id", sc).Select(cols).
			Where("id IN (SELECT server_id FROM group_servers WHERE group_id = ?)", groupID)
		if err := q.Find(&rows).Error; err != nil {
			return nil, nil, mapErr(err, "servers")
		}
	case all:
		if err := applyServerScope(s.conn(ctx).Model(&serverRow{}), "id", sc).Select(cols).Find(&rows).Error; err != nil {
			return nil, nil, mapErr(err, "servers")
		}
	}
	// Group segments of the servers without their own, in one read.
	type gseg struct {
		ServerID string
		Segment  string
		Name     string
	}
	var gs []gseg
	err = s.conn(ctx).Raw(`SELECT gs.server_id AS server_id, g.segment AS segment, g.name AS name
		FROM group_servers gs JOIN server_groups g ON g.id = gs.group_id WHERE g.segment <> ''`).Scan(&gs).Error
	if err != nil {
		return nil, nil, mapErr(err, "servers")
	}
	sort.Slice(gs, func(i, j int) bool { return gs[i].Name < gs[j].Name })
	groupSeg := map[string]string{}
	for _, g := range gs {
		if _, ok := groupSeg[g.ServerID]; !ok {
			groupSeg[g.ServerID] = g.Segment
		}
	}
	for _, r := range rows {
		seg := r.Segment
		if seg == "" {
			seg = groupSeg[r.ID]
		}
		if seg == "" {
			seg = domain.DefaultSegment
		}
		targets = append(targets, BulkTarget{ID: r.ID, Name: r.Name, Joined: r.Joined, Segment: seg, PackageFamily: r.PkgFamily})
	}
	sort.Slice(targets, func(i, j int) bool { return targets[i].Name < targets[j].Name })
	return targets, missing, nil
}

// ActiveJobsOf returns the pending or running job of each of the servers
// that has one (one read per 200 servers).
func (s *Store) ActiveJobsOf(ctx context.Context, serverIDs []string) (map[string]string, error) {
	out := map[string]string{}
	for chunk := range chunksOf(serverIDs, 200) {
		var rows []jobRow
		err := s.conn(ctx).Model(&jobRow{}).Select("id", "server_id").
			Where("server_id IN ? AND status IN ?", chunk, activeStatuses()).Find(&rows).Error
		if err != nil {
			return nil, mapErr(err, "jobs")
		}
		for _, r := range rows {
			out[r.ServerID] = r.ID
		}
	}
	return out, nil
}

// CreateBulkRun stores a new bulk run without items.
func (s *Store) CreateBulkRun(ctx context.Context, r domain.BulkRun) error {
	row := bulkRunRow{ID: r.ID, Action: r.Action, Kind: string(r.Kind), Target: r.Target, GroupID: r.GroupID,
		CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt}
	return mapErr(s.conn(ctx).Create(&row).Error, "bulk run")
}

// AddBulkBatch stores one batch of a bulk run in one transaction: the new
// job rows (multi-row inserts) and the run's items for them and for the
// refused servers.
func (s *Store) AddBulkBatch(ctx context.Context, bulkID string, jobs []domain.Job, refused []domain.BulkItem) error {
	return s.InTx(ctx, func(tx *Store) error {
		db := tx.conn(ctx)
		if len(jobs) > 0 {
			rows := make([]jobRow, len(jobs))
			items := make([]bulkItemRow, len(jobs))
			for i, j := range jobs {
				rows[i] = jobRow{ID: j.ID, Kind: string(j.Kind), ServerID: j.ServerID, Segment: j.Segment, Status: string(j.Status),
					CreatedBy: j.CreatedBy, CreatedAt: j.CreatedAt, Params: string(j.Params)}
				items[i] = bulkItemRow{BulkID: bulkID, ServerID: j.ServerID, JobID: j.ID}
			}
			if err := db.CreateInBatches(rows, tx.bulkInsertRows()).Error; err != nil {
				return mapErr(err, "jobs")
			}
			if err := db.CreateInBatches(items, tx.bulkInsertRows()).Error; err != nil {
				return mapErr(err, "bulk run items")
			}
		}
		if len(refused) > 0 {
			items := make([]bulkItemRow, len(refused))
			for i, it := range refused {
				items[i] = bulkItemRow{BulkID: bulkID, ServerID: it.ServerID, Refused: it.Refused, Reason: it.Reason}
			}
			if err := db.CreateInBatches(items, tx.bulkInsertRows()).Error; err != nil {
				return mapErr(err, "bulk run items")
			}
		}
		return nil
	})
}

// bulkInsertRows is the rows per INSERT statement: SQLite's driver binds
// parameters in quadratic time, so its statements stay short.
func (s *Store) bulkInsertRows() int {
	if s.dialect == Postgres {
		return 500
	}
	return 25
}

// RefuseBulkJobs turns items whose jobs never reached the bus into
// refusals and deletes those jobs, in one transaction.
func (s *Store) RefuseBulkJobs(ctx context.Context, bulkID string, items []domain.BulkItem) error {
	if len(items) == 0 {
		return nil
	}
	return s.InTx(ctx, func(tx *Store) error {
		for _, it := range items {
			if err := tx.conn(ctx).Where("id = ?", it.JobID).Delete(&jobRow{}).Error; err != nil {
				return mapErr(err, "job")
			}
			err := tx.conn(ctx).Model(&bulkItemRow{}).Where("bulk_id = ? AND server_id = ?", bulkID, it.ServerID).
				Updates(map[string]any{"job_id": "", "refused": it.Refused, "reason": it.Reason}).Error
			if err != nil {
				return mapErr(err, "bulk run items")
			}
		}
		return nil
	})
}

// GetBulkRun returns a bulk run with its items whose servers are visible
// in sc (current job statuses, server names). A run is visible to its
// creator and to admins (sc.All); others get ErrNotFound.
func (s *Store) GetBulkRun(ctx context.Context, sc Scope, userID, id string) (domain.BulkRun, error) {
	var row bulkRunRow
	if err := s.conn(ctx).Where("id = ?", id).Take(&row).Error; err != nil {
		return domain.BulkRun{}, mapErr(err, "bulk run")
	}
	if !sc.all && row.CreatedBy != userID {
		return domain.BulkRun{}, domain.NotFound("bulk run")
	}
	return s.bulkRunWithItems(ctx, sc, row)
}

// LatestBulkRun returns the newest bulk run of an action visible in sc
// (created by userID unless sc.All), or ErrNotFound.
func (s *Store) LatestBulkRun(ctx context.Context, sc Scope, userID, action string) (domain.BulkRun, error) {
	q := s.conn(ctx).Where("action = ?", action)
	if !sc.all {
		q = q.Where("created_by = ?", userID)
	}
	var row bulkRunRow
	if err := q.Order("created_at DESC").Take(&row).Error; err != nil {
		return domain.BulkRun{}, mapErr(err, "bulk run")
	}
	return s.bulkRunWithItems(ctx, sc, row)
}

func (s *Store) bulkRunWithItems(ctx context.Context, sc Scope, row bulkRunRow) (domain.BulkRun, error) {
	out := domain.BulkRun{ID: row.ID, Action: row.Action, Kind: domain.JobKind(row.Kind), Target: row.Target,
		GroupID: row.GroupID, CreatedBy: row.CreatedBy, CreatedAt: row.CreatedAt}
	type itemStatus struct {
		ServerID string
		JobID    string
		Refused  string
		Reason   string
		Status   *string
	}
	var items []itemStatus
	q := s.conn(ctx).Table("bulk_run_items i").
		Select("i.server_id AS server_id, i.job_id AS job_id, i.refused AS refused, i.reason AS reason, j.status AS status").
		Joins("LEFT JOIN jobs j ON j.id = i.job_id AND i.job_id <> ''").Where("i.bulk_id = ?", row.ID)
	if err := applyServerScope(q, "i.server_id", sc).Scan(&items).Error; err != nil {
		return out, mapErr(err, "bulk run items")
	}
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = it.ServerID
	}
	names := map[string]string{}
	for chunk := range chunksOf(ids, 200) {
		var srv []serverRow
		if err := s.conn(ctx).Select("id", "name").Where("id IN ?", chunk).Find(&srv).Error; err != nil {
			return out, mapErr(err, "servers")
		}
		for _, r := range srv {
			names[r.ID] = r.Name
		}
	}
	out.Items = make([]domain.BulkItem, len(items))
	for i, it := range items {
		bi := domain.BulkItem{ServerID: it.ServerID, ServerName: names[it.ServerID], JobID: it.JobID, Refused: it.Refused, Reason: it.Reason}
		if it.JobID != "" {
			// A job row that no longer exists (history retention) counts as
			// failed: its outcome can no longer be shown.
			bi.Status = domain.JobFailed
			if it.Status != nil {
				bi.Status = domain.JobStatus(*it.Status)
			}
		}
		out.Items[i] = bi
	}
	sort.Slice(out.Items, func(i, j int) bool { return out.Items[i].ServerName < out.Items[j].ServerName })
	return out, nil
}

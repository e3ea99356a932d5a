package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/lcmproject/lcm/internal/domain"
)

// CreateJob stores a new job row.
func (s *Store) CreateJob(ctx context.Context, j domain.Job) error {
	row := jobRow{ID: j.ID, Kind: string(j.Kind), ServerID: j.ServerID, Segment: j.Segment, Status: string(j.Status),
		CreatedBy: j.CreatedBy, CreatedAt: j.CreatedAt, Params: string(j.Params)}
	if row.CreatedAt.IsZero() {
		row.CreatedAt = time.Now().UTC()
	}
	// In a transaction of its own so it queues for SQLite's writer in the
	// process (InTx) instead of sleeping in SQLite's busy handler: a job
	// submitted during a fleet-wide run starts without that wait.
	return s.InTx(ctx, func(tx *Store) error {
		return mapErr(tx.conn(ctx).Create(&row).Error, "job")
	})
}

// DeleteJob removes a job that never reached the bus (submit rollback).
func (s *Store) DeleteJob(ctx context.Context, id string) error {
	return mapErr(s.conn(ctx).Where("id = ?", id).Delete(&jobRow{}).Error, "job")
}

// GetJob returns a job whose server is visible in sc.
func (s *Store) GetJob(ctx context.Context, sc Scope, id string) (domain.Job, error) {
	var row jobRow
	q := applyServerScope(s.conn(ctx).Model(&jobRow{}), "server_id", sc)
	if err := q.Where("id = ?", id).Take(&row).Error; err != nil {
		return domain.Job{}, mapErr(err, "job")
	}
	out, err := s.decorateJobs(ctx, []jobRow{row})
	if err != nil {
		return domain.Job{}, err
	}
	return out[0], nil
}

// JobState returns a job by id without its server name (system use on the
// hot paths: claim, ingest, reaper).
func (s *Store) JobState(ctx context.Context, id string) (domain.Job, error) {
	var row jobRow
	if err := s.conn(ctx).Where("id = ?", id).Take(&row).Error; err != nil {
		return domain.Job{}, mapErr(err, "job")
	}
	return jobFromRow(row), nil
}

// ListJobs returns the history visible in sc, newest first, and the total
// number of matching jobs.
func (s *Store) ListJobs(ctx context.Context, sc Scope, f domain.JobFilter) ([]domain.Job, int64, error) {
	q := applyServerScope(s.conn(ctx).Model(&jobRow{}), "server_id", sc)
	if f.ServerID != "" {
		q = q.Where("server_id = ?", f.ServerID)
	}
	if f.Status != "" {
		q = q.Where("status = ?", string(f.Status))
	}
	if f.Kind != "" {
		q = q.Where("kind = ?", string(f.Kind))
	}
	var total int64
	if err := q.Count(&total).Error; err != nil {
		return nil, 0, mapErr(err, "jobs")
	}
	var rows []jobRow
	if err := q.Order("created_at DESC, id DESC").Limit(f.Limit).Offset(f.Offset).Find(&rows).Error; err != nil {
		return nil, 0, mapErr(err, "jobs")
	}
	out, err := s.decorateJobs(ctx, rows)
	return out, total, err
}

// JobFilterOptions lists the statuses and job names present in sc's history.
func (s *Store) JobFilterOptions(ctx context.Context, sc Scope) (statuses, kinds []string, err error) {
	q := func() *gorm.DB { return applyServerScope(s.conn(ctx).Model(&jobRow{}), "server_id", sc) }
	if err = q().Distinct().Order("status").Pluck("status", &statuses).Error; err != nil {
		return nil, nil, mapErr(err, "jobs")
	}
	if err = q().Distinct().Order("kind").Pluck("kind", &kinds).Error; err != nil {
		return nil, nil, mapErr(err, "jobs")
	}
	return orEmpty(statuses), orEmpty(kinds), nil
}

// ActiveJob returns the pending or running job of a visible server.
func (s *Store) ActiveJob(ctx context.Context, sc Scope, serverID string) (domain.Job, error) {
	var row jobRow
	q := applyServerScope(s.conn(ctx).Model(&jobRow{}), "server_id", sc)
	if err := q.Where("server_id = ? AND status IN ?", serverID, activeStatuses()).Order("created_at DESC").Take(&row).Error; err != nil {
		return domain.Job{}, mapErr(err, "active job")
	}
	out, err := s.decorateJobs(ctx, []jobRow{row})
	if err != nil {
		return domain.Job{}, err
	}
	return out[0], nil
}

// ActiveJobID returns the id of a server's pending or running job, or "".
func (s *Store) ActiveJobID(ctx context.Context, serverID string) (string, error) {
	var ids []string
	err := s.conn(ctx).Model(&jobRow{}).Where("server_id = ? AND status IN ?", serverID, activeStatuses()).
		Limit(1).Pluck("id", &ids).Error
	if err != nil || len(ids) == 0 {
		return "", mapErr(err, "jobs")
	}
	return ids[0], nil
}

func (s *Store) decorateJobs(ctx context.Context, rows []jobRow) ([]domain.Job, error) {
	out := make([]domain.Job, len(rows))
	if len(rows) == 0 {
		return out, nil
	}
	idSet := map[string]bool{}
	var ids []string
	for _, r := range rows {
		if !idSet[r.ServerID] {
			idSet[r.ServerID] = true
			ids = append(ids, r.ServerID)
		}
	}
	var srv []serverRow
	if err := s.conn(ctx).Select("id", "name").Where("id IN ?", ids).Find(&srv).Error; err != nil {
		return nil, mapErr(err, "servers")
	}
	names := map[string]string{}
	for _, r := range srv {
		names[r.ID] = r.Name
	}
	for i, r := range rows {
		out[i] = jobFromRow(r)
		out[i].ServerName = names[r.ServerID]
	}
	return out, nil
}

func jobFromRow(r jobRow) domain.Job {
	return domain.Job{
		ID: r.ID, Kind: domain.JobKind(r.Kind), ServerID: r.ServerID, Segment: r.Segment,
		Status: domain.JobStatus(r.Status), WorkerID: r.WorkerID, CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt,
		StartedAt: r.StartedAt, FinishedAt: r.FinishedAt, HeartbeatAt: r.HeartbeatAt, ExitCode: r.ExitCode,
		Error: r.Error, OutputBytes: r.OutputBytes, Params: []byte(r.Params), Result: []byte(r.Result),
		StateSeq: r.StateSeq, FinalBy: domain.FinalSource(r.FinalBy),
	}
}

// ClaimJob moves a pending job to started for a worker: the claim is the
// credential request, so a job runs on exactly one worker even if its queue
// message is redelivered. A repeated claim by the same worker succeeds; any
// other state is a conflict with code "not_claimable".
func (s *Store) ClaimJob(ctx context.Context, jobID, serverID, workerID string, at time.Time) (domain.Job, error) {
	var out domain.Job
	err := s.InTx(ctx, func(tx *Store) error {
		var row jobRow
		if err := tx.conn(ctx).Where("id = ?", jobID).Take(&row).Error; err != nil {
			return mapErr(err, "job")
		}
		if row.ServerID != serverID {
			return domain.Conflict("not_claimable", "job belongs to another server")
		}
		switch domain.JobStatus(row.Status) {
		case domain.JobPending:
			res := tx.conn(ctx).Model(&jobRow{}).Where("id = ? AND status = ?", jobID, row.Status).
				Updates(map[string]any{"status": string(domain.JobStarted), "worker_id": workerID,
					"started_at": at, "heartbeat_at": at})
			if res.Error != nil {
				return mapErr(res.Error, "job")
			}
			if res.RowsAffected != 1 {
				return domain.Conflict("not_claimable", "job was claimed concurrently")
			}
			row.Status, row.WorkerID, row.StartedAt, row.HeartbeatAt = string(domain.JobStarted), workerID, &at, &at
		case domain.JobStarted, domain.JobRunning:
			if row.WorkerID != workerID {
				return domain.Conflict("not_claimable", "job runs on another worker")
			}
		default:
			return domain.Conflict("not_claimable", "job is "+row.Status)
		}
		out = jobFromRow(row)
		return nil
	})
	return out, err
}

// JobUpdate is a state change reported for a job.
type JobUpdate struct {
	Status   domain.JobStatus
	WorkerID string // when set, only that worker's job changes
	// Seq is the worker's number of this report (domain.StateReport);
	// Control marks a final state the control plane decided without the
	// worker (reaper, abort), which never replaces a worker's report.
	Seq      int64
	Control  bool
	At       time.Time
	ExitCode *int
	Error    string
	Result   []byte
	// OutputBytes is the output size the worker produced; the row's
	// output_bytes grows to it, so "complete" waits for every chunk.
	OutputBytes int64
	// Data and Unreachable are handed to the finish hooks (domain.Job's
	// fields of the same names); they are not stored.
	Data        []byte
	Unreachable bool
}

// Report is u as the rule of domain.Job.Accepts sees it.
func (u JobUpdate) Report() domain.StateReport {
	return domain.StateReport{Status: u.Status, WorkerID: u.WorkerID, Seq: u.Seq, Control: u.Control}
}

// TransitionJob applies u if domain.Job.Accepts allows it. It reports
// whether the job changed; a repeated or out-of-order update is ignored, so
// redelivered events are harmless.
func (s *Store) TransitionJob(ctx context.Context, jobID string, u JobUpdate) (domain.Job, bool, error) {
	var out TransitionResult
	err := s.InTx(ctx, func(tx *Store) error {
		var err error
		out, err = tx.transitionJob(ctx, jobID, u)
		return err
	})
	if err != nil {
		return domain.Job{}, false, err
	}
	return out.Job, out.Changed, out.Err
}

// JobTransition is one update of TransitionJobs.
type JobTransition struct {
	JobID  string
	Update JobUpdate
}

// TransitionResult is the outcome of one JobTransition.
type TransitionResult struct {
	Job     domain.Job
	Changed bool
	// Prev is the job as it was before (Changed) or as it is (refused).
	Prev domain.Job
	Err  error // domain.ErrNotFound for an unknown job
}

// TransitionJobs is TransitionJob for many updates, applied in order in
// one transaction (the jobs ingest stores a batch of events at once). An
// unknown job fails alone with domain.ErrNotFound; any other error rolls
// back all of them.
func (s *Store) TransitionJobs(ctx context.Context, ts []JobTransition) ([]TransitionResult, error) {
	if len(ts) == 0 {
		return nil, nil
	}
	out := make([]TransitionResult, len(ts))
	err := s.InTx(ctx, func(tx *Store) error {
		for i, t := range ts {
			r, err := tx.transitionJob(ctx, t.JobID, t.Update)
			if err != nil {
				return err
			}
			out[i] = r
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// transitionRetries bounds how often transitionJob re-reads a row that
// another replica changed between its read and its conditional update. A
// job's row changes a handful of times in its life, so running out means
// something else is wrong: the error makes the ingest redeliver the event
// rather than drop it.
const transitionRetries = 16

// errTransitionRaced is transitionJob running out of retries.
var errTransitionRaced = errors.New("store: job row kept changing under the update")

// transitionJob is one transition inside a transaction (s is bound to it).
// The update is conditional on the exact state it read (status, sequence
// number, final source). When another replica changed the job in between
// (its ingest stored `running` while this one stores `success` of the same
// job: events of one job may reach different replicas), the row is read
// again and the report judged again, so a final state is never dropped
// because it raced another report.
func (s *Store) transitionJob(ctx context.Context, jobID string, u JobUpdate) (TransitionResult, error) {
	for attempt := 0; attempt <= transitionRetries; attempt++ {
		r, raced, err := s.tryTransitionJob(ctx, jobID, u)
		if err != nil || !raced {
			return r, err
		}
	}
	return TransitionResult{}, fmt.Errorf("%w (job %s)", errTransitionRaced, jobID)
}

// tryTransitionJob is one read and conditional update; raced reports that
// the row changed between the two.
func (s *Store) tryTransitionJob(ctx context.Context, jobID string, u JobUpdate) (TransitionResult, bool, error) {
	var rows []jobRow
	if err := s.conn(ctx).Where("id = ?", jobID).Limit(1).Find(&rows).Error; err != nil {
		return TransitionResult{}, false, mapErr(err, "job")
	}
	if len(rows) == 0 {
		return TransitionResult{Err: domain.NotFound("job")}, false, nil
	}
	row := rows[0]
	prev := jobFromRow(row)
	if !prev.Accepts(u.Report()) {
		return TransitionResult{Job: prev, Prev: prev}, false, nil
	}
	set := map[string]any{"status": string(u.Status)}
	if u.Seq > row.StateSeq {
		set["state_seq"] = u.Seq
	}
	if u.WorkerID != "" && row.WorkerID == "" {
		set["worker_id"] = u.WorkerID
	}
	if u.Status.Terminal() {
		// Every final field is written, so a worker's final that replaces
		// the control plane's verdict leaves none of the verdict behind.
		set["finished_at"] = u.At
		set["exit_code"] = u.ExitCode
		set["error"] = u.Error
		set["result"] = string(u.Result)
		set["final_by"] = string(domain.FinalByWorker)
		if u.Control {
			set["final_by"] = string(domain.FinalByControl)
		}
	}
	if u.OutputBytes > row.OutputBytes {
		set["output_bytes"] = u.OutputBytes
	}
	if row.StartedAt == nil && (u.Status == domain.JobStarted || u.Status == domain.JobRunning || (u.Status.Terminal() && !u.Control)) {
		set["started_at"] = u.At
	}
	res := s.conn(ctx).Model(&jobRow{}).
		Where("id = ? AND status = ? AND state_seq = ? AND final_by = ? AND worker_id = ?", jobID, row.Status, row.StateSeq, row.FinalBy, row.WorkerID).
		Updates(set)
	if res.Error != nil {
		return TransitionResult{}, false, mapErr(res.Error, "job")
	}
	if res.RowsAffected == 0 {
		return TransitionResult{Job: prev, Prev: prev}, true, nil
	}
	out := prev
	out.Status = u.Status
	if v, ok := set["state_seq"].(int64); ok {
		out.StateSeq = v
	}
	if v, ok := set["worker_id"].(string); ok {
		out.WorkerID = v
	}
	if u.Status.Terminal() {
		at := u.At
		out.FinishedAt, out.ExitCode, out.Error, out.Result = &at, u.ExitCode, u.Error, u.Result
		out.FinalBy = domain.FinalSource(set["final_by"].(string))
	}
	if v, ok := set["output_bytes"].(int64); ok {
		out.OutputBytes = v
	}
	if v, ok := set["started_at"].(time.Time); ok {
		out.StartedAt = &v
	}
	return TransitionResult{Job: out, Prev: prev, Changed: true}, false, nil
}

// JobHeartbeat records a worker's heartbeat for an active job.
func (s *Store) JobHeartbeat(ctx context.Context, jobID, workerID string, at time.Time) error {
	return s.JobHeartbeats(ctx, []Heartbeat{{JobID: jobID, WorkerID: workerID, At: at}})
}

// Heartbeat is one worker heartbeat for a job.
type Heartbeat struct {
	JobID, WorkerID string
	At              time.Time
}

// JobHeartbeats records heartbeats, in one transaction when there are
// several (on PostgreSQL each commit waits for the WAL flush, and 1,000
// running jobs send 200 a second).
func (s *Store) JobHeartbeats(ctx context.Context, hs []Heartbeat) error {
	beat := func(tx *Store, h Heartbeat) error {
		return mapErr(tx.conn(ctx).Model(&jobRow{}).
			Where("id = ? AND worker_id = ? AND status IN ? AND (heartbeat_at IS NULL OR heartbeat_at < ?)", h.JobID, h.WorkerID, activeStatuses(), h.At).
			Update("heartbeat_at", h.At).Error, "job")
	}
	switch len(hs) {
	case 0:
		return nil
	case 1:
		return beat(s, hs[0])
	}
	return s.InTx(ctx, func(tx *Store) error {
		for _, h := range hs {
			if err := beat(tx, h); err != nil {
				return err
			}
		}
		return nil
	})
}

// JobStates returns the jobs of ids that exist, by id, without their
// server names (JobState for a batch).
func (s *Store) JobStates(ctx context.Context, ids []string) (map[string]domain.Job, error) {
	out := make(map[string]domain.Job, len(ids))
	for lo := 0; lo < len(ids); lo += ingestBatch {
		var rows []jobRow
		if err := s.conn(ctx).Where("id IN ?", ids[lo:min(lo+ingestBatch, len(ids))]).Find(&rows).Error; err != nil {
			return nil, mapErr(err, "jobs")
		}
		for _, r := range rows {
			out[r.ID] = jobFromRow(r)
		}
	}
	return out, nil
}

// StaleJobs returns started or running jobs whose last heartbeat is older
// than before, and pending jobs created before pendingBefore.
func (s *Store) StaleJobs(ctx context.Context, before, pendingBefore time.Time) ([]domain.Job, error) {
	var rows []jobRow
	err := s.conn(ctx).Where("(status IN ? AND heartbeat_at < ?) OR (status = ? AND created_at < ?)",
		[]string{string(domain.JobStarted), string(domain.JobRunning)}, before,
		string(domain.JobPending), pendingBefore).Find(&rows).Error
	if err != nil {
		return nil, mapErr(err, "jobs")
	}
	return s.decorateJobs(ctx, rows)
}

// ActiveJobs returns every pending, started or running job (lock upkeep).
func (s *Store) ActiveJobs(ctx context.Context) ([]domain.Job, error) {
	var rows []jobRow
	if err := s.conn(ctx).Where("status IN ?", activeStatuses()).Find(&rows).Error; err != nil {
		return nil, mapErr(err, "jobs")
	}
	out := make([]domain.Job, len(rows))
	for i, r := range rows {
		out[i] = jobFromRow(r)
	}
	return out, nil
}

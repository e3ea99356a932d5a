package store

import (
	"context"
	"slices"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
)

// Claim asks for one job on behalf of a worker (ClaimJobs).
type Claim struct {
	JobID, ServerID, WorkerID string
}

// ClaimResult is the outcome of one Claim: the job as claimed, or an error
// (domain.ErrNotFound, or a domain.Conflict "not_claimable").
type ClaimResult struct {
	Job domain.Job
	Err error
}

// ClaimJobs claims many jobs in one transaction, with the rules of
// ClaimJob for each: a pending job becomes started by the asking worker; a
// job this worker already claimed is answered again (its retry); anything
// else is refused. The same job asked twice in cs gets the first answer for
// the same worker and a refusal for another one. One transaction per call
// is what makes a fleet-wide run's thousand claims a handful of commits
// instead of a thousand.
func (s *Store) ClaimJobs(ctx context.Context, cs []Claim, at time.Time) ([]ClaimResult, error) {
	out := make([]ClaimResult, len(cs))
	if len(cs) == 0 {
		return out, nil
	}
	err := s.InTx(ctx, func(tx *Store) error {
		ids := make([]string, 0, len(cs))
		for _, c := range cs {
			ids = append(ids, c.JobID)
		}
		rows := map[string]jobRow{}
		for lo := 0; lo < len(ids); lo += ingestBatch {
			var part []jobRow
			if err := tx.conn(ctx).Where("id IN ?", ids[lo:min(lo+ingestBatch, len(ids))]).Find(&part).Error; err != nil {
				return mapErr(err, "jobs")
			}
			for _, r := range part {
				rows[r.ID] = r
			}
		}
		// Decide per claim; pending jobs to claim are grouped by worker.
		claim := map[string][]string{} // worker → job ids
		for i, c := range cs {
			row, ok := rows[c.JobID]
			switch {
			case !ok:
				out[i].Err = domain.NotFound("job")
				continue
			case row.ServerID != c.ServerID:
				out[i].Err = domain.Conflict("not_claimable", "job belongs to another server")
				continue
			}
			switch domain.JobStatus(row.Status) {
			case domain.JobPending:
				row.Status, row.WorkerID, row.StartedAt, row.HeartbeatAt = string(domain.JobStarted), c.WorkerID, &at, &at
				rows[c.JobID] = row // a repeat in cs sees it claimed
				claim[c.WorkerID] = append(claim[c.WorkerID], c.JobID)
			case domain.JobStarted, domain.JobRunning:
				if row.WorkerID != c.WorkerID {
					out[i].Err = domain.Conflict("not_claimable", "job runs on another worker")
					continue
				}
			default:
				out[i].Err = domain.Conflict("not_claimable", "job is "+row.Status)
				continue
			}
			out[i].Job = jobFromRow(row)
		}
		workers := make([]string, 0, len(claim))
		for w := range claim {
			workers = append(workers, w)
		}
		slices.Sort(workers)
		for _, w := range workers {
			jobs := claim[w]
			slices.Sort(jobs) // lock order on PostgreSQL
			for lo := 0; lo < len(jobs); lo += ingestBatch {
				part := jobs[lo:min(lo+ingestBatch, len(jobs))]
				res := tx.conn(ctx).Model(&jobRow{}).Where("id IN ? AND status = ?", part, string(domain.JobPending)).
					Updates(map[string]any{"status": string(domain.JobStarted), "worker_id": w, "started_at": at, "heartbeat_at": at})
				if res.Error != nil {
					return mapErr(res.Error, "job")
				}
				if int(res.RowsAffected) != len(part) {
					// Another replica claimed one of them between the read and
					// this update (PostgreSQL; SQLite has one writer): fail the
					// batch, the callers answer one by one.
					return errClaimRace
				}
			}
		}
		return nil
	})
	if err == errClaimRace {
		for i, c := range cs {
			out[i].Job, out[i].Err = s.ClaimJob(ctx, c.JobID, c.ServerID, c.WorkerID, at)
		}
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// errClaimRace makes ClaimJobs fall back to one claim per transaction.
var errClaimRace = domain.Conflict("claim_race", "a job of the batch was claimed concurrently")

// ServerSecretsOfMany returns the servers with their secrets, by id; ids
// that do not exist are missing from the map.
func (s *Store) ServerSecretsOfMany(ctx context.Context, ids []string) (map[string]domain.Server, map[string]ServerSecrets, error) {
	srvs := make(map[string]domain.Server, len(ids))
	secs := make(map[string]ServerSecrets, len(ids))
	for lo := 0; lo < len(ids); lo += ingestBatch {
		var rows []serverRow
		if err := s.conn(ctx).Where("id IN ?", ids[lo:min(lo+ingestBatch, len(ids))]).Find(&rows).Error; err != nil {
			return nil, nil, mapErr(err, "servers")
		}
		for _, row := range rows {
			srvs[row.ID] = serverFromRow(row)
			secs[row.ID] = secretsFromRow(row)
		}
	}
	return srvs, secs, nil
}

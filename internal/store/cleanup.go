package store

import (
	"context"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
)

// PurgeCounts is what PurgeHistory removed.
type PurgeCounts struct {
	Jobs         int64 `json:"jobs"`
	OutputChunks int64 `json:"output_chunks"`
	ScheduleRuns int64 `json:"schedule_runs"`
}

// purgeBatch bounds one delete: a long history goes in short transactions.
const purgeBatch = 500

// PurgeHistory removes finished jobs (with their console output) and
// finished schedule runs that finished before cutoff. Pending and running
// jobs are never touched, however old. Bulk runs and rollouts keep their
// rows and show a removed job as gone.
func (s *Store) PurgeHistory(ctx context.Context, cutoff time.Time) (PurgeCounts, error) {
	var c PurgeCounts
	finished := []string{string(domain.JobSuccess), string(domain.JobFailed), string(domain.JobAborted), string(domain.JobBlocked)}
	for {
		if err := ctx.Err(); err != nil {
			return c, err
		}
		var ids []string
		if err := s.conn(ctx).Model(&jobRow{}).Where("status IN ? AND finished_at IS NOT NULL AND finished_at < ?", finished, cutoff.UTC()).
			Order("finished_at").Limit(purgeBatch).Pluck("id", &ids).Error; err != nil {
			return c, mapErr(err, "jobs")
		}
		if len(ids) == 0 {
			break
		}
		err := s.InTx(ctx, func(tx *Store) error {
			// Output first: the cascade is not relied upon (SQLite
			// enforces it only with foreign keys switched on).
			res := tx.conn(ctx).Where("job_id IN ?", ids).Delete(&jobOutputRow{})
			if res.Error != nil {
				return mapErr(res.Error, "job output")
			}
			c.OutputChunks += res.RowsAffected
			res = tx.conn(ctx).Where("id IN ?", ids).Delete(&jobRow{})
			if res.Error != nil {
				return mapErr(res.Error, "jobs")
			}
			c.Jobs += res.RowsAffected
			return nil
		})
		if err != nil {
			return c, err
		}
		if len(ids) < purgeBatch {
			break
		}
	}
	res := s.conn(ctx).Where("finished_at IS NOT NULL AND finished_at < ?", cutoff.UTC()).Delete(&autoRunRow{})
	if res.Error != nil {
		return c, mapErr(res.Error, "schedule runs")
	}
	c.ScheduleRuns = res.RowsAffected
	return c, nil
}

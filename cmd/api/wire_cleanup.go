package main

import (
	"context"
	"time"
)

// cleanupTask is the daily history cleanup: finished jobs (with their
// console output) and finished schedule runs older than job_history_days.
func (a *app) cleanupTask() func(context.Context) error {
	return func(ctx context.Context) error {
		days := a.cfg.JobHistoryDays
		if days <= 0 {
			days = 180
		}
		c, err := a.store.PurgeHistory(ctx, time.Now().Add(-time.Duration(days)*24*time.Hour))
		a.log.Info("history cleanup", "jobs", c.Jobs, "output_chunks", c.OutputChunks, "schedule_runs", c.ScheduleRuns, "keep_days", days, "err", err)
		return err
	}
}

package automation

import (
	"context"
	"fmt"
)

// panickedReason is the run's reason after an internal error ended it.
const panickedReason = "internal error while running the schedule (logged with its stack); check the servers and run it again"

// failPanicked ends a run whose goroutine panicked (recovered and counted
// by safe.Do) as failed, so it is not left running with this owner until
// the process restarts. A run this replica no longer owns is left alone.
func (s *Service) failPanicked(ctx context.Context, id string) error {
	run, err := s.o.Store.GetRun(ctx, id)
	if err != nil {
		return err
	}
	if run.Owner != s.o.Owner || run.Status != RunRunning {
		return errNotLeader
	}
	now := s.now()
	run.Status, run.Reason, run.FinishedAt, run.Heartbeat = RunFailed, panickedReason, &now, &now
	ok, err := s.o.Store.SaveRun(ctx, run)
	if err == nil && !ok {
		return errNotLeader
	}
	if err != nil {
		return fmt.Errorf("automation: record the failed run: %w", err)
	}
	return nil
}

package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/store"
)

// RunReaper fails jobs whose worker vanished and jobs no worker claimed,
// and keeps the locks of waiting jobs alive, until ctx ends. Every replica
// runs one; the conditional state update makes a job fail exactly once.
func (s *Service) RunReaper(ctx context.Context) error {
	t := time.NewTicker(s.ReapInterval)
	defer t.Stop()
	for {
		s.ReapOnce(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// ReapOnce runs one reaper pass.
func (s *Service) ReapOnce(ctx context.Context) {
	now := s.now()
	stale, err := s.store.StaleJobs(ctx, now.Add(-s.HeartbeatTimeout), now.Add(-s.PendingTimeout))
	if err != nil {
		s.log.Warn("reaper: cannot list jobs", "err", err)
		return
	}
	for _, j := range stale {
		var reason string
		if j.Status == domain.JobPending {
			reason = fmt.Sprintf("no worker of segment %q took the job within %s", j.Segment, s.PendingTimeout)
		} else {
			last := j.CreatedAt
			if j.HeartbeatAt != nil {
				last = *j.HeartbeatAt
			}
			reason = fmt.Sprintf("worker vanished (no heartbeat from %s since %s)", orUnknown(j.WorkerID), last.Format(time.RFC3339))
		}
		if _, err := s.finish(ctx, j.ID, store.JobUpdate{Status: domain.JobFailed, At: now, Error: reason}); err != nil {
			s.log.Warn("reaper: cannot fail job", "job_id", j.ID, "err", err)
		}
	}
	if s.bus == nil || !s.bus.Healthy() {
		return
	}
	active, err := s.store.ActiveJobs(ctx)
	if err != nil {
		return
	}
	locks, err := s.bus.Locks(ctx)
	if err != nil {
		return
	}
	for _, j := range active {
		if j.Status == domain.JobPending {
			s.refreshLock(ctx, locks, j.ServerID, j.ID)
		}
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "an unknown worker"
	}
	return "worker " + s
}

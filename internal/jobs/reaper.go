package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/lcmproject/lcm/internal/bus"
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
	var locks *bus.Locks
	if s.bus != nil && s.bus.Healthy() {
		locks, _ = s.bus.Locks(ctx)
	}
	for _, j := range stale {
		if j.Status != domain.JobPending && s.workerAliveInLock(ctx, locks, j, now) {
			// The worker renewed the server lock recently: only the
			// database heartbeat lags (the ingest is working through a
			// backlog of finished jobs), the worker has not vanished.
			continue
		}
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
	if locks == nil {
		if locks, err = s.bus.Locks(ctx); err != nil {
			return
		}
	}
	for _, j := range active {
		if j.Status == domain.JobPending {
			s.refreshLock(ctx, locks, j.ServerID, j.ID)
		}
	}
}

// workerAliveInLock reports whether the worker running j renewed the
// server lock within the heartbeat timeout. The worker renews the lock on
// every heartbeat straight in NATS KV, so this signal does not wait behind
// the event ingest the way the heartbeat rows in the database do.
func (s *Service) workerAliveInLock(ctx context.Context, locks *bus.Locks, j domain.Job, now time.Time) bool {
	if locks == nil {
		return false
	}
	raw, _, err := locks.Get(ctx, j.ServerID)
	if err != nil {
		return false
	}
	var held LockValue
	if json.Unmarshal(raw, &held) != nil {
		return false
	}
	if held.JobID != j.ID || held.WorkerID == "" {
		return false
	}
	// Done: the final state is in the stream, waiting for the ingest; the
	// lock bucket's TTL bounds how long that can hold the job.
	return held.Done || now.Sub(held.At) < s.HeartbeatTimeout
}

func orUnknown(s string) string {
	if s == "" {
		return "an unknown worker"
	}
	return "worker " + s
}

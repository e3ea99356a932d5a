package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/lcmproject/lcm/internal/bus"
	"github.com/lcmproject/lcm/internal/domain"
)

// LockValue is the content of a server's key in LCM_LOCKS.
type LockValue struct {
	JobID    string    `json:"job_id"`
	WorkerID string    `json:"worker_id,omitempty"`
	At       time.Time `json:"at"`
	// Done is set by the worker once the job's final state is published.
	Done bool `json:"done,omitempty"`
}

// acquireLock takes the server's lock for job. A lock left by a job that is
// already final (its release was lost) is cleared once and retaken. The
// database is checked as well, so a lock that expired under a job that is
// still active cannot admit a second job.
func (s *Service) acquireLock(ctx context.Context, job domain.Job) error {
	locks, err := s.bus.Locks(ctx)
	if err != nil {
		return errBusDown
	}
	val, _ := json.Marshal(LockValue{JobID: job.ID, At: s.now()})
	for attempt := 0; attempt < 2; attempt++ {
		rev, err := locks.Create(ctx, job.ServerID, val)
		if err == nil {
			active, aerr := s.store.ActiveJobID(ctx, job.ServerID)
			if aerr != nil || active != "" {
				_ = locks.Delete(context.WithoutCancel(ctx), job.ServerID, rev)
			}
			if aerr != nil {
				return aerr
			}
			if active != "" {
				return &BusyError{ServerID: job.ServerID, JobID: active}
			}
			return nil
		}
		if !errors.Is(err, bus.ErrLockHeld) {
			return errBusDown
		}
		raw, rev, gerr := locks.Get(ctx, job.ServerID)
		if errors.Is(gerr, bus.ErrLockGone) {
			continue
		}
		if gerr != nil {
			return errBusDown
		}
		var held LockValue
		_ = json.Unmarshal(raw, &held)
		other, jerr := s.store.JobState(ctx, held.JobID)
		if jerr == nil && other.Status.Active() {
			return &BusyError{ServerID: job.ServerID, JobID: other.ID}
		}
		if jerr != nil && !errors.Is(jerr, domain.ErrNotFound) {
			return jerr
		}
		// Stale: the holder is final or unknown.
		_ = locks.Delete(ctx, job.ServerID, rev)
	}
	return &BusyError{ServerID: job.ServerID}
}

// releaseLock frees the server's lock if job still holds it.
func (s *Service) releaseLock(ctx context.Context, serverID, jobID string) {
	if s.bus == nil || !s.bus.Healthy() {
		return // the TTL frees it
	}
	locks, err := s.bus.Locks(ctx)
	if err != nil {
		return
	}
	for attempt := 0; attempt < 3; attempt++ {
		raw, rev, err := locks.Get(ctx, serverID)
		if err != nil {
			return
		}
		var held LockValue
		if json.Unmarshal(raw, &held) != nil || held.JobID != jobID {
			return
		}
		if err := locks.Delete(ctx, serverID, rev); !errors.Is(err, bus.ErrLockRevision) {
			return
		}
	}
}

// refreshLock rewrites the lock of a job that still holds it, renewing
// its TTL (used for jobs waiting for a worker).
func (s *Service) refreshLock(ctx context.Context, locks *bus.Locks, serverID, jobID string) {
	raw, rev, err := locks.Get(ctx, serverID)
	if errors.Is(err, bus.ErrLockGone) {
		val, _ := json.Marshal(LockValue{JobID: jobID, At: s.now()})
		_, _ = locks.Create(ctx, serverID, val)
		return
	}
	if err != nil {
		return
	}
	var held LockValue
	if json.Unmarshal(raw, &held) != nil || held.JobID != jobID {
		return
	}
	held.At = s.now()
	val, _ := json.Marshal(held)
	_, _ = locks.Update(ctx, serverID, val, rev)
}

package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/lcmproject/lcm/internal/bus"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/safe"
	"github.com/lcmproject/lcm/internal/store"
)

// BulkBatchSize is how many jobs a bulk submit stores in one transaction
// and publishes together: large enough that 1,000 servers take ten
// transactions, small enough that the first jobs start while the rest are
// still being written, and that a batch's locks are held briefly.
const BulkBatchSize = 100

// lockParallel is how many server locks a bulk batch takes at once: each
// is one to three round trips to the bus, which a batch would otherwise
// wait for one after the other.
const lockParallel = 32

// BulkJob is one server's job in a bulk submit.
type BulkJob struct {
	Target store.BulkTarget
	Kind   domain.JobKind
	Params any
}

// SubmitBulk records run and starts its jobs in batches of BulkBatchSize:
// per batch the servers' locks are taken (a busy server is refused, not
// waited for), the job rows and the run's items are inserted in one
// transaction, and the jobs are published together, waiting for all acks
// at once. refused are servers the caller already refused (not joined,
// unsupported); they are stored with the first batch. A job whose publish
// fails becomes a refusal (bus_unavailable) and its row is deleted. An
// unreachable bus before anything was stored returns a domain.ErrUnavailable
// error; a store error after some batches leaves those batches running and
// returns the error.
// bulkSubmitTimeout bounds one bulk submission: 10,000 servers are
// stored and published in seconds, so this only ends a submission whose
// database or bus stopped answering.
const bulkSubmitTimeout = 10 * time.Minute

func (s *Service) SubmitBulk(ctx context.Context, run domain.BulkRun, list []BulkJob, refused []domain.BulkItem) (domain.BulkRun, error) {
	// A run is submitted whole even if the caller goes away halfway (or
	// its request deadline passes), but not forever: a database that stops
	// answering ends it after bulkSubmitTimeout.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bulkSubmitTimeout)
	defer cancel()
	if s.bus == nil || !s.bus.Healthy() {
		return run, errBusDown
	}
	locks, err := s.bus.Locks(ctx)
	if err != nil {
		return run, errBusDown
	}
	if run.ID == "" {
		run.ID = uuid.NewString()
	}
	if run.CreatedAt.IsZero() {
		run.CreatedAt = s.now()
	}
	if err := s.store.CreateBulkRun(ctx, run); err != nil {
		return run, err
	}
	run.Items = append(run.Items, refused...)
	pre := refused
	for start := 0; start < len(list) || pre != nil; start += BulkBatchSize {
		batch := list[start:min(start+BulkBatchSize, len(list))]
		items, err := s.submitBulkBatch(ctx, locks, run, batch, pre)
		pre = nil
		run.Items = append(run.Items, items...)
		if err != nil {
			return run, err
		}
		if start+BulkBatchSize >= len(list) {
			break
		}
	}
	s.log.Info("bulk run submitted", "bulk_id", run.ID, "action", run.Action, "servers", len(run.Items))
	return run, nil
}

// submitBulkBatch runs one batch; it returns the batch's items (jobs and
// refusals, without the pre-refused ones, which are already in run.Items).
func (s *Service) submitBulkBatch(ctx context.Context, locks *bus.Locks, run domain.BulkRun, batch []BulkJob, pre []domain.BulkItem) ([]domain.BulkItem, error) {
	var items, refused []domain.BulkItem
	refuse := func(t store.BulkTarget, code, reason string) {
		it := domain.BulkItem{ServerID: t.ID, ServerName: t.Name, Refused: code, Reason: reason}
		items, refused = append(items, it), append(refused, it)
	}
	// Locks: one KV create per server, lockParallel at a time (each is a
	// round trip or three to the bus); a held lock goes the single-job way,
	// which tells a stale lock from a busy server.
	cand := make([]domain.Job, len(batch))
	for i, b := range batch {
		var raw []byte
		if b.Params != nil {
			var err error
			if raw, err = json.Marshal(b.Params); err != nil {
				return items, fmt.Errorf("jobs: params: %w", err)
			}
		}
		cand[i] = domain.Job{ID: uuid.NewString(), Kind: b.Kind, ServerID: b.Target.ID, ServerName: b.Target.Name,
			Segment: b.Target.Segment, Status: domain.JobPending, CreatedBy: run.CreatedBy, CreatedAt: s.now(), Params: raw}
	}
	lockErrs := make([]error, len(cand))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(lockParallel, len(cand)) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(cand); i = int(next.Add(1) - 1) {
				job := cand[i]
				val, _ := json.Marshal(LockValue{JobID: job.ID, At: s.now()})
				_, err := locks.Create(ctx, job.ServerID, val)
				if errors.Is(err, bus.ErrLockHeld) {
					err = s.acquireLock(ctx, job) // tells a stale lock from a busy server
				}
				lockErrs[i] = err
			}
		})
	}
	wg.Wait()
	held := make([]domain.Job, 0, len(batch))
	for i, b := range batch {
		var busy *BusyError
		switch err := lockErrs[i]; {
		case errors.As(err, &busy):
			refuse(b.Target, "server_busy", busy.Error())
			continue
		case err != nil:
			refuse(b.Target, "bus_unavailable", "the job bus (NATS) did not answer; no job was started on this server")
			continue
		}
		held = append(held, cand[i])
	}
	// A job row without a lock (a lock that expired) still means busy.
	ids := make([]string, len(held))
	for i, j := range held {
		ids[i] = j.ServerID
	}
	active, err := s.store.ActiveJobsOf(ctx, ids)
	if err != nil {
		s.releaseLocks(ctx, held)
		return items, err
	}
	jobs := held[:0]
	targets := map[string]store.BulkTarget{}
	for _, b := range batch {
		targets[b.Target.ID] = b.Target
	}
	for _, j := range held {
		if a := active[j.ServerID]; a != "" {
			s.releaseLock(context.WithoutCancel(ctx), j.ServerID, j.ID)
			refuse(targets[j.ServerID], "server_busy", (&BusyError{ServerID: j.ServerID, JobID: a}).Error())
			continue
		}
		jobs = append(jobs, j)
	}
	if err := s.store.AddBulkBatch(ctx, run.ID, jobs, append(append([]domain.BulkItem(nil), pre...), refused...)); err != nil {
		s.releaseLocks(ctx, jobs)
		return items, err
	}
	// Publish the batch, then wait for every ack.
	type pending struct {
		job domain.Job
		ack <-chan error
	}
	var waits []pending
	var lost []domain.BulkItem
	for _, j := range jobs {
		if sim := s.simulator.Load(); sim != nil {
			if runSim, ok := (*sim)(ctx, j); ok {
				safe.Go("simulated job", func() { s.simulate(j, runSim, s.SimulatedDelay) })
				waits = append(waits, pending{job: j})
				continue
			}
		}
		msg, _ := json.Marshal(bus.JobMsg{V: bus.MessageVersion, Type: bus.TypeJob, JobID: j.ID, ServerID: j.ServerID,
			Kind: string(j.Kind), Segment: j.Segment, Params: j.Params})
		ack, err := s.bus.PublishAsync(bus.JobSubject(j.Segment, j.ServerID), j.ID, msg)
		if err != nil {
			lost = append(lost, domain.BulkItem{ServerID: j.ServerID, ServerName: j.ServerName, JobID: j.ID})
			continue
		}
		waits = append(waits, pending{job: j, ack: ack})
	}
	for _, w := range waits {
		if w.ack != nil {
			if err := <-w.ack; err != nil {
				lost = append(lost, domain.BulkItem{ServerID: w.job.ServerID, ServerName: w.job.ServerName, JobID: w.job.ID})
				continue
			}
		}
		items = append(items, domain.BulkItem{ServerID: w.job.ServerID, ServerName: w.job.ServerName, JobID: w.job.ID, Status: domain.JobPending})
	}
	if len(lost) > 0 {
		for i := range lost {
			lost[i].Refused = "bus_unavailable"
			lost[i].Reason = "the job could not be published to the job bus (NATS); no job was started on this server"
		}
		bg := context.WithoutCancel(ctx)
		if err := s.store.RefuseBulkJobs(bg, run.ID, lost); err != nil {
			s.log.Error("bulk run: unpublished jobs could not be withdrawn", "bulk_id", run.ID, "err", err)
		}
		for _, it := range lost {
			s.releaseLock(bg, it.ServerID, it.JobID)
			it.JobID = ""
			items = append(items, it)
		}
	}
	return items, nil
}

// releaseLocks frees the jobs' server locks, lockParallel at a time.
func (s *Service) releaseLocks(ctx context.Context, jobs []domain.Job) {
	bg := context.WithoutCancel(ctx)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(lockParallel, len(jobs)) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(jobs); i = int(next.Add(1) - 1) {
				s.releaseLock(bg, jobs[i].ServerID, jobs[i].ID)
			}
		})
	}
	wg.Wait()
}

// GetBulk returns a bulk run visible to p: its creator or an admin, with
// the items of the servers p can see.
func (s *Service) GetBulk(ctx context.Context, p *domain.Principal, id string) (domain.BulkRun, error) {
	return s.store.GetBulkRun(ctx, store.ScopeOf(p), principalID(p), id)
}

// LatestBulk returns p's newest bulk run of an action (any user's for an
// admin).
func (s *Service) LatestBulk(ctx context.Context, p *domain.Principal, action string) (domain.BulkRun, error) {
	return s.store.LatestBulkRun(ctx, store.ScopeOf(p), principalID(p), action)
}

func principalID(p *domain.Principal) string {
	if p == nil {
		return ""
	}
	return p.UserID
}

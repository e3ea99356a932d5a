// Package jobs owns LCM's job protocol on the control-plane side: Submit
// (row + server lock + publish to the JOBS work queue), the credential
// responder that claims a job for a worker and seals its credentials, the
// ingest that stores output and state changes exactly once, the reaper that
// fails jobs whose worker vanished, abort, and reads (history, output, live
// follow). The worker half lives in jobs/runner, which needs no database.
//
// Dispatch:
//
//	API: Submit ──KV Create LCM_LOCKS/<server>──► row pending ──► publish lcm.jobs.<seg>.<server> (Nats-Msg-Id = job id)
//	worker: pull worker-<seg> ──► lcm.creds.req (claim: pending→started; sealed creds) ──► run action
//	        ──► lcm.job.<id>.out chunks {seq, offset} + lcm.job.<id>.state (running, heartbeats, final)
//	API: ingest (durable api-ingest, shared by replicas) ──► job_output (insert-or-ignore) + jobs row
//	     final states ──► finish hooks, batched per kind (fleet: promote key, delete server; inventory ingest;
//	                      status) ──► jobs rows ──► release locks
//	reaper: heartbeat older than HeartbeatTimeout ──► failed "worker vanished" + lock released
package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/lcmproject/lcm/internal/bus"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/metrics"
	"github.com/lcmproject/lcm/internal/safe"
	"github.com/lcmproject/lcm/internal/store"
)

// Timing of the protocol. Each bound says why.
const (
	// HeartbeatInterval is how often a worker reports a running job (and
	// refreshes its server lock): often enough that the reaper's bound
	// holds several beats, rarely enough to cost nothing at 1,000 jobs.
	HeartbeatInterval = 5 * time.Second
	// HeartbeatTimeout: a running job without a heartbeat for this long
	// has lost its worker (six missed beats; a GC pause or a NATS
	// reconnect never takes that long).
	HeartbeatTimeout = 30 * time.Second
	// PendingTimeout: a job no worker claimed for this long fails, naming
	// its segment, instead of holding the server's lock forever.
	PendingTimeout = 10 * time.Minute
	// ReapInterval is how often each replica's reaper looks; with
	// HeartbeatTimeout it bounds the time to "failed" at 35 s.
	ReapInterval = 5 * time.Second
	// abortWait is how long Abort waits for the worker's final state.
	abortWait = 5 * time.Second
	// rollbackTimeout bounds undoing a submit that could not be published:
	// it runs after the request's deadline may have passed, but must not
	// hang on a database that stopped answering.
	rollbackTimeout = 10 * time.Second
)

// FinishHook runs once a job reached a final state (on the replica that
// recorded it). Hooks must be idempotent.
type FinishHook func(ctx context.Context, job domain.Job) error

// BatchFinishHook is a FinishHook over jobs of one kind that reached a
// final state together (one ingest batch), so their effects can be stored
// in a few transactions. It returns one error per job, in order; a nil or
// short slice means the missing ones succeeded. Like FinishHook it must be
// idempotent, and a failure of one job must not keep the others' effects
// from being stored.
type BatchFinishHook func(ctx context.Context, jobs []domain.Job) []error

// finishHook is one registered hook: one or many.
type finishHook struct {
	one  FinishHook
	many BatchFinishHook
}

// Service is the control-plane side of jobs.
type Service struct {
	store *store.Store
	bus   *bus.Bus
	log   *slog.Logger
	now   func() time.Time

	mu    sync.RWMutex
	hooks map[domain.JobKind][]finishHook
	// secrets supply a job kind's own secrets with its credentials.
	secrets map[domain.JobKind]SecretsFunc
	// simulator, when set, runs demo servers' jobs in-process (SetSimulator).
	simulator atomic.Pointer[Simulator]
	// SimulatedDelay is the pause between a simulated job's output chunks.
	SimulatedDelay time.Duration

	// Bounds of the reaper; New sets the package defaults. Tests shorten
	// them to observe a vanished worker quickly.
	HeartbeatTimeout time.Duration
	PendingTimeout   time.Duration
	ReapInterval     time.Duration
}

// New returns the service.
func New(st *store.Store, b *bus.Bus, log *slog.Logger) *Service {
	if log == nil {
		log = slog.Default()
	}
	return &Service{store: st, bus: b, log: log, now: func() time.Time { return time.Now().UTC() },
		hooks: map[domain.JobKind][]finishHook{}, secrets: map[domain.JobKind]SecretsFunc{}, HeartbeatTimeout: HeartbeatTimeout, PendingTimeout: PendingTimeout,
		ReapInterval: ReapInterval, SimulatedDelay: 400 * time.Millisecond}
}

// SecretsFunc returns a job's own secrets (such as a Linux user's password
// hash): they travel sealed with the job's credentials, never in its
// params.
type SecretsFunc func(ctx context.Context, job domain.Job) (map[string]string, error)

// SecretsFor registers the secrets supplier of a job kind (before Run).
func (s *Service) SecretsFor(kind domain.JobKind, f SecretsFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.secrets[kind] = f
}

// OnFinish registers a hook for a job kind. A kind's hooks run in the
// order they were registered, batch hooks included.
func (s *Service) OnFinish(kind domain.JobKind, h FinishHook) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hooks[kind] = append(s.hooks[kind], finishHook{one: h})
}

// OnFinishBatch registers a batch hook for a job kind: it sees every job
// of that kind that one ingest batch finished, at once.
func (s *Service) OnFinishBatch(kind domain.JobKind, h BatchFinishHook) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hooks[kind] = append(s.hooks[kind], finishHook{many: h})
}

// BusyError is the refusal of a submit for a server that runs a job.
type BusyError struct {
	ServerID string
	JobID    string // the running job
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("server is busy with job %s; one job per server at a time", e.JobID)
}

// Is makes BusyError a domain.ErrConflict.
func (e *BusyError) Is(target error) bool { return target == domain.ErrConflict }

// errBusDown is the 503 of every submit while NATS is unreachable.
var errBusDown = domain.Unavailable("bus_unavailable", "the job bus (NATS) is unavailable; nothing was submitted, try again shortly")

// Submit starts a job of kind on a server visible to p: it takes the
// server's cluster-wide lock, stores the job as pending and publishes it to
// the server's segment. A busy server returns *BusyError; an unreachable
// bus returns a domain.ErrUnavailable error and leaves nothing behind.
func (s *Service) Submit(ctx context.Context, p *domain.Principal, serverID string, kind domain.JobKind, params any) (domain.Job, error) {
	srv, err := s.store.GetServer(ctx, store.ScopeOf(p), serverID)
	if err != nil {
		return domain.Job{}, err
	}
	return s.SubmitServer(ctx, p, srv, kind, params)
}

// SubmitServer is Submit for a server the caller already read through
// p's scope (it saves the second read on the dispatch path).
func (s *Service) SubmitServer(ctx context.Context, p *domain.Principal, srv domain.Server, kind domain.JobKind, params any) (domain.Job, error) {
	if !srv.Joined && kind != domain.JobJoin {
		return domain.Job{}, domain.Conflict("not_joined", "the server has not joined yet; run join first")
	}
	if srv.Hardening.SudoMode == domain.SudoRestricted && domain.BlockedInRestrictedMode(kind) {
		return domain.Job{}, domain.Conflict("restricted_mode", fmt.Sprintf("%s is blocked: the management user's sudo is restricted on this server (free-form scripts, custom actions and reboot need full mode)", domain.JobName(kind, params2json(params))))
	}
	createdBy := ""
	if p != nil {
		createdBy = p.UserID
	}
	return s.submit(ctx, srv, kind, params, createdBy)
}

func (s *Service) submit(ctx context.Context, srv domain.Server, kind domain.JobKind, params any, createdBy string) (domain.Job, error) {
	if s.bus == nil || !s.bus.Healthy() {
		return domain.Job{}, errBusDown
	}
	var raw []byte
	if params != nil {
		var err error
		if raw, err = json.Marshal(params); err != nil {
			return domain.Job{}, fmt.Errorf("jobs: params: %w", err)
		}
	}
	segment, err := s.store.ServerSegment(ctx, srv.ID)
	if err != nil {
		return domain.Job{}, err
	}
	job := domain.Job{ID: uuid.NewString(), Kind: kind, ServerID: srv.ID, ServerName: srv.Name, Segment: segment,
		Status: domain.JobPending, CreatedBy: createdBy, CreatedAt: s.now(), Params: raw}
	if err := s.acquireLock(ctx, job); err != nil {
		return domain.Job{}, err
	}
	if err := s.store.CreateJob(ctx, job); err != nil {
		s.releaseLock(context.WithoutCancel(ctx), job.ServerID, job.ID)
		return domain.Job{}, err
	}
	if sim := s.simulator.Load(); sim != nil {
		if run, ok := (*sim)(ctx, job); ok {
			safe.Go("simulated job", func() { s.simulate(job, run, s.SimulatedDelay) })
			s.log.Info("job submitted (simulated)", "job_id", job.ID, "job_name", kind, "server_id", srv.ID)
			return job, nil
		}
	}
	msg, _ := json.Marshal(bus.JobMsg{V: bus.MessageVersion, Type: bus.TypeJob, JobID: job.ID, ServerID: srv.ID,
		Kind: string(kind), Segment: segment, Params: raw})
	if err := s.bus.Publish(ctx, bus.JobSubject(segment, srv.ID), job.ID, msg); err != nil {
		bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
		defer cancel()
		if derr := s.store.DeleteJob(bg, job.ID); derr != nil {
			s.log.Error("submit rollback failed", "job_id", job.ID, "err", derr)
		}
		s.releaseLock(bg, job.ServerID, job.ID)
		if errors.Is(err, bus.ErrUnavailable) {
			return domain.Job{}, errBusDown
		}
		return domain.Job{}, fmt.Errorf("jobs: publish: %w", err)
	}
	s.log.Info("job submitted", "job_id", job.ID, "job_name", kind, "server_id", srv.ID, "segment", segment)
	return job, nil
}

// Get returns a job whose server is visible to p.
func (s *Service) Get(ctx context.Context, p *domain.Principal, id string) (domain.Job, error) {
	return s.store.GetJob(ctx, store.ScopeOf(p), id)
}

// HistoryMaxLimit is the largest page History returns; DefaultHistoryLimit
// is the page size when the caller names none (Limit 0).
const (
	HistoryMaxLimit     = 500
	DefaultHistoryLimit = 50
)

// History lists jobs visible to p. A Limit of 0 means DefaultHistoryLimit;
// a negative one or one above HistoryMaxLimit is refused (never silently
// replaced by the default).
func (s *Service) History(ctx context.Context, p *domain.Principal, f domain.JobFilter) ([]domain.Job, int64, error) {
	switch {
	case f.Limit == 0:
		f.Limit = DefaultHistoryLimit
	case f.Limit < 0 || f.Limit > HistoryMaxLimit:
		return nil, 0, domain.Invalid("limit_out_of_range", fmt.Sprintf("limit must be between 1 and %d (got %d); page with offset", HistoryMaxLimit, f.Limit))
	}
	if f.Offset < 0 {
		f.Offset = 0
	}
	if f.Status != "" && !f.Status.Valid() {
		return nil, 0, domain.Invalid("invalid_status", fmt.Sprintf("unknown job status %q", f.Status))
	}
	return s.store.ListJobs(ctx, store.ScopeOf(p), f)
}

// FilterOptions lists the statuses and job names for the history filters.
func (s *Service) FilterOptions(ctx context.Context, p *domain.Principal) (statuses, names []string, err error) {
	_, names, err = s.store.JobFilterOptions(ctx, store.ScopeOf(p))
	if err != nil {
		return nil, nil, err
	}
	for _, st := range domain.JobStatuses {
		statuses = append(statuses, string(st))
	}
	seen := map[string]bool{}
	for _, n := range names {
		seen[n] = true
	}
	for _, k := range domain.JobKinds {
		if !seen[string(k)] {
			names = append(names, string(k))
		}
	}
	return statuses, names, nil
}

// ActiveJob returns the running or pending job of a visible server.
func (s *Service) ActiveJob(ctx context.Context, p *domain.Principal, serverID string) (domain.Job, error) {
	if _, err := s.store.GetServer(ctx, store.ScopeOf(p), serverID); err != nil {
		return domain.Job{}, err
	}
	return s.store.ActiveJob(ctx, store.ScopeOf(p), serverID)
}

// MaxOutputRead bounds one ssh-output response; the client polls on with
// the returned offset.
const MaxOutputRead = 8 << 20

// Output returns a visible job's console output from a byte offset.
func (s *Service) Output(ctx context.Context, p *domain.Principal, id string, offset int64) (domain.JobOutput, error) {
	if offset < 0 {
		return domain.JobOutput{}, domain.Invalid("invalid_offset", "offset must not be negative")
	}
	return s.store.ReadOutput(ctx, store.ScopeOf(p), id, offset, MaxOutputRead)
}

// Abort stops a visible job. A pending job is aborted at once; a running
// one through its worker, which kills the remote command. If no worker
// answers, the job is marked aborted and its lock released.
func (s *Service) Abort(ctx context.Context, p *domain.Principal, id string) (domain.Job, error) {
	job, err := s.store.GetJob(ctx, store.ScopeOf(p), id)
	if err != nil {
		return domain.Job{}, err
	}
	who := "a user"
	if p != nil {
		who = p.Username
	}
	switch job.Status {
	case domain.JobPending:
		if _, err := s.finish(ctx, job.ID, store.JobUpdate{Status: domain.JobAborted, At: s.now(), Error: "aborted by " + who + " before it started"}); err != nil {
			return domain.Job{}, err
		}
		return s.store.GetJob(ctx, store.SystemScope, id)
	case domain.JobStarted, domain.JobRunning:
	default:
		return job, nil
	}
	req, _ := json.Marshal(bus.ControlMsg{V: bus.MessageVersion, Type: bus.TypeAbort, JobID: id, Reason: "aborted by " + who})
	if _, err := s.bus.Request(ctx, bus.JobControlSubject(id), req, 3*time.Second); err != nil {
		s.log.Warn("abort: worker did not answer", "job_id", id, "err", err)
		if _, err := s.finish(ctx, job.ID, store.JobUpdate{Status: domain.JobAborted, At: s.now(),
			Error: "aborted by " + who + "; the worker did not answer, the remote command may still run"}); err != nil {
			return domain.Job{}, err
		}
		return s.store.GetJob(ctx, store.SystemScope, id)
	}
	deadline := time.Now().Add(abortWait)
	for time.Now().Before(deadline) {
		j, err := s.store.GetJob(ctx, store.SystemScope, id)
		if err == nil && j.Status.Terminal() {
			return j, nil
		}
		select {
		case <-ctx.Done():
			return domain.Job{}, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return s.store.GetJob(ctx, store.SystemScope, id)
}

// finish records a final state decided by the control plane (abort of a
// job no worker runs, reaper) and does what every final state does.
func (s *Service) finish(ctx context.Context, id string, u store.JobUpdate) (domain.Job, error) {
	u.Control = u.WorkerID == ""
	job, changed, err := s.complete(ctx, id, u)
	if err == nil && changed {
		s.announce(job)
	}
	return job, err
}

// complete applies one final state (see completeMany).
func (s *Service) complete(ctx context.Context, id string, u store.JobUpdate) (domain.Job, bool, error) {
	res, err := s.completeMany(ctx, []final{{id: id, u: u}})
	if err != nil {
		return domain.Job{}, false, err
	}
	return res[0].job, res[0].changed, res[0].err
}

// final is a final state to apply; completed is its outcome.
type (
	final struct {
		id string
		u  store.JobUpdate
	}
	completed struct {
		job     domain.Job
		changed bool
		err     error // domain.ErrNotFound for an unknown job
	}
)

// completeMany applies final states, in order: the finish hooks run first
// (with each job as it is about to be recorded), so a job never reads as
// final before its effects (a promoted key, a deleted server, an ingested
// inventory) are stored; then the states are recorded in one transaction
// and the server locks released. Hooks are idempotent, so a redelivered
// event or a second replica running them again is harmless; a failed hook
// is logged and the job still finishes. A second final state of the same
// job is ignored, as the state machine would.
func (s *Service) completeMany(ctx context.Context, fs []final) ([]completed, error) {
	ids := make([]string, len(fs))
	for i, f := range fs {
		ids[i] = f.id
	}
	cur, err := s.store.JobStates(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make([]completed, len(fs))
	var ts []store.JobTransition
	var idx []int // ts[k] is fs[idx[k]]
	var next []domain.Job
	for i, f := range fs {
		c, ok := cur[f.id]
		switch {
		case !ok:
			out[i].err = domain.NotFound("job")
			continue
		case !c.Accepts(f.u.Report()):
			out[i].job = c
			if !f.u.Control && !(c.Status == f.u.Status && c.FinalBy == domain.FinalByWorker) {
				// Not a redelivery of the final already stored: say so,
				// a dropped worker report must never be silent.
				s.log.Warn("job final state refused", "job_id", f.id, "reported", f.u.Status, "worker_id", f.u.WorkerID,
					"seq", f.u.Seq, "stored", c.Status, "stored_worker_id", c.WorkerID, "final_by", c.FinalBy)
			}
			continue
		}
		n := c
		u := f.u
		n.Status, n.Error, n.Result, n.ExitCode, n.FinishedAt = u.Status, u.Error, u.Result, u.ExitCode, &u.At
		n.Data, n.Unreachable = u.Data, u.Unreachable
		n.FinalBy = domain.FinalByWorker
		if u.Control {
			n.FinalBy = domain.FinalByControl
		}
		if u.Seq > n.StateSeq {
			n.StateSeq = u.Seq
		}
		cur[f.id] = n // a later final state of this job is judged against this one
		ts = append(ts, store.JobTransition{JobID: f.id, Update: u})
		idx = append(idx, i)
		next = append(next, n)
	}
	s.runHooks(ctx, next)
	res, err := s.store.TransitionJobs(ctx, ts)
	if err != nil {
		return nil, err
	}
	var release []domain.Job
	for k, r := range res {
		i := idx[k]
		out[i] = completed{job: r.Job, changed: r.Changed, err: r.Err}
		if r.Err != nil || !r.Changed {
			continue
		}
		release = append(release, r.Job)
		if r.Prev.Status.Terminal() {
			// The worker's report arrived after the control plane had given
			// up on the job (docs/jobs.md "Convergence"): what the worker
			// saw on the server wins.
			s.log.Warn("job final state reported by its worker replaces the control plane's verdict", "job_id", r.Job.ID,
				"job_name", r.Job.Kind, "server_id", r.Job.ServerID, "status", r.Job.Status, "was", r.Prev.Status, "was_error", r.Prev.Error)
			continue
		}
		observeFinished(r.Job)
		s.log.Info("job finished", "job_id", r.Job.ID, "job_name", r.Job.Kind, "server_id", r.Job.ServerID, "status", r.Job.Status, "error", r.Job.Error)
	}
	s.releaseLocks(ctx, release)
	return out, nil
}

// runHooks runs the finish hooks of jobs: per kind, in registration order,
// a batch hook once over all of that kind's jobs, a single hook per job.
// Failures are logged; a panic is recovered and counted.
func (s *Service) runHooks(ctx context.Context, jobs []domain.Job) {
	var kinds []domain.JobKind
	byKind := map[domain.JobKind][]domain.Job{}
	for _, j := range jobs {
		if _, ok := byKind[j.Kind]; !ok {
			kinds = append(kinds, j.Kind)
		}
		byKind[j.Kind] = append(byKind[j.Kind], j)
	}
	for _, k := range kinds {
		s.mu.RLock()
		hooks := s.hooks[k]
		s.mu.RUnlock()
		group := byKind[k]
		for _, h := range hooks {
			if h.many != nil {
				// A panicking hook is a failed hook (recovered, logged and
				// counted): the jobs still finish, and the ingest does not
				// meet the same panic again on every redelivery.
				var errs []error
				safe.Do("job finish hook "+string(k), func() { errs = h.many(ctx, group) })
				for i, err := range errs {
					if err != nil && i < len(group) {
						s.log.Error("job finish hook failed", "job_id", group[i].ID, "job_name", k, "err", err)
					}
				}
				continue
			}
			for _, j := range group {
				var err error
				safe.Do("job finish hook "+string(k), func() { err = h.one(ctx, j) })
				if err != nil {
					s.log.Error("job finish hook failed", "job_id", j.ID, "job_name", k, "err", err)
				}
			}
		}
	}
}

// announce publishes a state decided by the control plane so live
// followers see it. It is marked OriginControl: the ingest skips it (the
// row already has it), so it can never pass for a worker's report.
func (s *Service) announce(job domain.Job) {
	msg, _ := json.Marshal(bus.StateMsg{V: bus.MessageVersion, Type: bus.TypeState, JobID: job.ID, Origin: bus.OriginControl,
		WorkerID: job.WorkerID, Status: string(job.Status), At: s.now(), Error: job.Error, ExitCode: job.ExitCode})
	if s.bus != nil {
		_ = s.bus.Notify(bus.JobStateSubject(job.ID), msg)
	}
}

// Run serves the control-plane side until ctx ends: the credential
// responder, the ingest and the reaper. Every replica runs it.
func (s *Service) Run(ctx context.Context) error {
	var stop func()
	for stop == nil {
		st, err := s.ServeCredentials()
		if err == nil {
			stop = st
			break
		}
		s.log.Warn("credential responder unavailable, retrying", "err", err)
		if !sleepCtx(ctx, time.Second) {
			return nil
		}
	}
	defer stop()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); safe.Supervise(ctx, "jobs ingest", s.RunIngest) }()
	go func() { defer wg.Done(); safe.Supervise(ctx, "jobs reaper", s.RunReaper) }()
	wg.Wait()
	return nil
}

// observeFinished counts a job's final state in the metrics, with its
// duration from start (jobs that never started count, without one).
func observeFinished(j domain.Job) {
	kind, status := string(j.Kind), string(j.Status)
	metrics.JobsFinished.WithLabelValues(kind, status).Inc()
	if j.StartedAt != nil && j.FinishedAt != nil && !j.FinishedAt.Before(*j.StartedAt) {
		metrics.JobDuration.WithLabelValues(kind, status).Observe(j.FinishedAt.Sub(*j.StartedAt).Seconds())
	}
}

// params2json is params as the job will store them (for its name).
func params2json(params any) []byte {
	if params == nil {
		return nil
	}
	b, _ := json.Marshal(params)
	return b
}

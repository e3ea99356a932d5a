package status

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/store"
)

// Service persists computed statuses. Every method that changes an input
// recomputes the server's status before it returns.
type Service struct {
	store *store.Store
	log   *slog.Logger
	now   func() time.Time
}

// New returns the service.
func New(st *store.Store, log *slog.Logger) *Service {
	if log == nil {
		log = slog.Default()
	}
	return &Service{store: st, log: log, now: func() time.Time { return time.Now().UTC() }}
}

// SetClock replaces the clock (tests, demo seeding).
func (s *Service) SetClock(now func() time.Time) { s.now = now }

// Result is a stored status.
type Result struct {
	Status     domain.ServerStatus
	Insights   []Insight
	ComputedAt time.Time
}

// Recompute loads a server's inputs, computes its status and stores it
// (also into servers.status) when the colour or an input changed.
func (s *Service) Recompute(ctx context.Context, serverID string) (Result, error) {
	res, err := s.recompute(ctx, []string{serverID})
	if err != nil {
		return Result{}, err
	}
	r, ok := res[serverID]
	if !ok {
		return Result{}, domain.NotFound("server")
	}
	return r, nil
}

// RecomputeMany is Recompute for many servers: their inputs are read in a
// few queries and the changed statuses stored in one transaction (the
// inventory ingest and the jobs ingest hand over whole batches). Servers
// that do not exist are skipped.
func (s *Service) RecomputeMany(ctx context.Context, serverIDs []string) error {
	_, err := s.recompute(ctx, serverIDs)
	return err
}

func (s *Service) recompute(ctx context.Context, ids []string) (map[string]Result, error) {
	raws, err := s.store.LoadStatusInputsMany(ctx, ids)
	if err != nil {
		return nil, err
	}
	now := s.now()
	out := make(map[string]Result, len(raws))
	var save []store.StatusRecord
	var changed []string
	for id, raw := range raws {
		in := inputsOf(raw, now)
		st, ins := Compute(in)
		body, err := json.Marshal(ins)
		if err != nil {
			return nil, err
		}
		hash := hashOf(st, body)
		res := Result{Status: st, Insights: ins, ComputedAt: in.Now}
		if raw.Previous != nil && raw.Previous.InputsHash == hash {
			res.ComputedAt = raw.Previous.ComputedAt
			out[id] = res
			continue
		}
		out[id] = res
		save = append(save, store.StatusRecord{ServerID: id, Status: string(st), InsightsJSON: body, InputsHash: hash, ComputedAt: in.Now})
		if raw.Previous == nil || raw.Previous.Status != string(st) {
			changed = append(changed, id)
		}
	}
	if err := s.store.SaveStatuses(ctx, save); err != nil {
		return nil, err
	}
	for _, id := range changed {
		s.log.Info("server status changed", "server_id", id, "status", out[id].Status)
	}
	return out, nil
}

// hashOf fingerprints the outcome (colour and insight texts, which embed
// every input that matters), so an unchanged recompute writes nothing.
func hashOf(st domain.ServerStatus, insights []byte) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00", st)
	h.Write(insights)
	return hex.EncodeToString(h.Sum(nil))
}

func inputsOf(r store.StatusInputs, now time.Time) Inputs {
	in := Inputs{Now: now, FailedContacts: r.FailedContacts, ContactError: r.ContactError}
	in.Contacted = r.LastSeenAt != nil || r.Facts != nil
	if r.UnreachableSince != nil {
		in.UnreachableSince = *r.UnreachableSince
	}
	if f := r.Facts; f != nil {
		in.Refreshed = true
		in.RebootRequired, in.RootUsedPercent = f.RebootRequired, f.RootUsedPercent
		in.Updates, in.SecurityUpdates = f.Updates, f.SecurityUpdates
		if f.SecuritySince != nil {
			in.SecuritySince = *f.SecuritySince
		}
	}
	if r.LastJobStatus == string(domain.JobFailed) {
		in.LastJobFailed, in.LastJobName, in.LastJobError = true, r.LastJobKind, r.LastJobError
	}
	in.CVECritical, in.CVEHigh, in.CVEMedium = r.Findings[SeverityCritical], r.Findings[SeverityHigh], r.Findings[SeverityMedium]
	return in
}

// RecordContact is the reachability hook: ok after any successful
// connection, !ok with the reason when the server could not be reached.
func (s *Service) RecordContact(ctx context.Context, serverID string, ok bool, reason string) (Result, error) {
	if err := s.store.RecordContact(ctx, serverID, ok, reason, s.now()); err != nil {
		return Result{}, err
	}
	return s.Recompute(ctx, serverID)
}

// JobFinished is the finish hook for every job kind: it records the
// contact outcome (unreachable tells a transport failure from a command
// failure) and recomputes, so "last job failed" follows the job history.
func (s *Service) JobFinished(ctx context.Context, job domain.Job, unreachable bool) error {
	var err error
	switch {
	case unreachable:
		_, err = s.RecordContact(ctx, job.ServerID, false, job.Error)
	case job.Status == domain.JobSuccess || job.Status == domain.JobFailed:
		_, err = s.RecordContact(ctx, job.ServerID, true, "")
	default:
		_, err = s.Recompute(ctx, job.ServerID)
	}
	return err
}

// JobsFinished is JobFinished for many jobs (job.Unreachable tells a
// transport failure): one transaction records the contacts, one recompute
// follows. It returns one error per job, in order. If the contacts fail
// (a server was deleted meanwhile), each job is retried alone; if the
// recompute fails, each server is recomputed alone — the contacts are
// stored then, and a failed contact must not count twice.
func (s *Service) JobsFinished(ctx context.Context, jobs []domain.Job) []error {
	errs := make([]error, len(jobs))
	var contacts []store.Contact
	ids := make([]string, 0, len(jobs))
	for _, job := range jobs {
		ids = append(ids, job.ServerID)
		switch {
		case job.Unreachable:
			contacts = append(contacts, store.Contact{ServerID: job.ServerID, Reason: job.Error})
		case job.Status == domain.JobSuccess || job.Status == domain.JobFailed:
			contacts = append(contacts, store.Contact{ServerID: job.ServerID, OK: true})
		}
	}
	if err := s.store.RecordContacts(ctx, contacts, s.now()); err != nil {
		if len(jobs) == 1 {
			errs[0] = err
			return errs
		}
		for i, job := range jobs {
			errs[i] = s.JobFinished(ctx, job, job.Unreachable)
		}
		return errs
	}
	if err := s.RecomputeMany(ctx, ids); err != nil {
		for i, job := range jobs {
			_, errs[i] = s.Recompute(ctx, job.ServerID)
		}
	}
	return errs
}

// Finding is one vulnerability finding the scanner reports.
type Finding = store.Finding

// SetFindings is the scanner hook: it replaces a server's findings and
// recomputes (critical → red, highest high → yellow, each with an insight).
func (s *Service) SetFindings(ctx context.Context, serverID string, fs []Finding) (Result, error) {
	if err := s.store.SetFindings(ctx, serverID, fs); err != nil {
		return Result{}, err
	}
	return s.Recompute(ctx, serverID)
}

// RecomputeAll recomputes every server: the daily task that lets
// time-based thresholds (security updates pending for long) take effect
// without another event.
func (s *Service) RecomputeAll(ctx context.Context) (int, error) {
	ids, err := s.store.ServerIDs(ctx, false)
	if err != nil {
		return 0, err
	}
	for _, id := range ids {
		if _, err := s.Recompute(ctx, id); err != nil {
			s.log.Warn("status recompute failed", "server_id", id, "err", err)
		}
	}
	return len(ids), nil
}

// Of returns the stored statuses of servers visible to p; servers never
// computed are reported unknown with the never-contacted insight.
func (s *Service) Of(ctx context.Context, p *domain.Principal, ids []string) (map[string]Result, error) {
	recs, err := s.store.StatusOf(ctx, store.ScopeOf(p), ids)
	if err != nil {
		return nil, err
	}
	out := make(map[string]Result, len(recs))
	for id, r := range recs {
		var ins []Insight
		_ = json.Unmarshal(r.InsightsJSON, &ins)
		out[id] = Result{Status: domain.ServerStatus(r.Status), Insights: ins, ComputedAt: r.ComputedAt}
	}
	return out, nil
}

package status

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
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
	// onChange runs after a recompute stored a changed outcome (OnChange).
	onChange []func()
	// notes supplies configuration warnings per server (SetNotes).
	notes func(ctx context.Context, serverIDs []string) (map[string][]string, error)
}

// SetNotes plugs in a source of configuration warnings per server (the
// automation area's group-priority ties); each becomes an info insight.
// Set it before serving.
func (s *Service) SetNotes(fn func(ctx context.Context, serverIDs []string) (map[string][]string, error)) {
	s.notes = fn
}

// OnChange adds fn to what runs after a recompute stored a changed status
// or insight (a scan's findings, a failed contact, an ingest): the alerts
// area evaluates at once then. Register before serving; fn must not block.
func (s *Service) OnChange(fn func()) { s.onChange = append(s.onChange, fn) }

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
	var notes map[string][]string
	if s.notes != nil {
		if notes, err = s.notes(ctx, ids); err != nil {
			// A warning source must not stop the traffic light.
			s.log.Warn("status: configuration warnings unavailable", "err", err)
		}
	}
	now := s.now()
	out := make(map[string]Result, len(raws))
	var save []store.StatusRecord
	var changed []string
	for id, raw := range raws {
		in := inputsOf(raw, now)
		in.Notes = notes[id]
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
	if len(save) > 0 {
		for _, fn := range s.onChange {
			fn()
		}
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
		in.LastJobFailed, in.LastJobName, in.LastJobError = true, domain.JobName(domain.JobKind(r.LastJobKind), r.LastJobParams), r.LastJobError
	}
	in.CVECritical, in.CVEHigh, in.CVEMedium = r.Findings[SeverityCritical], r.Findings[SeverityHigh], r.Findings[SeverityMedium]
	in.CVECriticalPackages, in.CVEHighPackages = packageFixes(r.Severe, SeverityCritical), packageFixes(r.Severe, SeverityHigh)
	for _, n := range r.Findings {
		in.CVEAny += n
	}
	in.SSHHardened, in.FirewallActive, in.FirewallTool, in.FirewallKnown = r.SSHHardened, r.FirewallActive, r.FirewallTool, r.FirewallKnown
	in.ImageUpdates = imageUpdates(r.ContainerUpdates)
	return in
}

// imageUpdates lists the images of the last newer-image check that have an
// update (containers.ImageUpdate's JSON shape), sorted and distinct.
func imageUpdates(raw []byte) []string {
	if len(raw) == 0 {
		return nil
	}
	var ups []struct {
		Image           string `json:"image"`
		UpdateAvailable bool   `json:"update_available"`
	}
	if json.Unmarshal(raw, &ups) != nil {
		return nil
	}
	var out []string
	for _, u := range ups {
		if u.UpdateAvailable && u.Image != "" {
			out = append(out, u.Image)
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
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

// packageFixes names each affected package of a severity once, with the
// fixed versions its findings name ("openssl (fixed in 3.0.15-1~deb12u1)",
// "libc6 (no fix yet)"), sorted by name.
func packageFixes(fs []Finding, sev string) []string {
	fixes := map[string][]string{}
	var names []string
	for _, f := range fs {
		if f.Severity != sev {
			continue
		}
		cur, seen := fixes[f.Package]
		if !seen {
			names = append(names, f.Package)
		}
		if f.FixedIn != "" && !slices.Contains(cur, f.FixedIn) {
			cur = append(cur, f.FixedIn)
		}
		fixes[f.Package] = cur
	}
	sort.Strings(names)
	out := make([]string, len(names))
	for i, n := range names {
		if len(fixes[n]) == 0 {
			out[i] = n + " (no fix yet)"
		} else {
			out[i] = n + " (fixed in " + strings.Join(fixes[n], ", ") + ")"
		}
	}
	return out
}

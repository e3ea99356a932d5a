// Package rollout runs a fleet action as a staged rollout: an optional
// canary batch, then batches by count or percentage, a failure threshold
// (absolute or a percentage of the rollout's servers) that halts it, a
// wait for rebooted servers to come back and pass a refresh before the
// next batch, a pause between batches and a bound on jobs in flight per
// batch. Each wave of jobs is one jobs.SubmitBulk.
//
// State lives in the store only (rollouts, rollout_items), and one
// replica drives it — the holder of the "rollouts" lease in the NATS
// leader bucket, the mechanism the scheduler uses. A step reads the
// rollout, reconciles its items with their jobs, then submits what the
// plan allows; so a restarted or new leader resumes where the old one
// stopped.
//
//	awaiting_approval ──approve──► running ──► completed
//	        │ reject/expire        │  ▲  └─failures ≥ threshold─► halted
//	        ▼                   pause resume
//	     rejected                 ▼  │
//	                             paused ──abort──► aborted (also from running)
package rollout

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/approvals"
	"github.com/lcmproject/lcm/internal/audit"
	"github.com/lcmproject/lcm/internal/bus"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/jobs"
	"github.com/lcmproject/lcm/internal/store"
)

// ApprovalKind is the approvals kind of rollouts.
const ApprovalKind = "rollout"

// SettingRequireApproval is the settings key (bool) that makes every
// rollout wait for a second person's approval.
const SettingRequireApproval = "rollouts.require_approval"

// MaintenanceReason is why a server in maintenance mode is left out of a
// rollout (when its batch comes; it runs if maintenance has ended by then).
const MaintenanceReason = "maintenance: the server is in maintenance mode"

// Bounds of a rollout's plan.
const (
	MaxSelection = 10000
	MaxPause     = 24 * 3600
	MaxBatches   = 1000
)

// Options configure the service.
type Options struct {
	Log *slog.Logger
	// Approvals, when set, lets rollouts require approval.
	Approvals *approvals.Service
	// Lease is the driver's leader lease; nil drives on this replica
	// without one (tests of a single replica).
	Lease *bus.Lease
	// Tick is how often the leader looks at running rollouts (default
	// 1 s); a finished job wakes it at once (Poke).
	Tick time.Duration
}

// Service runs rollouts.
type Service struct {
	store *store.Store
	jobs  *jobs.Service
	o     Options
	log   *slog.Logger
	now   func() time.Time
	acts  registry
	poke  chan struct{}
	mu    sync.Mutex // serialises steps on this replica
}

// New returns the service with the built-in actions registered.
func New(st *store.Store, js *jobs.Service, o Options) *Service {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Tick <= 0 {
		o.Tick = time.Second
	}
	s := &Service{store: st, jobs: js, o: o, log: o.Log, now: func() time.Time { return time.Now().UTC() },
		acts: registry{m: map[string]Action{}}, poke: make(chan struct{}, 1)}
	for _, a := range builtinActions() {
		s.acts.add(a)
	}
	if o.Approvals != nil {
		o.Approvals.Register(ApprovalKind, approvals.Kind{
			Permission: domain.PermServersWrite,
			Visible: func(ctx context.Context, p *domain.Principal, a domain.Approval) bool {
				_, err := s.store.GetRollout(ctx, store.ScopeOf(p), a.RefID)
				return err == nil
			},
			Decided: s.approvalDecided,
		})
	}
	if js != nil {
		for _, k := range domain.JobKinds {
			js.OnFinishBatch(k, func(context.Context, []domain.Job) []error { s.Poke(); return nil })
		}
	}
	return s
}

// RegisterAction adds (or replaces) a rollout action.
func (s *Service) RegisterAction(a Action) { s.acts.add(a) }

// Actions lists the actions a rollout can run: the registered ones by
// name, then every custom action (custom:<id>).
func (s *Service) Actions(ctx context.Context) ([]Action, error) {
	var out []Action
	for _, n := range s.acts.names() {
		a, _ := s.acts.get(n)
		out = append(out, a)
	}
	list, err := s.store.ListCustomActions(ctx)
	if err != nil {
		return nil, err
	}
	for _, c := range list {
		out = append(out, customAction(actions.CustomParams{ActionID: c.ID, Name: c.Name, Commands: c.Commands}, c.RequiresApproval))
	}
	return out, nil
}

// action resolves a rollout's action: a registered one, or custom:<id> —
// from frozen (the params stored with the rollout) when given, so a
// rollout keeps running the commands it was created and approved with,
// otherwise from the custom action as it is now.
func (s *Service) action(ctx context.Context, name string, frozen json.RawMessage) (Action, error) {
	if a, ok := s.acts.get(name); ok {
		return a, nil
	}
	id, ok := strings.CutPrefix(name, CustomPrefix)
	if !ok || id == "" || len(id) > 36 {
		return Action{}, domain.Invalid("unknown_action", fmt.Sprintf("unknown rollout action %q; one of: %s, or custom:<custom action id>",
			name, strings.Join(s.acts.names(), ", ")))
	}
	if len(frozen) > 0 {
		var p actions.CustomParams
		if err := json.Unmarshal(frozen, &p); err != nil || len(p.Commands) == 0 {
			return Action{}, fmt.Errorf("rollout: stored params of %s unreadable: %v", name, err)
		}
		return customAction(p, false), nil
	}
	c, err := s.store.GetCustomAction(ctx, id)
	if err != nil {
		return Action{}, domain.Invalid("unknown_action", fmt.Sprintf("no custom action %q", id))
	}
	return customAction(actions.CustomParams{ActionID: c.ID, Name: c.Name, Commands: c.Commands}, c.RequiresApproval), nil
}

// Poke wakes the driver (a job finished).
func (s *Service) Poke() {
	select {
	case s.poke <- struct{}{}:
	default:
	}
}

// Request is a new rollout.
type Request struct {
	Action    string
	ServerIDs []string
	GroupID   string
	All       bool

	CanarySize              int
	BatchSize               int
	BatchPercent            int
	FailureThreshold        int // halt when this many servers failed
	FailureThresholdPercent int // or this share of the rollout's servers
	PauseSeconds            int
	Concurrency             int
	RequireApproval         bool
}

// PlanItem is one server of a dry run.
type PlanItem struct {
	ServerID   string
	ServerName string
	Batch      int
	Skip       string // why nothing will run ("" = it runs)
	Packages   []store.OutdatedRecord
	Reboot     bool // the action reboots it
}

// Plan is a dry run: the batches and what moves per server.
type Plan struct {
	Rollout domain.Rollout
	Items   []PlanItem
}

func (r *Request) validate(act Action) (Action, error) {
	targets := 0
	if len(r.ServerIDs) > 0 {
		targets++
	}
	if r.GroupID != "" {
		targets++
	}
	if r.All {
		targets++
	}
	if targets != 1 {
		return act, domain.Invalid("invalid_target", "give exactly one target: server_ids (a non-empty list), group_id, or all: true")
	}
	if len(r.ServerIDs) > MaxSelection {
		return act, domain.Invalid("selection_too_large", fmt.Sprintf("at most %d server ids; use group_id or all", MaxSelection))
	}
	for _, id := range r.ServerIDs {
		if id == "" || len(id) > 36 {
			return act, domain.Invalid("invalid_server_id", "server_ids must hold server ids")
		}
	}
	if len(r.GroupID) > 36 {
		return act, domain.Invalid("invalid_group_id", "group_id is a group id")
	}
	bad := func(code, msg string) error { return domain.Invalid(code, msg) }
	switch {
	case r.CanarySize < 0 || r.CanarySize > MaxSelection:
		return act, bad("invalid_canary", "canary_size is between 0 and 10000")
	case r.BatchSize < 0 || r.BatchSize > MaxSelection:
		return act, bad("invalid_batch_size", "batch_size is between 0 and 10000")
	case r.BatchPercent < 0 || r.BatchPercent > 100:
		return act, bad("invalid_batch_percent", "batch_percent is between 0 and 100")
	case r.BatchSize > 0 && r.BatchPercent > 0:
		return act, bad("invalid_batch_size", "give batch_size or batch_percent, not both")
	case r.FailureThreshold < 0 || r.FailureThreshold > MaxSelection:
		return act, bad("invalid_threshold", "failure_threshold is between 0 and 10000")
	case r.FailureThresholdPercent < 0 || r.FailureThresholdPercent > 100:
		return act, bad("invalid_threshold", "failure_threshold_percent is between 0 and 100")
	case r.FailureThreshold > 0 && r.FailureThresholdPercent > 0:
		return act, bad("invalid_threshold", "give failure_threshold or failure_threshold_percent, not both")
	case r.PauseSeconds < 0 || r.PauseSeconds > MaxPause:
		return act, bad("invalid_pause", "pause_seconds is between 0 and 86400")
	case r.Concurrency < 0 || r.Concurrency > MaxSelection:
		return act, bad("invalid_concurrency", "concurrency is between 0 (the whole batch) and 10000")
	}
	return act, nil
}

// plan resolves the targets and cuts them into batches.
func (s *Service) plan(ctx context.Context, p *domain.Principal, r Request) (domain.Rollout, []store.RolloutPlanTarget, Action, error) {
	act, err := s.action(ctx, r.Action, nil)
	if err != nil {
		return domain.Rollout{}, nil, act, err
	}
	if act, err = r.validate(act); err != nil {
		return domain.Rollout{}, nil, act, err
	}
	sc := store.ScopeOf(p)
	ro := domain.Rollout{ID: uuid.NewString(), Action: act.Name, Status: domain.RolloutRunning, CanarySize: r.CanarySize,
		BatchSize: r.BatchSize, BatchPercent: r.BatchPercent, MaxFailures: r.FailureThreshold,
		MaxFailurePercent: r.FailureThresholdPercent, PauseSeconds: r.PauseSeconds, Concurrency: r.Concurrency,
		CreatedBy: userID(p), CreatedAt: s.now(), UpdatedAt: s.now()}
	if strings.HasPrefix(act.Name, CustomPrefix) {
		// A later edit of the custom action does not change this rollout.
		ro.ActionParams, _ = json.Marshal(act.Params)
	}
	switch {
	case len(r.ServerIDs) > 0:
		ro.Target = domain.BulkTargetServers
	case r.GroupID != "":
		if _, err := s.store.GetGroup(ctx, sc, r.GroupID); err != nil {
			return ro, nil, act, err
		}
		ro.Target, ro.GroupID = domain.BulkTargetGroup, r.GroupID
	default:
		ro.Target = domain.BulkTargetAll
	}
	targets, missing, err := s.store.RolloutTargets(ctx, sc, r.ServerIDs, r.GroupID, r.All)
	if err != nil {
		return ro, nil, act, err
	}
	if len(missing) > 0 {
		return ro, nil, act, &domain.Error{Kind: domain.ErrForbidden, Code: "servers_out_of_scope",
			Message: fmt.Sprintf("%d of the selected servers do not exist or are outside your groups; nothing was started", len(missing))}
	}
	if len(targets) == 0 {
		return ro, nil, act, domain.Invalid("no_servers", "the target holds no servers")
	}
	batches := cut(len(targets), r.CanarySize, r.BatchSize, r.BatchPercent)
	if len(batches) > MaxBatches {
		return ro, nil, act, domain.Invalid("too_many_batches", fmt.Sprintf("the plan has %d batches; at most %d", len(batches), MaxBatches))
	}
	ro.Batches = len(batches)
	i := 0
	for b, n := range batches {
		for k := 0; k < n; k++ {
			t := targets[i]
			ro.Items = append(ro.Items, domain.RolloutItem{ServerID: t.ID, ServerName: t.Name, Batch: b, State: domain.ItemPending})
			i++
		}
	}
	return ro, targets, act, nil
}

// cut splits n servers into batch sizes: the canary first (if any), then
// batches of size (or pct % of n, at least 1); no size means one batch.
func cut(n, canary, size, pct int) []int {
	var out []int
	if canary > 0 {
		c := min(canary, n)
		out = append(out, c)
		n -= c
	}
	if pct > 0 {
		size = max(1, int(math.Ceil(float64(n+sumInts(out))*float64(pct)/100)))
	}
	if size <= 0 {
		size = n
	}
	for n > 0 {
		b := min(size, n)
		out = append(out, b)
		n -= b
	}
	return out
}

func sumInts(xs []int) int {
	t := 0
	for _, x := range xs {
		t += x
	}
	return t
}

// DryRun returns the plan of r without starting anything: the batches
// and, per server, which packages would move (from the outdated packages
// the last refresh collected) or why it would be skipped.
func (s *Service) DryRun(ctx context.Context, p *domain.Principal, r Request) (Plan, error) {
	ro, targets, act, err := s.plan(ctx, p, r)
	if err != nil {
		return Plan{}, err
	}
	ids := make([]string, len(targets))
	for i, t := range targets {
		ids[i] = t.ID
	}
	outdated := map[string][]store.OutdatedRecord{}
	if act.Moves != nil {
		if outdated, err = s.store.OutdatedOf(ctx, ids); err != nil {
			return Plan{}, err
		}
	}
	byID := map[string]store.RolloutPlanTarget{}
	for _, t := range targets {
		byID[t.ID] = t
	}
	maint, err := s.store.InMaintenance(ctx, ids, s.now())
	if err != nil {
		return Plan{}, err
	}
	plan := Plan{Rollout: ro}
	for _, it := range ro.Items {
		t := byID[it.ServerID]
		pi := PlanItem{ServerID: it.ServerID, ServerName: it.ServerName, Batch: it.Batch, Packages: []store.OutdatedRecord{}}
		pi.Skip = s.skipReason(act, t, maint[t.ID])
		if pi.Skip == "" {
			pi.Reboot = act.Reboots
			if act.Moves != nil {
				for _, o := range outdated[it.ServerID] {
					if act.Moves(o) {
						pi.Packages = append(pi.Packages, o)
					}
				}
			}
		}
		plan.Items = append(plan.Items, pi)
	}
	ro.Items = nil
	return plan, nil
}

// skipReason says why a server of a rollout runs nothing ("" = it runs).
func (s *Service) skipReason(act Action, t store.RolloutPlanTarget, inMaintenance bool) string {
	switch {
	case !t.Joined:
		return "the server has not joined yet"
	case inMaintenance:
		return MaintenanceReason
	case act.Skip != nil && act.Skip(t) != "":
		return act.Skip(t)
	case act.Unsupported != nil && act.Unsupported(t) != "":
		return act.Unsupported(t)
	}
	return ""
}

// RequireApproval reports the policy rollouts.require_approval: every
// rollout, and the reference's "update all", waits for a second person.
func (s *Service) RequireApproval(ctx context.Context) (bool, error) {
	var on bool
	_, err := s.store.GetSetting(ctx, SettingRequireApproval, &on)
	return on, err
}

// SetRequireApproval sets the policy and returns its previous value. The
// route needs settings:manage (administrators) and audits the change:
// whoever may switch it off is trusted with the four eyes themselves.
func (s *Service) SetRequireApproval(ctx context.Context, on bool) (bool, error) {
	was, err := s.RequireApproval(ctx)
	if err != nil {
		return false, err
	}
	return was, s.store.PutSetting(ctx, SettingRequireApproval, on)
}

// Create stores a rollout and starts it, or parks it for approval when
// the request or the setting requires one. A server in another active
// rollout is a conflict (rollout_in_progress).
func (s *Service) Create(ctx context.Context, p *domain.Principal, r Request) (domain.Rollout, error) {
	ro, _, act, err := s.plan(ctx, p, r)
	if err != nil {
		return domain.Rollout{}, err
	}
	need := r.RequireApproval || act.RequiresApproval
	if !need {
		var set bool
		if ok, err := s.store.GetSetting(ctx, SettingRequireApproval, &set); err != nil {
			return domain.Rollout{}, err
		} else if ok && set {
			need = true
		}
	}
	if need {
		if s.o.Approvals == nil {
			return domain.Rollout{}, domain.Unavailable("approvals_unavailable", "approvals are not configured on this server")
		}
		ro.Status = domain.RolloutAwaitingApproval
	}
	if err := s.store.CreateRollout(ctx, ro); err != nil {
		return domain.Rollout{}, err
	}
	if need {
		a, err := s.o.Approvals.Request(ctx, p, ApprovalKind, ro.ID,
			fmt.Sprintf("Rollout %s on %d servers in %d batches", act.Label, len(ro.Items), ro.Batches),
			map[string]any{"action": ro.Action, "label": act.Label, "target": ro.Target, "group_id": ro.GroupID, "servers": len(ro.Items),
				"batches": ro.Batches, "canary_size": ro.CanarySize, "failure_threshold": ro.MaxFailures,
				"failure_threshold_percent": ro.MaxFailurePercent})
		if err != nil {
			reason := "approval could not be requested"
			_, _ = s.store.UpdateRollout(ctx, ro.ID, nil, store.RolloutUpdate{Status: ptr(domain.RolloutRejected), Reason: &reason, Finished: true}, s.now())
			return domain.Rollout{}, err
		}
		ro.ApprovalID = a.ID
		if _, err := s.store.UpdateRollout(ctx, ro.ID, nil, store.RolloutUpdate{ApprovalID: &a.ID}, s.now()); err != nil {
			return domain.Rollout{}, err
		}
	}
	s.log.Info("rollout created", "rollout_id", ro.ID, "action", ro.Action, "servers", len(ro.Items), "batches", ro.Batches, "status", ro.Status)
	s.Poke()
	return s.store.GetRollout(ctx, store.SystemScope, ro.ID)
}

func (s *Service) approvalDecided(ctx context.Context, a domain.Approval) error {
	if a.Status == domain.ApprovalApproved {
		ok, err := s.store.UpdateRollout(ctx, a.RefID, []string{domain.RolloutAwaitingApproval},
			store.RolloutUpdate{Status: ptr(domain.RolloutRunning)}, s.now())
		if err == nil && ok {
			s.Poke()
		}
		return err
	}
	reason := "approval " + a.Status
	if a.DeciderName != "" {
		reason += " by " + a.DeciderName
	}
	if a.Comment != "" {
		reason += ": " + a.Comment
	}
	return s.store.InTx(ctx, func(tx *store.Store) error {
		ok, err := tx.UpdateRollout(ctx, a.RefID, []string{domain.RolloutAwaitingApproval},
			store.RolloutUpdate{Status: ptr(domain.RolloutRejected), Reason: &reason, Finished: true}, s.now())
		if err != nil || !ok {
			return err
		}
		return tx.AbortRolloutPending(ctx, a.RefID, reason)
	})
}

// Get returns a rollout visible to p (all its servers visible).
func (s *Service) Get(ctx context.Context, p *domain.Principal, id string) (domain.Rollout, error) {
	return s.store.GetRollout(ctx, store.ScopeOf(p), id)
}

// Summary is a listed rollout with its item counts.
type Summary struct {
	domain.Rollout
	Counts map[string]int
}

// List returns the rollouts visible to p, newest first.
func (s *Service) List(ctx context.Context, p *domain.Principal, status string) ([]Summary, error) {
	if status != "" && !validStatus(status) {
		return nil, domain.Invalid("invalid_status", "unknown rollout status "+status)
	}
	list, err := s.store.ListRollouts(ctx, store.ScopeOf(p), store.RolloutFilter{Status: status})
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(list))
	for i, r := range list {
		ids[i] = r.ID
	}
	counts, err := s.store.RolloutSummaries(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make([]Summary, len(list))
	for i, r := range list {
		c := counts[r.ID]
		if c == nil {
			c = map[string]int{}
		}
		out[i] = Summary{Rollout: r, Counts: c}
	}
	return out, nil
}

func validStatus(st string) bool {
	switch st {
	case domain.RolloutAwaitingApproval, domain.RolloutRunning, domain.RolloutPaused, domain.RolloutHalted,
		domain.RolloutAborted, domain.RolloutCompleted, domain.RolloutRejected:
		return true
	}
	return false
}

// Pause stops a running rollout from starting more jobs; jobs in flight
// finish.
func (s *Service) Pause(ctx context.Context, p *domain.Principal, id string) (domain.Rollout, error) {
	return s.transition(ctx, p, id, []string{domain.RolloutRunning}, domain.RolloutPaused, "")
}

// Resume continues a paused rollout.
func (s *Service) Resume(ctx context.Context, p *domain.Principal, id string) (domain.Rollout, error) {
	return s.transition(ctx, p, id, []string{domain.RolloutPaused}, domain.RolloutRunning, "")
}

// Abort ends a rollout: servers not started yet never run; jobs in flight
// finish, or are aborted too when abortRunning.
func (s *Service) Abort(ctx context.Context, p *domain.Principal, id string, abortRunning bool) (domain.Rollout, error) {
	who := "a user"
	if p != nil {
		who = p.Username
	}
	ro, err := s.transition(ctx, p, id, []string{domain.RolloutRunning, domain.RolloutPaused, domain.RolloutAwaitingApproval},
		domain.RolloutAborted, "aborted by "+who)
	if err != nil {
		return ro, err
	}
	if err := s.store.AbortRolloutPending(ctx, id, "aborted by "+who+" before it started"); err != nil {
		return ro, err
	}
	if abortRunning {
		for _, it := range ro.Items {
			jid := it.JobID
			if it.State == domain.ItemRefreshing {
				jid = it.RefreshJobID
			}
			if (it.State == domain.ItemRunning || it.State == domain.ItemRefreshing) && jid != "" {
				if _, err := s.jobs.Abort(ctx, p, jid); err != nil {
					s.log.Warn("rollout abort: job not aborted", "rollout_id", id, "job_id", jid, "err", err)
				}
			}
		}
	}
	s.Poke()
	return s.store.GetRollout(ctx, store.ScopeOf(p), id)
}

func (s *Service) transition(ctx context.Context, p *domain.Principal, id string, from []string, to, reason string) (domain.Rollout, error) {
	ro, err := s.store.GetRollout(ctx, store.ScopeOf(p), id)
	if err != nil {
		return ro, err
	}
	u := store.RolloutUpdate{Status: &to}
	if reason != "" {
		u.Reason = &reason
	}
	if to == domain.RolloutAborted {
		u.Finished = true
	}
	ok, err := s.store.UpdateRollout(ctx, id, from, u, s.now())
	if err != nil {
		return ro, err
	}
	if !ok {
		return ro, domain.Conflict("invalid_state", fmt.Sprintf("the rollout is %s; this needs it %s", ro.Status, strings.Join(from, " or ")))
	}
	if to == domain.RolloutAborted && ro.ApprovalID != "" && ro.Status == domain.RolloutAwaitingApproval {
		// The approval is moot: withdraw it.
		_, _ = s.store.DecideApproval(ctx, ro.ApprovalID, domain.ApprovalRejected, userID(p), "rollout aborted by its requester or an operator", s.now())
	}
	ro.Status = to
	s.Poke()
	return ro, nil
}

func userID(p *domain.Principal) string {
	if p == nil {
		return ""
	}
	return p.UserID
}

func ptr[T any](v T) *T { return &v }

// auditSystem records a change the driver made (halt, completion).
func (s *Service) auditSystem(ctx context.Context, action, id string, d map[string]any) {
	audit.Append(ctx, s.store, s.log, nil, store.AuditEntry{Action: action, Target: audit.Target("rollout", id), Details: d})
}

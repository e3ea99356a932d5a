// Package automation runs group schedules with ordered rules, custom
// actions and maintenance (issue 20). It knows nothing of HTTP.
//
//	leader (schedule registry task "group_schedules", every second) ──► Tick(now)
//	  due schedule ──► run row (unique per schedule and cron slot) ──► next_run_at advanced (CAS)
//	  run: outside its window ──► waiting (due at the window's opening) or skipped
//	       per rule, in order ──► targets (group servers minus maintenance, superseded, not joined)
//	                          ──► jobs.SubmitBulk (bulk id stored first) ──► wait for the jobs
//	  a run whose owner stopped beating (replica died) ──► claimed by the next Tick, resumed at its rule
package automation

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/lcmproject/lcm/internal/approvals"
	"github.com/lcmproject/lcm/internal/audit"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/jobs"
	"github.com/lcmproject/lcm/internal/store"
)

// Timing of runs.
const (
	// DefaultStaleAfter: a running run whose owner did not beat for this
	// long (six beats) is taken over by another replica.
	DefaultStaleAfter = 30 * time.Second
	// DefaultPoll is how often a run looks at its jobs and beats.
	DefaultPoll = time.Second
)

// Approvals is the hook the approvals service (issue 20, "Approvals")
// plugs in: a schedule or custom action with requires_approval runs only
// when Check says it is approved. Without it such a run is refused with
// approval_unavailable (never run unapproved).
type Approvals interface {
	// Check returns nil when the subject (kind "schedule-run" or
	// "custom-action-run", its id) may run now for requester, on exactly
	// bind's servers with bind's action; an error (typically a conflict
	// "approval_pending" naming the request) otherwise.
	Check(ctx context.Context, kind, subjectID string, requester *domain.Principal, summary string, bind domain.ApprovalBinding) error
}

// Approval kinds of automation.
const (
	ApprovalScheduleRun     = "schedule-run"
	ApprovalCustomActionRun = "custom-action-run"
)

// Options configure the service.
type Options struct {
	Store *store.Store
	Jobs  *jobs.Service
	Log   *slog.Logger
	// Now is the clock (tests inject one); nil is time.Now in UTC.
	Now func() time.Time
	// Owner names this replica in runs it owns ("host/pid" by default).
	Owner string
	// Scan runs a vulnerability scan of servers (vulnsvc.Rescan); nil
	// makes the vulnerability-scan rule fail with not_available.
	Scan func(ctx context.Context, serverIDs []string)
	// Approvals is the approvals hook; nil: approval cannot be granted.
	Approvals  Approvals
	StaleAfter time.Duration
	Poll       time.Duration
	// Wait pauses a run between looks at its jobs (tests may replace it);
	// nil waits Poll in real time.
	Wait func(ctx context.Context) bool
}

// Service is the automation service.
type Service struct {
	o       Options
	stopped chan struct{}
	stop    sync.Once
}

// Stop makes this replica's runs stop where they are (as if the process
// died): they keep their owner until another replica takes them over.
// Tick does nothing afterwards.
func (s *Service) Stop() { s.stop.Do(func() { close(s.stopped) }) }

func (s *Service) isStopped() bool {
	select {
	case <-s.stopped:
		return true
	default:
		return false
	}
}

// New returns the service.
func New(o Options) *Service {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Now == nil {
		o.Now = func() time.Time { return time.Now().UTC() }
	}
	if o.Owner == "" {
		h, _ := os.Hostname()
		o.Owner = fmt.Sprintf("%s/%d/%s", h, os.Getpid(), uuid.NewString()[:8])
	}
	if o.StaleAfter <= 0 {
		o.StaleAfter = DefaultStaleAfter
	}
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	svc := &Service{stopped: make(chan struct{})}
	if o.Wait == nil {
		poll := o.Poll
		o.Wait = func(ctx context.Context) bool {
			t := time.NewTimer(poll)
			defer t.Stop()
			select {
			case <-ctx.Done():
				return false
			case <-svc.stopped:
				return false
			case <-t.C:
				return true
			}
		}
	}
	svc.o = o
	return svc
}

// SetApprovals plugs in the approvals service (while wiring).
func (s *Service) SetApprovals(a Approvals) { s.o.Approvals = a }

// SetScan plugs in the vulnerability scan (while wiring).
func (s *Service) SetScan(f func(ctx context.Context, serverIDs []string)) { s.o.Scan = f }

func (s *Service) now() time.Time { return s.o.Now().UTC() }

func (s *Service) audit(ctx context.Context, actor *domain.Principal, action, target string, details map[string]any) {
	audit.Append(ctx, s.o.Store, s.o.Log, actor, store.AuditEntry{Action: action, Target: target, Details: details})
}

// visibleGroup checks p sees the group.
func (s *Service) visibleGroup(ctx context.Context, p *domain.Principal, groupID string) (domain.Group, error) {
	if groupID == "" || len(groupID) > 36 {
		return domain.Group{}, domain.NotFound("group")
	}
	return s.o.Store.GetGroup(ctx, store.ScopeOf(p), groupID)
}

// ScheduleInput is a schedule as created or changed (nil: unchanged).
type ScheduleInput struct {
	Name             *string
	Cron             *string
	TimeZone         *string
	WindowStart      *string
	WindowEnd        *string
	OutsideWindow    *string
	Enabled          *bool
	RequiresApproval *bool
}

func (in ScheduleInput) apply(sch *domain.Schedule) error {
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	set(&sch.Name, in.Name)
	set(&sch.Cron, in.Cron)
	set(&sch.TimeZone, in.TimeZone)
	set(&sch.WindowStart, in.WindowStart)
	set(&sch.WindowEnd, in.WindowEnd)
	set(&sch.OutsideWindow, in.OutsideWindow)
	if in.Enabled != nil {
		sch.Enabled = *in.Enabled
	}
	if in.RequiresApproval != nil {
		sch.RequiresApproval = *in.RequiresApproval
	}
	name, err := validName(sch.Name)
	if err != nil {
		return err
	}
	sch.Name = name
	if _, err := ParseCron(sch.Cron); err != nil {
		return err
	}
	if _, err := LoadZone(sch.TimeZone); err != nil {
		return err
	}
	if err := ValidWindow(sch.WindowStart, sch.WindowEnd); err != nil {
		return err
	}
	switch sch.OutsideWindow {
	case "":
		sch.OutsideWindow = "wait"
	case "wait", "skip":
	default:
		return domain.Invalid("invalid_outside_window", "outside_window is wait or skip")
	}
	return nil
}

// nextRun is the schedule's first slot after t.
func nextRun(sch domain.Schedule, t time.Time) *time.Time {
	c, err := ParseCron(sch.Cron)
	if err != nil {
		return nil
	}
	loc, err := LoadZone(sch.TimeZone)
	if err != nil {
		return nil
	}
	n := c.Next(t.In(loc)).UTC()
	if n.IsZero() {
		return nil
	}
	return &n
}

// ListSchedules returns a visible group's schedules.
func (s *Service) ListSchedules(ctx context.Context, p *domain.Principal, groupID string) ([]domain.Schedule, error) {
	if _, err := s.visibleGroup(ctx, p, groupID); err != nil {
		return nil, err
	}
	return s.o.Store.ListSchedules(ctx, store.ScopeOf(p), groupID)
}

// GetSchedule returns a visible schedule.
func (s *Service) GetSchedule(ctx context.Context, p *domain.Principal, id string) (domain.Schedule, error) {
	if id == "" || len(id) > 36 {
		return domain.Schedule{}, domain.NotFound("schedule")
	}
	return s.o.Store.GetSchedule(ctx, store.ScopeOf(p), id)
}

// DefineSchedule creates a schedule in a visible group.
func (s *Service) DefineSchedule(ctx context.Context, p *domain.Principal, groupID string, in ScheduleInput) (domain.Schedule, error) {
	if _, err := s.visibleGroup(ctx, p, groupID); err != nil {
		return domain.Schedule{}, err
	}
	sch := domain.Schedule{GroupID: groupID, Enabled: true}
	if in.Name == nil || in.Cron == nil {
		return domain.Schedule{}, domain.Invalid("invalid_request", "name and cron are required")
	}
	if err := in.apply(&sch); err != nil {
		return domain.Schedule{}, err
	}
	if p != nil {
		sch.CreatedBy = p.UserID
	}
	sch.NextRunAt = nextRun(sch, s.now())
	return s.o.Store.CreateSchedule(ctx, sch)
}

// ErrApprovalOffNeedsAdmin: only an administrator may switch a schedule's
// approval requirement off (otherwise the person whose runs need a second
// person could simply drop the second person).
var ErrApprovalOffNeedsAdmin = &domain.Error{Kind: domain.ErrForbidden, Code: "admin_required",
	Message: "only an administrator may switch off requires_approval (four eyes)"}

// UpdateSchedule changes a visible schedule; a changed cron or zone
// recomputes the next run. p becomes the schedule's last editor (its cron
// runs are requested in p's name). Switching requires_approval off needs
// an administrator.
func (s *Service) UpdateSchedule(ctx context.Context, p *domain.Principal, id string, in ScheduleInput) (domain.Schedule, error) {
	sch, err := s.GetSchedule(ctx, p, id)
	if err != nil {
		return domain.Schedule{}, err
	}
	if sch.RequiresApproval && in.RequiresApproval != nil && !*in.RequiresApproval && !p.IsAdmin() {
		return domain.Schedule{}, ErrApprovalOffNeedsAdmin
	}
	if err := in.apply(&sch); err != nil {
		return domain.Schedule{}, err
	}
	if p != nil {
		sch.UpdatedBy = p.UserID
	}
	sch.NextRunAt = nextRun(sch, s.now())
	return s.o.Store.SaveSchedule(ctx, sch)
}

// SetScheduleEnabled enables or disables a visible schedule.
func (s *Service) SetScheduleEnabled(ctx context.Context, p *domain.Principal, id string, on bool) (domain.Schedule, error) {
	return s.UpdateSchedule(ctx, p, id, ScheduleInput{Enabled: &on})
}

// RemoveSchedule deletes a visible schedule with its rules and history.
func (s *Service) RemoveSchedule(ctx context.Context, p *domain.Principal, id string) (domain.Schedule, error) {
	sch, err := s.GetSchedule(ctx, p, id)
	if err != nil {
		return domain.Schedule{}, err
	}
	return sch, s.o.Store.DeleteSchedule(ctx, id)
}

// RuleInput is a rule as created or changed.
type RuleInput struct {
	ScheduleID string
	Position   *int
	Type       *string
	Params     *domain.RuleParams
	Enabled    *bool
}

// DefineRule adds a rule to a schedule of a visible group.
func (s *Service) DefineRule(ctx context.Context, p *domain.Principal, groupID string, in RuleInput) (domain.Rule, error) {
	if _, err := s.visibleGroup(ctx, p, groupID); err != nil {
		return domain.Rule{}, err
	}
	sch, err := s.GetSchedule(ctx, p, in.ScheduleID)
	if err != nil || sch.GroupID != groupID {
		return domain.Rule{}, domain.Invalid("invalid_schedule", "schedule_id must name a schedule of this group")
	}
	if len(sch.Rules) >= maxRulesPerSch {
		return domain.Rule{}, domain.Invalid("too_many_rules", fmt.Sprintf("a schedule has at most %d rules", maxRulesPerSch))
	}
	r := domain.Rule{ScheduleID: sch.ID, Position: -1, Enabled: true}
	if in.Type == nil {
		return domain.Rule{}, domain.Invalid("invalid_rule_type", "type is required")
	}
	if err := s.applyRule(ctx, &r, in); err != nil {
		return domain.Rule{}, err
	}
	r, err = s.o.Store.CreateRule(ctx, r)
	if err != nil {
		return r, err
	}
	return r, s.touch(ctx, p, sch.ID)
}

// touch makes p the last editor of a schedule whose rules p changed.
func (s *Service) touch(ctx context.Context, p *domain.Principal, scheduleID string) error {
	if p == nil {
		return nil
	}
	return s.o.Store.TouchSchedule(ctx, scheduleID, p.UserID)
}

func (s *Service) applyRule(ctx context.Context, r *domain.Rule, in RuleInput) error {
	if in.Type != nil {
		r.Type = *in.Type
	}
	if in.Params != nil {
		r.Params = *in.Params
	}
	if in.Enabled != nil {
		r.Enabled = *in.Enabled
	}
	if in.Position != nil {
		if *in.Position < 0 || *in.Position > 10000 {
			return domain.Invalid("invalid_position", "position is 0 to 10000")
		}
		r.Position = *in.Position
	}
	if err := ValidRule(r); err != nil {
		return err
	}
	if r.Type == RuleCustomAction {
		if _, err := s.o.Store.GetCustomAction(ctx, r.Params.CustomActionID); err != nil {
			return domain.Invalid("invalid_custom_action", "custom_action_id names no custom action")
		}
	}
	return nil
}

// ListRules returns the visible schedules (of one group when groupID is
// set) with their rules.
func (s *Service) ListRules(ctx context.Context, p *domain.Principal, groupID string) ([]domain.Schedule, error) {
	if groupID != "" {
		if _, err := s.visibleGroup(ctx, p, groupID); err != nil {
			return nil, err
		}
	}
	return s.o.Store.ListRules(ctx, store.ScopeOf(p), groupID)
}

// UpdateRule changes a visible rule.
func (s *Service) UpdateRule(ctx context.Context, p *domain.Principal, id string, in RuleInput) (domain.Rule, error) {
	r, err := s.getRule(ctx, p, id)
	if err != nil {
		return domain.Rule{}, err
	}
	if err := s.applyRule(ctx, &r, in); err != nil {
		return domain.Rule{}, err
	}
	r, err = s.o.Store.SaveRule(ctx, r)
	if err != nil {
		return r, err
	}
	return r, s.touch(ctx, p, r.ScheduleID)
}

// SetRuleEnabled enables or disables a visible rule.
func (s *Service) SetRuleEnabled(ctx context.Context, p *domain.Principal, id string, on bool) (domain.Rule, error) {
	return s.UpdateRule(ctx, p, id, RuleInput{Enabled: &on})
}

func (s *Service) getRule(ctx context.Context, p *domain.Principal, id string) (domain.Rule, error) {
	if id == "" || len(id) > 36 {
		return domain.Rule{}, domain.NotFound("rule")
	}
	r, _, err := s.o.Store.GetRule(ctx, store.ScopeOf(p), id)
	return r, err
}

// RemoveRule deletes a visible rule.
func (s *Service) RemoveRule(ctx context.Context, p *domain.Principal, id string) (domain.Rule, error) {
	r, err := s.getRule(ctx, p, id)
	if err != nil {
		return domain.Rule{}, err
	}
	if err := s.o.Store.DeleteRule(ctx, id); err != nil {
		return r, err
	}
	return r, s.touch(ctx, p, r.ScheduleID)
}

// ScheduleApprovalVisible reports whether p may see (and so decide) an
// approval of a schedule's run: p must see the schedule's group.
func (s *Service) ScheduleApprovalVisible(ctx context.Context, p *domain.Principal, a domain.Approval) bool {
	_, err := s.GetSchedule(ctx, p, a.RefID)
	return err == nil
}

// CustomActionApprovalVisible reports whether p may see (and so decide)
// an approval of a custom action's run: every server it is bound to must
// be in p's groups.
func (s *Service) CustomActionApprovalVisible(ctx context.Context, p *domain.Principal, a domain.Approval) bool {
	ids := approvals.BoundTargets(a)
	if len(ids) == 0 {
		return p.IsAdmin()
	}
	_, missing, err := s.o.Store.BulkTargets(ctx, store.ScopeOf(p), ids, "", false)
	return err == nil && len(missing) == 0
}

// History returns a visible schedule's newest runs.
func (s *Service) History(ctx context.Context, p *domain.Principal, id string, limit int) ([]domain.ScheduleRun, error) {
	if _, err := s.GetSchedule(ctx, p, id); err != nil {
		return nil, err
	}
	if limit <= 0 || limit > 200 {
		limit = 50
	}
	return s.o.Store.ListRuns(ctx, id, limit)
}

// GroupSettings returns a visible group's priority and maintenance window.
func (s *Service) GroupSettings(ctx context.Context, p *domain.Principal, groupID string) (domain.GroupAutomation, error) {
	if _, err := s.visibleGroup(ctx, p, groupID); err != nil {
		return domain.GroupAutomation{}, err
	}
	return s.o.Store.GroupAutomation(ctx, groupID)
}

// SetGroupSettings stores a visible group's priority (1–9999, lower wins)
// and maintenance window.
func (s *Service) SetGroupSettings(ctx context.Context, p *domain.Principal, g domain.GroupAutomation) (domain.GroupAutomation, error) {
	if _, err := s.visibleGroup(ctx, p, g.GroupID); err != nil {
		return domain.GroupAutomation{}, err
	}
	if g.Priority < 1 || g.Priority > 9999 {
		return domain.GroupAutomation{}, domain.Invalid("invalid_priority", "priority is 1 to 9999 (lower wins; default 100)")
	}
	if _, err := NewWindow(g.WindowStart, g.WindowEnd, g.WindowTZ); err != nil {
		return domain.GroupAutomation{}, err
	}
	return s.o.Store.SetGroupAutomation(ctx, g)
}

var errNotLeader = errors.New("automation: run taken over by another replica")

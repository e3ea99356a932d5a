package automation

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/jobs"
	"github.com/lcmproject/lcm/internal/safe"
	"github.com/lcmproject/lcm/internal/store"
)

// Run and step statuses.
const (
	RunWaiting = "waiting"
	RunRunning = "running"
	RunSuccess = "success"
	RunFailed  = "failed"
	RunSkipped = "skipped"

	stepPending = "pending"
)

// Tick is the leader's periodic look (the registry task group_schedules):
// it starts a run for every schedule due at now, claims waiting runs
// whose window opened and runs whose owner died, and ends expired
// maintenance. Runs execute in the background; Tick returns once they are
// recorded. Several replicas may tick at once: a cron slot gets one run
// (unique slot key) and a run one owner (compare-and-set claims).
func (s *Service) Tick(ctx context.Context) error {
	if s.isStopped() {
		return nil
	}
	now := s.now()
	var errs []error
	errs = append(errs, s.endExpiredMaintenance(ctx, now))
	due, err := s.o.Store.DueSchedules(ctx, now)
	if err != nil {
		return err
	}
	for _, sch := range due {
		if err := s.fire(ctx, sch, now); err != nil {
			errs = append(errs, err)
		}
	}
	claim, err := s.o.Store.ClaimableRuns(ctx, now, now.Add(-s.o.StaleAfter))
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, r := range claim {
		ok, err := s.o.Store.ClaimRun(ctx, r, s.o.Owner, now)
		if err != nil || !ok {
			continue
		}
		if r.Status == RunRunning {
			s.o.Log.Warn("schedule run taken over from a replica that stopped", "run_id", r.ID, "from", r.Owner, "rule_index", r.RuleIndex)
		}
		s.start(r.ID)
	}
	return errors.Join(errs...)
}

// fire records the run of a due schedule's slot and advances the
// schedule. A schedule without a computed next run only gets one.
func (s *Service) fire(ctx context.Context, sch domain.Schedule, now time.Time) error {
	next := nextRun(sch, now)
	if sch.NextRunAt == nil {
		_, err := s.o.Store.AdvanceSchedule(ctx, sch.ID, nil, next)
		return err
	}
	slot := *sch.NextRunAt
	// A slot missed by more than a minute (all replicas down) is not
	// made up: its run is recorded as skipped so the history says so.
	// A cron run is requested in the name of the schedule's last editor.
	run, start := s.newRun(ctx, sch, "cron", "cron:"+slot.UTC().Format(time.RFC3339), now, s.editorOf(ctx, sch), "")
	if now.Sub(slot) > time.Minute {
		run.Status, run.Reason, start = RunSkipped, fmt.Sprintf("missed: due at %s while no replica was scheduling", slot.Format(time.RFC3339)), false
		run.FinishedAt = &now
	}
	created, err := s.o.Store.CreateRun(ctx, run)
	if err != nil {
		return err
	}
	if _, err := s.o.Store.AdvanceSchedule(ctx, sch.ID, sch.NextRunAt, next); err != nil {
		return err
	}
	if created && start {
		s.start(run.ID)
	}
	return nil
}

// editorOf is the principal a cron run of sch is requested by: the
// schedule's last editor (its creator before any edit); nil (the system)
// when neither is known.
func (s *Service) editorOf(ctx context.Context, sch domain.Schedule) *domain.Principal {
	id := sch.UpdatedBy
	if id == "" {
		id = sch.CreatedBy
	}
	if id == "" {
		return nil
	}
	p := &domain.Principal{UserID: id, Username: "(deleted user " + id + ")"}
	if u, err := s.o.Store.GetUser(ctx, id); err == nil {
		p.Username = u.Username
	}
	return p
}

// newRun builds a run of sch at now for requester, deciding on approval
// and on its windows: a schedule that requires approval runs only with an
// approval bound to the requester, the group's servers and the rules; a
// run outside the schedule's or the group's window waits for it or is
// skipped (the schedule's outside_window). onlyRule runs just that rule
// (a rule triggered now). start reports whether to run it now.
func (s *Service) newRun(ctx context.Context, sch domain.Schedule, trigger, slot string, now time.Time, requester *domain.Principal, onlyRule string) (domain.ScheduleRun, bool) {
	run := domain.ScheduleRun{ID: uuid.NewString(), ScheduleID: sch.ID, GroupID: sch.GroupID, Trigger: trigger, SlotKey: slot,
		DueAt: now, CreatedAt: now, Status: RunRunning, Owner: s.o.Owner, Heartbeat: &now}
	if requester != nil {
		run.RequestedBy = requester.UserID
	}
	rules := enabledRules(sch)
	if onlyRule != "" {
		rules = nil
		for _, r := range sch.Rules {
			if r.ID == onlyRule {
				rules = append(rules, r)
			}
		}
	}
	for _, st := range rules {
		run.Steps = append(run.Steps, domain.RunStep{RuleID: st.ID, Type: st.Type, Status: stepPending, Items: []domain.RunStepItem{}})
	}
	if sch.RequiresApproval {
		if s.o.Approvals == nil {
			run.Status, run.Reason = RunSkipped, "approval_unavailable: the schedule requires approval and no approvals service is configured"
			run.FinishedAt = &now
			return run, false
		}
		bind, err := s.scheduleBinding(ctx, sch, rules, onlyRule)
		if err == nil {
			err = s.o.Approvals.Check(ctx, ApprovalScheduleRun, sch.ID, requester, sch.Name, bind)
		}
		if err != nil {
			run.Status, run.Reason = RunSkipped, "approval: "+err.Error()
			run.FinishedAt = &now
			return run, false
		}
	}
	w, open, why := s.windowOf(sch, now)
	if open {
		return run, true
	}
	if sch.OutsideWindow == "skip" {
		run.Status, run.Reason, run.FinishedAt = RunSkipped, "outside_window: "+why, &now
		return run, false
	}
	run.Status, run.Reason, run.DueAt, run.Heartbeat, run.Owner = RunWaiting, "waiting for "+why, w, nil, ""
	return run, false
}

// windowOf reports whether now is inside both the schedule's window and
// its group's maintenance window; when not, when both are next open and
// which window is shut.
func (s *Service) windowOf(sch domain.Schedule, now time.Time) (time.Time, bool, string) {
	sw, _ := NewWindow(sch.WindowStart, sch.WindowEnd, sch.TimeZone)
	ga, err := s.o.Store.GroupAutomation(context.Background(), sch.GroupID)
	var gw Window
	if err == nil {
		gw, _ = NewWindow(ga.WindowStart, ga.WindowEnd, ga.WindowTZ)
	}
	if sw.Open(now) && gw.Open(now) {
		return now, true, ""
	}
	t := now
	for i := 0; i < 4 && !(sw.Open(t) && gw.Open(t)); i++ {
		t = gw.NextOpen(sw.NextOpen(t))
	}
	why := []string{}
	if !sw.Open(now) {
		why = append(why, "the schedule's window "+sw.String())
	}
	if !gw.Open(now) {
		why = append(why, "the group's maintenance window "+gw.String())
	}
	msg := why[0]
	if len(why) > 1 {
		msg += " and " + why[1]
	}
	return t, false, msg + fmt.Sprintf(" (opens %s)", t.Format(time.RFC3339))
}

func enabledRules(sch domain.Schedule) []domain.Rule {
	var out []domain.Rule
	for _, r := range sch.Rules {
		if r.Enabled {
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Position < out[j].Position })
	return out
}

// scheduleBinding is what an approval of a run of sch is for: the group's
// servers now and the rules that run (id, type, params, order).
func (s *Service) scheduleBinding(ctx context.Context, sch domain.Schedule, rules []domain.Rule, onlyRule string) (domain.ApprovalBinding, error) {
	all, err := s.o.Store.GroupTargets(ctx, sch.GroupID)
	if err != nil {
		return domain.ApprovalBinding{}, err
	}
	b := domain.ApprovalBinding{Targets: make([]string, len(all))}
	for i, t := range all {
		b.Targets[i] = t.ID
	}
	type ruleKey struct {
		ID     string            `json:"id"`
		Type   string            `json:"type"`
		Params domain.RuleParams `json:"params"`
	}
	keys := make([]ruleKey, len(rules))
	types := make([]string, len(rules))
	for i, r := range rules {
		keys[i], types[i] = ruleKey{ID: r.ID, Type: r.Type, Params: r.Params}, r.Type
	}
	raw, _ := json.Marshal(struct {
		Only  string    `json:"only,omitempty"`
		Rules []ruleKey `json:"rules"`
	}{onlyRule, keys})
	sum := sha256.Sum256(raw)
	b.Action = "schedule-rules:" + hex.EncodeToString(sum[:])
	b.Detail = map[string]any{"schedule": sch.Name, "group_id": sch.GroupID, "rules": types, "servers": len(b.Targets)}
	if onlyRule != "" {
		b.Detail["rule_id"] = onlyRule
	}
	return b, nil
}

// TriggerNow starts a run of a visible schedule at once, requested by p
// (its windows and its approval requirement still apply).
func (s *Service) TriggerNow(ctx context.Context, p *domain.Principal, id string) (domain.ScheduleRun, error) {
	sch, err := s.GetSchedule(ctx, p, id)
	if err != nil {
		return domain.ScheduleRun{}, err
	}
	now := s.now()
	run, start := s.newRun(ctx, sch, "manual", "manual:"+uuid.NewString(), now, p, "")
	if _, err := s.o.Store.CreateRun(ctx, run); err != nil {
		return domain.ScheduleRun{}, err
	}
	if start {
		s.start(run.ID)
	}
	return run, nil
}

// TriggerRule starts a run of one visible rule of a schedule at once,
// requested by p: the rule alone, even when it is disabled (the request
// names it), with the schedule's windows and approval requirement.
func (s *Service) TriggerRule(ctx context.Context, p *domain.Principal, ruleID string) (domain.ScheduleRun, error) {
	r, err := s.getRule(ctx, p, ruleID)
	if err != nil {
		return domain.ScheduleRun{}, err
	}
	sch, err := s.GetSchedule(ctx, p, r.ScheduleID)
	if err != nil {
		return domain.ScheduleRun{}, err
	}
	now := s.now()
	run, start := s.newRun(ctx, sch, "rule", "rule:"+uuid.NewString(), now, p, r.ID)
	if _, err := s.o.Store.CreateRun(ctx, run); err != nil {
		return domain.ScheduleRun{}, err
	}
	if start {
		s.start(run.ID)
	}
	return run, nil
}

// errStopped: the run's wait was cut short (the replica stops); the run
// stays with this owner until another replica takes it over.
var errStopped = errors.New("automation: run stopped")

// running tracks this replica's run goroutines (tests wait on them).
var running sync.WaitGroup

// WaitIdle waits until every run this process started has returned.
func WaitIdle() { running.Wait() }

func (s *Service) start(id string) {
	running.Add(1)
	go func() {
		defer running.Done()
		ctx := context.Background()
		var err error
		if safe.Do("schedule run", func() { err = s.execute(ctx, id) }) {
			err = s.failPanicked(ctx, id)
		}
		if err != nil && !errors.Is(err, errNotLeader) && !errors.Is(err, errStopped) {
			s.o.Log.Error("schedule run failed", "run_id", id, "err", err)
		}
	}()
}

// execute runs (or resumes) a run this replica owns, rule by rule.
func (s *Service) execute(ctx context.Context, id string) error {
	run, err := s.o.Store.GetRun(ctx, id)
	if err != nil {
		return err
	}
	if run.Owner != s.o.Owner || run.Status != RunRunning {
		return errNotLeader
	}
	sch, err := s.o.Store.GetSchedule(ctx, store.SystemScope, run.ScheduleID)
	if err != nil {
		return err
	}
	rules := map[string]domain.Rule{}
	for _, r := range sch.Rules {
		rules[r.ID] = r
	}
	save := func() error {
		if s.isStopped() {
			return errStopped
		}
		now := s.now()
		run.Heartbeat = &now
		ok, err := s.o.Store.SaveRun(ctx, run)
		if err == nil && !ok {
			return errNotLeader
		}
		return err
	}
	if run.StartedAt == nil {
		now := s.now()
		run.StartedAt = &now
	}
	run.Reason = ""
	if err := save(); err != nil {
		return err
	}
	failed := false
	for ; run.RuleIndex < len(run.Steps); run.RuleIndex++ {
		step := &run.Steps[run.RuleIndex]
		rule, ok := rules[step.RuleID]
		if !ok {
			step.Status, step.Reason = RunSkipped, "the rule was removed"
			continue
		}
		if err := s.runStep(ctx, sch, rule, step, run.RequestedBy, save); err != nil {
			return err
		}
		failed = failed || step.Status == RunFailed
		if err := save(); err != nil {
			return err
		}
	}
	now := s.now()
	run.FinishedAt = &now
	run.Status = RunSuccess
	if failed {
		run.Status = RunFailed
	}
	return save()
}

// ruleJob is the job kind and params of a rule; "" kind: no job.
func (s *Service) ruleJob(ctx context.Context, r domain.Rule) (domain.JobKind, any, error) {
	switch r.Type {
	case RuleSecurityUpdates:
		return domain.JobUpgradeSecurity, nil, nil
	case RuleAllUpdates:
		return domain.JobPackageAction, actions.PackageParams{Action: actions.PkgUpgradeAll}, nil
	case RulePackages:
		return domain.JobPackageAction, actions.PackageParams{Action: actions.PkgUpdate, Names: r.Params.Packages}, nil
	case RuleRefresh:
		return domain.JobRefresh, nil, nil
	case RuleReboot, RuleRebootIfRequired:
		return domain.JobReboot, nil, nil
	case RuleHealthCheck:
		return domain.JobConnectivity, nil, nil
	case RuleScript:
		return domain.JobScript, actions.ScriptParams{Script: r.Params.Script}, nil
	case RuleCustomAction:
		a, err := s.o.Store.GetCustomAction(ctx, r.Params.CustomActionID)
		if err != nil {
			return "", nil, fmt.Errorf("not_found: the custom action of this rule no longer exists")
		}
		return domain.JobCustomAction, actions.CustomParams{ActionID: a.ID, Name: a.Name, Commands: a.Commands}, nil
	case RuleContainerPrune:
		// Stopped containers, dangling images and the build cache, on every
		// engine the server has; the job reports what it freed.
		return domain.JobContainer, actions.ContainerParams{Op: actions.ContainerPrune,
			Prune: &actions.PruneSpec{Containers: true, Images: true, BuildCache: true}}, nil
	case RuleImageUpdates:
		// Pull every image in use (the newer-image check then shows which
		// containers run an older digest); containers are not restarted.
		return domain.JobContainer, actions.ContainerParams{Op: actions.ContainerPullAll}, nil
	}
	return "", nil, fmt.Errorf("unknown rule type %q", r.Type)
}

// runStep runs one rule over the group's servers and waits for its jobs.
func (s *Service) runStep(ctx context.Context, sch domain.Schedule, rule domain.Rule, step *domain.RunStep, by string, save func() error) error {
	if step.Status == RunSuccess || step.Status == RunFailed || step.Status == RunSkipped {
		return nil
	}
	targets, items, err := s.targets(ctx, sch, rule)
	if err != nil {
		return err
	}
	if rule.Type == RuleVulnScan {
		if s.o.Scan == nil {
			step.Status, step.Reason = RunFailed, "not_available: no vulnerability scanner is configured"
			return nil
		}
		ids := make([]string, len(targets))
		for i, t := range targets {
			ids[i] = t.ID
		}
		s.o.Scan(ctx, ids)
		step.Items, step.Status = items, RunSuccess
		for _, t := range targets {
			step.Items = append(step.Items, domain.RunStepItem{ServerID: t.ID, ServerName: t.Name, Status: "scanned"})
		}
		return nil
	}
	kind, params, err := s.ruleJob(ctx, rule)
	if err != nil {
		step.Status, step.Reason, step.Items = RunFailed, err.Error(), items
		return nil
	}
	if step.BulkID == "" {
		step.BulkID = uuid.NewString()
		step.Status = RunRunning
		if err := save(); err != nil { // the bulk id is stored before any job exists
			return err
		}
	}
	bulk, err := s.o.Store.GetBulkRun(ctx, store.SystemScope, "", step.BulkID)
	switch {
	case errors.Is(err, domain.ErrNotFound):
		var list []jobs.BulkJob
		for _, t := range targets {
			list = append(list, jobs.BulkJob{Target: t.BulkTarget, Kind: kind, Params: params})
		}
		if by == "" {
			by = sch.CreatedBy
		}
		br := domain.BulkRun{ID: step.BulkID, Action: "schedule:" + rule.Type, Kind: kind, Target: domain.BulkTargetGroup,
			GroupID: sch.GroupID, CreatedBy: by}
		if len(list) == 0 {
			step.Items, step.Status = items, RunSuccess
			if len(items) > 0 {
				step.Status, step.Reason = RunSkipped, "no server of the group was eligible"
			}
			return nil
		}
		if bulk, err = s.o.Jobs.SubmitBulk(ctx, br, list, nil); err != nil {
			step.Status, step.Reason = RunFailed, err.Error()
			return nil
		}
	case err != nil:
		return err
	}
	// Wait for the jobs, beating.
	for {
		b, err := s.o.Store.GetBulkRun(ctx, store.SystemScope, "", step.BulkID)
		if err != nil {
			return err
		}
		bulk = b
		step.Items = append([]domain.RunStepItem(nil), items...)
		done, failed := true, false
		for _, it := range bulk.Items {
			ri := domain.RunStepItem{ServerID: it.ServerID, ServerName: it.ServerName, JobID: it.JobID, Status: string(it.Status),
				Skipped: it.Refused, Reason: it.Reason}
			step.Items = append(step.Items, ri)
			switch {
			case it.Refused != "":
				failed = true
			case !it.Status.Terminal():
				done = false
			case it.Status != domain.JobSuccess:
				failed = true
			}
		}
		if done {
			step.Status = RunSuccess
			if failed {
				step.Status = RunFailed
			}
			return nil
		}
		if err := save(); err != nil {
			return err
		}
		if !s.o.Wait(ctx) {
			return errStopped
		}
	}
}

// target is a server a step runs on.
type target = store.AutomationTarget

// targets returns the servers a rule runs on and the items of those it
// skips (maintenance, not joined, restricted mode, superseded by another
// group's rule, no reboot required).
func (s *Service) targets(ctx context.Context, sch domain.Schedule, rule domain.Rule) ([]target, []domain.RunStepItem, error) {
	all, err := s.o.Store.GroupTargets(ctx, sch.GroupID)
	if err != nil {
		return nil, nil, err
	}
	ids := make([]string, len(all))
	for i, t := range all {
		ids[i] = t.ID
	}
	maint, err := s.o.Store.InMaintenance(ctx, ids, s.now())
	if err != nil {
		return nil, nil, err
	}
	sup, err := s.superseded(ctx, sch.GroupID, rule.Type, ids)
	if err != nil {
		return nil, nil, err
	}
	var out []target
	var items []domain.RunStepItem
	skip := func(t target, code, why string) {
		items = append(items, domain.RunStepItem{ServerID: t.ID, ServerName: t.Name, Skipped: code, Reason: why})
	}
	for _, t := range all {
		kind, _, _ := s.ruleJob(ctx, rule)
		switch {
		case maint[t.ID]:
			skip(t, "maintenance", "the server is in maintenance mode")
		case !t.Joined:
			skip(t, "not_joined", "the server has not joined")
		case sup[t.ID] != "":
			skip(t, "superseded", sup[t.ID])
		case t.SudoMode == string(domain.SudoRestricted) && kind != "" && domain.BlockedInRestrictedMode(kind):
			skip(t, "restricted_mode", fmt.Sprintf("%s is blocked: the management user's sudo is restricted on this server", rule.Type))
		case rule.Type == RuleRebootIfRequired && !t.RebootRequired:
			skip(t, "not_required", "no reboot required")
		default:
			out = append(out, t)
		}
	}
	return out, items, nil
}

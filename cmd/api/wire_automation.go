package main

import (
	"context"

	"github.com/lcmproject/lcm/internal/approvals"
	"github.com/lcmproject/lcm/internal/automation"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/jobs"
	"github.com/lcmproject/lcm/internal/vulnsvc"
)

// newAutomation builds the automation service (issue 20): group schedules
// fire from the scheduler's group_schedules task, so only the leader
// replica starts runs; runs survive a leader change (a dead owner's run
// is taken over). Vulnerability-scan rules rescan through vulnsvc. A
// schedule or custom action that requires approval passes the approvals
// gate: one approval by a second person lets one run through, of the same
// requester on the same servers with the same action.
func (a *app) newAutomation(js *jobs.Service, vuln *vulnsvc.Service) *automation.Service {
	opts := automation.Options{Store: a.store, Jobs: js, Log: a.log}
	if a.approvals != nil {
		opts.Approvals = a.approvals
	}
	svc := automation.New(opts)
	if a.approvals != nil {
		// Approvers see (and decide) only approvals of their groups: a
		// schedule of a visible group, a run on visible servers only.
		a.approvals.Register(automation.ApprovalScheduleRun, approvals.Kind{Permission: domain.PermRulesManage, Visible: svc.ScheduleApprovalVisible})
		a.approvals.Register(automation.ApprovalCustomActionRun, approvals.Kind{Permission: domain.PermRulesManage, Visible: svc.CustomActionApprovalVisible})
	}
	if vuln != nil {
		svc.SetScan(func(ctx context.Context, ids []string) { vuln.Rescan(ctx, ids) })
	}
	return svc
}

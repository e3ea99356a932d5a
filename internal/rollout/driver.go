package rollout

import (
	"context"
	"fmt"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/jobs"
	"github.com/lcmproject/lcm/internal/store"
)

// Run drives rollouts while this replica holds the lease (or always,
// without one) until ctx ends; it releases the lease on the way out.
func (s *Service) Run(ctx context.Context) error {
	tick := time.NewTicker(s.o.Tick)
	defer tick.Stop()
	leader := s.o.Lease == nil
	renewEvery := 5 * time.Second
	var lastRenew time.Time
	defer func() {
		if s.o.Lease != nil {
			rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = s.o.Lease.Release(rctx)
		}
	}()
	for {
		if s.o.Lease != nil && time.Since(lastRenew) >= min(renewEvery, s.o.Tick) {
			var ok bool
			var err error
			if leader {
				ok, err = s.o.Lease.Renew(ctx)
			} else {
				ok, err = s.o.Lease.Acquire(ctx)
			}
			if err != nil && ctx.Err() == nil {
				s.log.Warn("rollout lease", "err", err)
			}
			if ok != leader {
				s.log.Info("rollout driver leadership changed", "leader", ok)
			}
			leader, lastRenew = ok, time.Now()
		}
		if leader {
			s.StepAll(ctx)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-s.poke:
		}
	}
}

// StepAll advances every rollout that needs the driver: running ones, and
// stopped ones whose jobs are still in flight (their items are
// reconciled until final).
func (s *Service) StepAll(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids, err := s.store.RolloutsToDrive(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("rollouts: list", "err", err)
		}
		return
	}
	for _, id := range ids {
		if ctx.Err() != nil {
			return
		}
		if err := s.step(ctx, id); err != nil && ctx.Err() == nil {
			s.log.Warn("rollout step", "rollout_id", id, "err", err)
		}
	}
}

// step advances one rollout.
func (s *Service) step(ctx context.Context, id string) error {
	ro, err := s.store.RolloutState(ctx, id)
	if err != nil {
		return err
	}
	act, err := s.action(ctx, ro.Action, ro.ActionParams)
	if err != nil {
		reason := fmt.Sprintf("action %q is not available: %v", ro.Action, err)
		_, err := s.store.UpdateRollout(ctx, id, []string{domain.RolloutRunning}, store.RolloutUpdate{Status: ptr(domain.RolloutHalted), Reason: &reason, Finished: true}, s.now())
		return err
	}
	// 1. Reconcile items in flight with their jobs.
	var ups []store.RolloutItemUpdate
	var needRefresh []int
	for i := range ro.Items {
		it := &ro.Items[i]
		if (it.State != domain.ItemRunning && it.State != domain.ItemRefreshing) || !it.JobStatus.Terminal() {
			continue
		}
		switch {
		case it.JobStatus == domain.JobSuccess && it.State == domain.ItemRunning && act.Reboots:
			needRefresh = append(needRefresh, i)
		case it.JobStatus == domain.JobSuccess:
			it.State = domain.ItemSuccess
			ups = append(ups, store.RolloutItemUpdate{ServerID: it.ServerID, State: it.State})
		default:
			what := "job"
			if it.State == domain.ItemRefreshing {
				what = "refresh after the reboot"
			}
			it.State = domain.ItemFailed
			ups = append(ups, store.RolloutItemUpdate{ServerID: it.ServerID, State: it.State, Reason: ptr(fmt.Sprintf("%s %s", what, it.JobStatus))})
		}
	}
	if len(needRefresh) > 0 && ro.Status != domain.RolloutAborted {
		// A rebooted server is back once its reboot job succeeded (the job
		// waits for SSH); a refresh proves it works before the next batch.
		ups = append(ups, s.submitRefresh(ctx, ro, needRefresh)...)
	} else {
		for _, i := range needRefresh {
			ro.Items[i].State = domain.ItemSuccess
			ups = append(ups, store.RolloutItemUpdate{ServerID: ro.Items[i].ServerID, State: domain.ItemSuccess})
		}
	}
	if err := s.store.UpdateRolloutItems(ctx, id, ups); err != nil {
		return err
	}
	if ro.Status != domain.RolloutRunning {
		return nil
	}
	// 2. The failure threshold.
	if reason := s.threshold(ro); reason != "" {
		// One transaction: a reader never sees the rollout halted with
		// servers still pending.
		var ok bool
		err := s.store.InTx(ctx, func(tx *store.Store) error {
			var err error
			if ok, err = tx.UpdateRollout(ctx, id, []string{domain.RolloutRunning}, store.RolloutUpdate{Status: ptr(domain.RolloutHalted), Reason: &reason, Finished: true}, s.now()); err != nil || !ok {
				return err
			}
			return tx.AbortRolloutPending(ctx, id, "not started: the rollout halted")
		})
		if err != nil || !ok {
			return err
		}
		s.log.Warn("rollout halted", "rollout_id", id, "reason", reason)
		s.auditSystem(ctx, "rollouts.halt", id, map[string]any{"reason": reason, "failures": ro.Failures()})
		return nil
	}
	// 3. The current batch: start what its concurrency allows, or move on
	// when every server of it is final.
	now := s.now()
	for ro.CurrentBatch < ro.Batches {
		b := ro.CurrentBatch
		var pending []int
		inflight, final, total := 0, 0, 0
		for i, it := range ro.Items {
			if it.Batch != b {
				continue
			}
			total++
			switch {
			case it.State == domain.ItemPending:
				pending = append(pending, i)
			case domain.RolloutItemFinal(it.State):
				final++
			default:
				inflight++
			}
		}
		if final == total {
			next := b + 1
			nextAt := now.Add(time.Duration(ro.PauseSeconds) * time.Second)
			u := store.RolloutUpdate{CurrentBatch: &next, NextAt: &nextAt}
			if next >= ro.Batches {
				u.Status, u.Finished = ptr(domain.RolloutCompleted), true
			}
			if ok, err := s.store.UpdateRollout(ctx, id, []string{domain.RolloutRunning}, u, now); err != nil || !ok {
				return err
			}
			ro.CurrentBatch, ro.NextAt = next, nextAt
			if next >= ro.Batches {
				s.log.Info("rollout completed", "rollout_id", id)
				s.auditSystem(ctx, "rollouts.complete", id, map[string]any{"counts": ro.Counts()})
				return nil
			}
			if ro.PauseSeconds > 0 {
				return nil
			}
			continue
		}
		if len(pending) == 0 || now.Before(ro.NextAt) {
			return nil
		}
		n := len(pending)
		if ro.Concurrency > 0 {
			n = min(n, ro.Concurrency-inflight)
		}
		if n <= 0 {
			return nil
		}
		return s.submit(ctx, ro, act, pending[:n])
	}
	return nil
}

// threshold says why the rollout must halt ("" = it goes on).
func (s *Service) threshold(ro domain.Rollout) string {
	failed, canaryFailed := 0, 0
	for _, it := range ro.Items {
		if domain.RolloutItemFailed(it.State) {
			failed++
			if ro.CanarySize > 0 && it.Batch == 0 {
				canaryFailed++
			}
		}
	}
	switch {
	case canaryFailed > 0:
		return fmt.Sprintf("%d server(s) of the canary batch failed", canaryFailed)
	case ro.MaxFailurePercent > 0 && failed*100 >= ro.MaxFailurePercent*len(ro.Items):
		return fmt.Sprintf("%d of %d servers failed, reaching the threshold of %d%%", failed, len(ro.Items), ro.MaxFailurePercent)
	case ro.MaxFailurePercent == 0 && failed >= max(1, ro.MaxFailures):
		return fmt.Sprintf("%d server(s) failed, reaching the threshold of %d", failed, max(1, ro.MaxFailures))
	}
	return ""
}

// submit starts the action on the given pending items as one bulk run.
func (s *Service) submit(ctx context.Context, ro domain.Rollout, act Action, idx []int) error {
	ids := make([]string, len(idx))
	for i, k := range idx {
		ids[i] = ro.Items[k].ServerID
	}
	targets, _, err := s.store.RolloutTargets(ctx, store.SystemScope, ids, "", false)
	if err != nil {
		return err
	}
	maint, err := s.store.InMaintenance(ctx, ids, s.now())
	if err != nil {
		return err
	}
	found := map[string]bool{}
	var list []jobs.BulkJob
	var ups []store.RolloutItemUpdate
	for _, t := range targets {
		found[t.ID] = true
		if why := s.skipReason(act, t, maint[t.ID]); why != "" {
			state := domain.ItemRefused
			if maint[t.ID] || act.Skip != nil && act.Skip(t) != "" {
				state = domain.ItemSkipped
			}
			ups = append(ups, store.RolloutItemUpdate{ServerID: t.ID, State: state, Reason: &why})
			continue
		}
		if act.Blocked {
			srv, err := s.store.GetServer(ctx, store.SystemScope, t.ID)
			if err == nil && srv.Hardening.SudoMode == domain.SudoRestricted {
				ups = append(ups, store.RolloutItemUpdate{ServerID: t.ID, State: domain.ItemRefused,
					Reason: ptr("restricted_mode: the management user's sudo is restricted on this server")})
				continue
			}
		}
		list = append(list, jobs.BulkJob{Target: t.BulkTarget, Kind: act.Kind, Params: act.Params})
	}
	for _, id := range ids {
		if !found[id] {
			ups = append(ups, store.RolloutItemUpdate{ServerID: id, State: domain.ItemRefused, Reason: ptr("the server no longer exists")})
		}
	}
	if len(list) > 0 {
		run, err := s.jobs.SubmitBulk(ctx, domain.BulkRun{Action: "rollout:" + ro.Action, Kind: act.Kind,
			Target: domain.BulkTargetServers, CreatedBy: ro.CreatedBy}, list, nil)
		for _, it := range run.Items {
			if it.JobID != "" {
				ups = append(ups, store.RolloutItemUpdate{ServerID: it.ServerID, State: domain.ItemRunning, JobID: ptr(it.JobID)})
			} else {
				ups = append(ups, store.RolloutItemUpdate{ServerID: it.ServerID, State: domain.ItemRefused, Reason: ptr(it.Refused + ": " + it.Reason)})
			}
		}
		if err != nil && len(run.Items) == 0 {
			if uerr := s.store.UpdateRolloutItems(ctx, ro.ID, ups); uerr != nil {
				return uerr
			}
			return err // the bus is down: the next step tries again
		}
	}
	return s.store.UpdateRolloutItems(ctx, ro.ID, ups)
}

// submitRefresh starts a refresh on rebooted servers.
func (s *Service) submitRefresh(ctx context.Context, ro domain.Rollout, idx []int) []store.RolloutItemUpdate {
	ids := make([]string, len(idx))
	for i, k := range idx {
		ids[i] = ro.Items[k].ServerID
	}
	var ups []store.RolloutItemUpdate
	targets, _, err := s.store.BulkTargets(ctx, store.SystemScope, ids, "", false)
	if err != nil {
		return nil // next step
	}
	list := make([]jobs.BulkJob, len(targets))
	for i, t := range targets {
		list[i] = jobs.BulkJob{Target: t, Kind: domain.JobRefresh}
	}
	run, err := s.jobs.SubmitBulk(ctx, domain.BulkRun{Action: "rollout:refresh", Kind: domain.JobRefresh,
		Target: domain.BulkTargetServers, CreatedBy: ro.CreatedBy}, list, nil)
	if err != nil && len(run.Items) == 0 {
		return nil // next step
	}
	for _, it := range run.Items {
		if it.JobID != "" {
			ups = append(ups, store.RolloutItemUpdate{ServerID: it.ServerID, State: domain.ItemRefreshing, RefreshJobID: ptr(it.JobID)})
		} else {
			ups = append(ups, store.RolloutItemUpdate{ServerID: it.ServerID, State: domain.ItemFailed, Reason: ptr("refresh after the reboot refused: " + it.Reason)})
		}
	}
	return ups
}

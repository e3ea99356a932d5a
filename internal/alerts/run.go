package alerts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/lcmproject/lcm/internal/notify"
	"github.com/lcmproject/lcm/internal/safe"
	"github.com/lcmproject/lcm/internal/store"
)

// Report summarises one evaluation.
type Report struct {
	Rules      int       `json:"rules"`
	Servers    int       `json:"servers"`
	Fired      int       `json:"fired"`
	Repeated   int       `json:"repeated"`
	Resolved   int       `json:"resolved"`
	Open       int       `json:"open"`
	Notes      []string  `json:"notes"`
	StartedAt  time.Time `json:"startedAt"`
	DurationMS int64     `json:"durationMs"`
}

// forecastDays is how much storage history the forecast rule loads (the
// forecast fits the last 30 days, inventory.ForecastWindow).
const forecastDays = 30

// Snapshot loads what the enabled rules read: each server's status inputs
// and groups, the root filesystem history when a forecast rule needs it,
// and the fleet-wide facts.
func (s *Service) Snapshot(ctx context.Context, rules []Rule) (Snapshot, []string, error) {
	now := s.now()
	snap := Snapshot{Now: now}
	var notes []string
	needServers, needStorage, needFleet, needEarly := false, false, false, false
	for _, r := range rules {
		if !r.Enabled {
			continue
		}
		needServers = needServers || !r.FleetWide()
		needStorage = needStorage || r.Type == TypeStorageForecast
		needEarly = needEarly || r.Type == TypeEarlyWarning
		needFleet = needFleet || r.FleetWide()
	}
	if needServers {
		ids, err := s.store.ServerIDs(ctx, false)
		if err != nil {
			return snap, nil, err
		}
		inputs, err := s.store.LoadStatusInputsMany(ctx, ids)
		if err != nil {
			return snap, nil, err
		}
		groups, err := s.store.GroupServerIDs(ctx)
		if err != nil {
			return snap, nil, err
		}
		if snap.Paused, err = s.store.InMaintenance(ctx, ids, now); err != nil {
			return snap, nil, err
		}
		var days map[string][]store.StorageDay
		if needStorage {
			since := now.AddDate(0, 0, -forecastDays).Format("2006-01-02")
			if days, err = s.store.RootStorageDays(ctx, ids, since); err != nil {
				return snap, nil, err
			}
		}
		var early map[string][]store.EarlyWarning
		if needEarly {
			if early, err = s.store.OpenEarlyWarnings(ctx); err != nil {
				return snap, nil, err
			}
		}
		snap.Servers = make([]ServerState, 0, len(ids))
		for _, id := range ids {
			in, ok := inputs[id]
			if !ok || snap.Paused[id] {
				continue
			}
			snap.Servers = append(snap.Servers, ServerState{ID: id, Groups: groups[id], Inputs: in, RootDays: days[id], EarlyWarnings: early[id]})
		}
	}
	if needFleet {
		if s.o.Fleet == nil {
			notes = append(notes, "no source reports the vulnerability database age or the last system backup yet; those rules cannot fire")
		} else {
			f, err := s.o.Fleet(ctx)
			if err != nil {
				return snap, nil, fmt.Errorf("alerts: fleet facts: %w", err)
			}
			snap.Fleet = f
			if !f.VulnDBKnown {
				notes = append(notes, "the vulnerability database age is unknown; vuln_db_outdated rules cannot fire")
			}
			if !f.BackupKnown {
				notes = append(notes, "the last system backup is unknown; backup_overdue rules cannot fire")
			}
		}
	}
	return snap, notes, nil
}

// Evaluate runs every rule now and reconciles the open alerts: new
// conditions fire, conditions still true past the cooldown repeat, cleared
// ones resolve. Notifications leave asynchronously. It also resumes
// deliveries a stopped replica left pending.
func (s *Service) Evaluate(ctx context.Context) (Report, error) {
	s.evalMu.Lock()
	defer s.evalMu.Unlock()
	start := time.Now()
	rep := Report{StartedAt: s.now(), Notes: []string{}}
	rows, err := s.store.ListAlertRules(ctx)
	if err != nil {
		return rep, err
	}
	rules := make([]Rule, 0, len(rows))
	for _, row := range rows {
		r, err := ruleOf(row)
		if err != nil {
			return rep, err
		}
		rules = append(rules, r)
	}
	snap, notes, err := s.Snapshot(ctx, rules)
	if err != nil {
		return rep, err
	}
	rep.Notes = append(rep.Notes, notes...)
	rep.Rules, rep.Servers = len(rules), len(snap.Servers)
	firing := Evaluate(rules, snap)
	open, err := s.store.OpenAlerts(ctx)
	if err != nil {
		return rep, err
	}
	chans, err := s.store.ListChannels(ctx)
	if err != nil {
		return rep, err
	}
	byID := map[string]store.NotificationChannel{}
	for _, c := range chans {
		byID[c.ID] = c
	}
	type change struct {
		rule    Rule
		subject string
		kind    string
		msg     string
		prev    time.Time
	}
	var changes []change
	for _, r := range rules {
		f := firing[r.ID] // nil for a disabled rule: everything open resolves
		for subj, msg := range f {
			o, isOpen := open[r.ID][subj]
			switch {
			case !isOpen:
				changes = append(changes, change{r, subj, store.AlertFiring, msg, time.Time{}})
			case snap.Now.Sub(o.LastNotifiedAt) >= r.Cooldown():
				changes = append(changes, change{r, subj, store.AlertRepeat, msg, o.LastNotifiedAt})
			}
		}
		for subj, o := range open[r.ID] {
			if snap.Paused[subj] && r.Enabled {
				rep.Open++ // in maintenance: stays open, silent
				continue
			}
			if _, still := f[subj]; !still {
				changes = append(changes, change{r, subj, store.AlertResolved, "Resolved: " + o.Message, o.LastNotifiedAt})
			}
		}
		rep.Open += len(f)
	}
	var subjects []string
	for _, c := range changes {
		if c.subject != FleetSubject {
			subjects = append(subjects, c.subject)
		}
	}
	names := map[string]string{}
	if len(subjects) > 0 {
		if names, err = s.store.ServerNames(ctx, subjects); err != nil {
			return rep, err
		}
	}
	// One transaction per batch: a first evaluation that opens thousands
	// of alerts stays within the budget, and a batch is short enough not to
	// hold the database long.
	const batch = 500
	for lo := 0; lo < len(changes); lo += batch {
		ts := make([]store.Transition, 0, batch)
		for _, c := range changes[lo:min(lo+batch, len(changes))] {
			var targets []store.NotificationChannel
			for _, id := range c.rule.ChannelIDs {
				if ch, ok := byID[id]; ok && ch.Enabled {
					targets = append(targets, ch)
				}
			}
			name := names[c.subject]
			if c.subject == FleetSubject {
				name = ""
			}
			ts = append(ts, store.Transition{Event: store.AlertEvent{RuleID: c.rule.ID, RuleName: c.rule.Name, RuleType: c.rule.Type,
				Subject: c.subject, ServerName: name, Kind: c.kind, Severity: c.rule.Severity, Message: c.msg, CreatedAt: snap.Now},
				PrevNotified: c.prev, Channels: targets})
		}
		made, err := s.store.RecordTransitions(ctx, ts)
		if err != nil {
			return rep, err
		}
		for _, ev := range made {
			switch ev.Kind {
			case store.AlertFiring:
				rep.Fired++
			case store.AlertRepeat:
				rep.Repeated++
			case store.AlertResolved:
				rep.Resolved++
			}
			s.log.Info("alert "+ev.Kind, "rule", ev.RuleName, "server_id", ev.Subject, "event_id", ev.ID, "channels", len(ev.Deliveries))
			for _, d := range ev.Deliveries {
				s.dispatch(d, ev)
			}
		}
	}
	s.resumeStale(ctx)
	rep.DurationMS = time.Since(start).Milliseconds()
	return rep, nil
}

// staleAfter: a delivery whose next attempt is this overdue belongs to a
// replica that stopped; a live one updates next_attempt_at on every try.
const staleAfter = 2 * time.Minute

func (s *Service) resumeStale(ctx context.Context) {
	now := s.now()
	ds, err := s.store.ClaimStaleDeliveries(ctx, now.Add(-staleAfter), now.Add(staleAfter), s.inFlight)
	if err != nil {
		s.log.Warn("resuming stale alert deliveries failed", "err", err)
		return
	}
	for _, d := range ds {
		ev, err := s.store.GetAlertEvent(ctx, d.EventID)
		if err != nil {
			s.log.Warn("alert delivery without its event", "delivery", d.ID, "err", err)
			continue
		}
		s.dispatch(d, ev)
	}
}

func messageOf(ev store.AlertEvent) notify.Message {
	m := notify.Message{Kind: ev.Kind, EventID: ev.ID, RuleID: ev.RuleID, RuleName: ev.RuleName, RuleType: ev.RuleType,
		Severity: ev.Severity, Server: ev.ServerName, Text: ev.Message, CreatedAt: ev.CreatedAt}
	if ev.Subject != FleetSubject {
		m.ServerID = ev.Subject
	}
	return m
}

func (s *Service) sem(channelID string) chan struct{} {
	s.semMu.Lock()
	defer s.semMu.Unlock()
	c := s.sems[channelID]
	if c == nil {
		c = make(chan struct{}, perChannel)
		s.sems[channelID] = c
	}
	return c
}

// dispatch delivers d in its own goroutine: attempt, then on failure wait
// the next backoff and try again, until sent or given up. Every attempt's
// outcome is stored. The channel is read before each attempt (an edit
// applies, a deleted channel gives up).
func (s *Service) dispatch(d store.AlertDelivery, ev store.AlertEvent) {
	s.flightMu.Lock()
	if s.flight[d.ID] {
		s.flightMu.Unlock()
		return
	}
	s.flight[d.ID] = true
	s.flightMu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() {
			s.flightMu.Lock()
			delete(s.flight, d.ID)
			s.flightMu.Unlock()
		}()
		// A panic ends this delivery's goroutine (counted); its stored
		// state lets the next sweep resume it.
		defer safe.Recover("alert delivery")
		m := messageOf(ev)
		for {
			ctx := s.ctx
			if !s.acquire(ctx, s.sem(d.ChannelID), &d) {
				return
			}
			s.lease(&d) // the attempt is ours for staleAfter; it takes at most a send timeout
			answer, err := s.attempt(ctx, d.ChannelID, m)
			sem := s.sem(d.ChannelID)
			<-sem
			if ctx.Err() != nil {
				return // shutting down: the stored state lets a replica resume
			}
			d.Attempts++
			d.Response = answer
			if err == nil {
				d.Status, d.LastError, d.NextAttemptAt = store.DeliverySent, "", nil
				s.saveDelivery(d)
				return
			}
			d.LastError = err.Error()
			if d.Attempts > len(s.o.Backoff) || errors.Is(err, errChannelGone) {
				d.Status, d.NextAttemptAt = store.DeliveryGivenUp, nil
				s.log.Warn("alert delivery given up", "channel", d.ChannelName, "event_id", d.EventID, "attempts", d.Attempts, "err", d.LastError)
				s.saveDelivery(d)
				return
			}
			wait := s.o.Backoff[d.Attempts-1]
			next := s.now().Add(wait)
			d.Status, d.NextAttemptAt = store.DeliveryRetrying, &next
			s.log.Info("alert delivery failed, retrying", "channel", d.ChannelName, "event_id", d.EventID, "attempt", d.Attempts, "in", wait.String(), "err", d.LastError)
			s.saveDelivery(d)
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return
			}
		}
	}()
}

var errChannelGone = errors.New("the channel was deleted or disabled")

func (s *Service) inFlight(id string) bool {
	s.flightMu.Lock()
	defer s.flightMu.Unlock()
	return s.flight[id]
}

// lease moves the delivery's next attempt staleAfter ahead, so no other
// replica resumes it while this one works on it or waits for a slot.
func (s *Service) lease(d *store.AlertDelivery) {
	until := s.now().Add(staleAfter)
	d.NextAttemptAt = &until
	s.saveDelivery(*d)
}

// acquire waits for a delivery slot of the channel, renewing the lease
// while it waits (a slow receiver can hold every slot for long).
func (s *Service) acquire(ctx context.Context, sem chan struct{}, d *store.AlertDelivery) bool {
	for {
		select {
		case sem <- struct{}{}:
			return true
		case <-ctx.Done():
			return false
		case <-time.After(staleAfter / 2):
			s.lease(d)
		}
	}
}

func (s *Service) attempt(ctx context.Context, channelID string, m notify.Message) (string, error) {
	c, err := s.store.GetChannel(ctx, channelID)
	if err != nil {
		return "", errChannelGone
	}
	if !c.Enabled {
		return "", errChannelGone
	}
	d, err := decode(c)
	if err != nil {
		return "", err
	}
	res, err := notify.Send(ctx, c.Type, d.cfg, d.sec, m)
	if err != nil {
		return scrub(res.Answer, d.sec), errors.New(scrub(err.Error(), d.sec))
	}
	return scrub(res.Answer, d.sec), nil
}

func (s *Service) saveDelivery(d store.AlertDelivery) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.store.UpdateDelivery(ctx, d); err != nil {
		s.log.Warn("storing an alert delivery failed", "delivery", d.ID, "err", err)
	}
}

// MarshalParams is the stored form of rule parameters.
func MarshalParams(p Params) []byte { b, _ := json.Marshal(p); return b }

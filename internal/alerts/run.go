package alerts

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/lcmproject/lcm/internal/inventory"
	"github.com/lcmproject/lcm/internal/notify"
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
		// The reads are independent: the storage trends (the largest, on a
		// cold cache) load beside the status inputs, on another core and
		// another database connection.
		var (
			inputs   map[string]store.StatusInputs
			groups   map[string][]string
			trends   map[string]store.StorageTrend
			early    map[string][]store.EarlyWarning
			trendErr error
			wg       sync.WaitGroup
		)
		if needStorage {
			wg.Add(1)
			go func() {
				defer wg.Done()
				trends, trendErr = s.rootTrends(ctx, ids, now)
			}()
		}
		err = func() error {
			var err error
			if inputs, err = s.store.LoadStatusInputsMany(ctx, ids); err != nil {
				return err
			}
			if groups, err = s.store.GroupServerIDs(ctx); err != nil {
				return err
			}
			if snap.Paused, err = s.store.InMaintenance(ctx, ids, now); err != nil {
				return err
			}
			if needEarly {
				early, err = s.store.OpenEarlyWarnings(ctx)
			}
			return err
		}()
		wg.Wait()
		if err == nil {
			err = trendErr
		}
		if err != nil {
			return snap, nil, err
		}
		snap.Servers = make([]ServerState, 0, len(ids))
		for _, id := range ids {
			in, ok := inputs[id]
			if !ok || snap.Paused[id] {
				continue
			}
			st := ServerState{ID: id, Groups: groups[id], Inputs: in, EarlyWarnings: early[id]}
			if t, ok := trends[id]; ok {
				fc := inventory.ForecastFromSums(inventory.TrendSums{N: t.N, SX: t.SX, SY: t.SY, SXY: t.SXY, SXX: t.SXX}, t.LastUsed, t.LastTotal)
				st.Root = &fc
			}
			snap.Servers = append(snap.Servers, st)
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

// rootTrends returns the storage trend sums of "/" over the last
// ForecastWindow days (today included) for ids. Daily aggregates change
// only when the daily aggregation (or a direct replace) writes them, which
// moves store.GenStorageDaily in the same transaction; while the
// generation and the window's first day are unchanged, the sums of the
// last load stay valid, and only servers not loaded yet are read.
func (s *Service) rootTrends(ctx context.Context, ids []string, now time.Time) (map[string]store.StorageTrend, error) {
	since := now.UTC().AddDate(0, 0, 1-inventory.ForecastWindow).Format("2006-01-02")
	gen, err := s.store.Generation(ctx, store.GenStorageDaily)
	if err != nil {
		return nil, err
	}
	s.trendMu.Lock()
	defer s.trendMu.Unlock()
	c := &s.trends
	if c.gen != gen || c.since != since || c.loaded == nil {
		c.gen, c.since, c.trends, c.loaded = gen, since, map[string]store.StorageTrend{}, map[string]bool{}
	}
	var missing []string
	for _, id := range ids {
		if !c.loaded[id] {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		got, err := s.store.RootStorageTrends(ctx, missing, since)
		if err != nil {
			return nil, err
		}
		for _, id := range missing {
			c.loaded[id] = true
			if t, ok := got[id]; ok {
				c.trends[id] = t
			}
		}
	}
	return maps.Clone(c.trends), nil // the caller reads it after the lock is released
}

// trendCache holds the storage trend sums of the last load (rootTrends).
type trendCache struct {
	gen    int64
	since  string
	trends map[string]store.StorageTrend
	loaded map[string]bool // servers read, with or without history
}

// Evaluate runs every rule now and reconciles the open alerts: new
// conditions fire, conditions still true past the cooldown repeat, cleared
// ones resolve. Notifications leave asynchronously (deliver.go).
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
		}
	}
	if rep.Fired+rep.Repeated+rep.Resolved > 0 {
		s.wake() // the new deliveries are due now; after the last batch, so sending never slows the evaluation
	}
	rep.DurationMS = time.Since(start).Milliseconds()
	return rep, nil
}

func messageOf(ev store.AlertEvent) notify.Message {
	m := notify.Message{Kind: ev.Kind, EventID: ev.ID, RuleID: ev.RuleID, RuleName: ev.RuleName, RuleType: ev.RuleType,
		Severity: ev.Severity, Server: ev.ServerName, Text: ev.Message, CreatedAt: ev.CreatedAt}
	if ev.Subject != FleetSubject {
		m.ServerID = ev.Subject
	}
	return m
}

// MarshalParams is the stored form of rule parameters.
func MarshalParams(p Params) []byte { b, _ := json.Marshal(p); return b }

package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/lcmproject/lcm/internal/domain"
)

// NotificationChannel is a stored channel. Config and Secrets are JSON
// documents the alerts area defines; Secrets is encrypted at rest.
type NotificationChannel struct {
	ID        string
	Name      string
	Type      string
	Enabled   bool
	System    bool
	Config    []byte
	Secrets   []byte
	CreatedAt time.Time
	UpdatedAt time.Time
}

func channelOf(r notificationChannelRow) NotificationChannel {
	return NotificationChannel{ID: r.ID, Name: r.Name, Type: r.Type, Enabled: r.Enabled, System: r.System,
		Config: []byte(r.Config), Secrets: []byte(r.Secrets), CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
}

// ListChannels returns every channel, by name.
func (s *Store) ListChannels(ctx context.Context) ([]NotificationChannel, error) {
	var rows []notificationChannelRow
	if err := s.conn(ctx).Order("name").Find(&rows).Error; err != nil {
		return nil, mapErr(err, "notification channels")
	}
	out := make([]NotificationChannel, len(rows))
	for i, r := range rows {
		out[i] = channelOf(r)
	}
	return out, nil
}

// GetChannel returns one channel.
func (s *Store) GetChannel(ctx context.Context, id string) (NotificationChannel, error) {
	var r notificationChannelRow
	if err := s.conn(ctx).Where("id = ?", id).First(&r).Error; err != nil {
		return NotificationChannel{}, mapErr(err, "notification channel")
	}
	return channelOf(r), nil
}

// SystemChannel returns the managed system mail channel; false when it
// was never configured.
func (s *Store) SystemChannel(ctx context.Context) (NotificationChannel, bool, error) {
	var rows []notificationChannelRow
	if err := s.conn(ctx).Where("system = ?", true).Limit(1).Find(&rows).Error; err != nil {
		return NotificationChannel{}, false, mapErr(err, "notification channel")
	}
	if len(rows) == 0 {
		return NotificationChannel{}, false, nil
	}
	return channelOf(rows[0]), true, nil
}

// SaveChannel inserts (empty ID) or replaces a channel and returns it.
func (s *Store) SaveChannel(ctx context.Context, c NotificationChannel) (NotificationChannel, error) {
	now := time.Now().UTC()
	row := notificationChannelRow{ID: c.ID, Name: c.Name, Type: c.Type, Enabled: c.Enabled, System: c.System,
		Config: string(c.Config), Secrets: string(c.Secrets), CreatedAt: c.CreatedAt, UpdatedAt: now}
	db := s.conn(ctx)
	if row.ID == "" {
		row.ID, row.CreatedAt = uuid.NewString(), now
		if err := db.Create(&row).Error; err != nil {
			return NotificationChannel{}, mapErr(err, "notification channel")
		}
		return channelOf(row), nil
	}
	res := db.Model(&row).Select("*").Omit("id", "created_at").Where("id = ?", row.ID).Updates(&row)
	if res.Error != nil {
		return NotificationChannel{}, mapErr(res.Error, "notification channel")
	}
	if res.RowsAffected == 0 {
		return NotificationChannel{}, domain.NotFound("notification channel")
	}
	return s.GetChannel(ctx, row.ID)
}

// CreateChannelIfAbsent inserts c unless a channel of its name exists
// (insert-or-ignore on the unique name, so replicas starting together
// create it once and none fails). It reports whether this call created it.
func (s *Store) CreateChannelIfAbsent(ctx context.Context, c NotificationChannel) (NotificationChannel, bool, error) {
	now := time.Now().UTC()
	row := notificationChannelRow{ID: uuid.NewString(), Name: c.Name, Type: c.Type, Enabled: c.Enabled, System: c.System,
		Config: string(c.Config), Secrets: string(c.Secrets), CreatedAt: now, UpdatedAt: now}
	res := s.conn(ctx).Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "name"}}, DoNothing: true}).Create(&row)
	if res.Error != nil {
		return NotificationChannel{}, false, mapErr(res.Error, "notification channel")
	}
	if res.RowsAffected == 0 {
		return NotificationChannel{}, false, nil
	}
	return channelOf(row), true, nil
}

// DeleteChannel removes a channel; its deliveries still waiting are
// given up (the history says why).
func (s *Store) DeleteChannel(ctx context.Context, id string) error {
	return s.InTx(ctx, func(tx *Store) error {
		db := tx.conn(ctx)
		res := db.Where("id = ?", id).Delete(&notificationChannelRow{})
		if res.Error != nil {
			return mapErr(res.Error, "notification channel")
		}
		if res.RowsAffected == 0 {
			return domain.NotFound("notification channel")
		}
		return mapErr(db.Model(&alertDeliveryRow{}).Where("channel_id = ? AND status IN ?", id, []string{DeliveryPending, DeliveryRetrying}).
			Updates(map[string]any{"status": DeliveryGivenUp, "next_attempt_at": nil, "last_error": "the channel was deleted",
				"updated_at": time.Now().UTC()}).Error, "alert deliveries")
	})
}

// AlertRule is a stored rule; Params is the type's JSON parameters.
type AlertRule struct {
	ID              string
	Name            string
	Type            string
	Enabled         bool
	Severity        string
	AllServers      bool
	GroupIDs        []string
	ChannelIDs      []string
	Params          []byte
	CooldownMinutes int
	CreatedBy       string
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

func ruleOf(r alertRuleRow) AlertRule {
	out := AlertRule{ID: r.ID, Name: r.Name, Type: r.Type, Enabled: r.Enabled, Severity: r.Severity, AllServers: r.AllServers,
		Params: []byte(r.Params), CooldownMinutes: r.CooldownMinutes, CreatedBy: r.CreatedBy,
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(), GroupIDs: []string{}, ChannelIDs: []string{}}
	_ = json.Unmarshal([]byte(r.GroupIDs), &out.GroupIDs)
	_ = json.Unmarshal([]byte(r.ChannelIDs), &out.ChannelIDs)
	return out
}

func jsonList(v []string) string {
	if v == nil {
		v = []string{}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// ListAlertRules returns every rule, by name.
func (s *Store) ListAlertRules(ctx context.Context) ([]AlertRule, error) {
	var rows []alertRuleRow
	if err := s.conn(ctx).Order("name").Find(&rows).Error; err != nil {
		return nil, mapErr(err, "alert rules")
	}
	out := make([]AlertRule, len(rows))
	for i, r := range rows {
		out[i] = ruleOf(r)
	}
	return out, nil
}

// GetAlertRule returns one rule.
func (s *Store) GetAlertRule(ctx context.Context, id string) (AlertRule, error) {
	var r alertRuleRow
	if err := s.conn(ctx).Where("id = ?", id).First(&r).Error; err != nil {
		return AlertRule{}, mapErr(err, "alert rule")
	}
	return ruleOf(r), nil
}

// SaveAlertRule inserts (empty ID) or replaces a rule and returns it.
func (s *Store) SaveAlertRule(ctx context.Context, a AlertRule) (AlertRule, error) {
	now := time.Now().UTC()
	params := string(a.Params)
	if params == "" {
		params = "{}"
	}
	row := alertRuleRow{ID: a.ID, Name: a.Name, Type: a.Type, Enabled: a.Enabled, Severity: a.Severity, AllServers: a.AllServers,
		GroupIDs: jsonList(a.GroupIDs), ChannelIDs: jsonList(a.ChannelIDs), Params: params, CooldownMinutes: a.CooldownMinutes,
		CreatedBy: a.CreatedBy, CreatedAt: a.CreatedAt, UpdatedAt: now}
	db := s.conn(ctx)
	if row.ID == "" {
		row.ID, row.CreatedAt = uuid.NewString(), now
		if err := db.Create(&row).Error; err != nil {
			return AlertRule{}, mapErr(err, "alert rule")
		}
		return ruleOf(row), nil
	}
	res := db.Model(&row).Select("*").Omit("id", "created_at", "created_by").Where("id = ?", row.ID).Updates(&row)
	if res.Error != nil {
		return AlertRule{}, mapErr(res.Error, "alert rule")
	}
	if res.RowsAffected == 0 {
		return AlertRule{}, domain.NotFound("alert rule")
	}
	return s.GetAlertRule(ctx, row.ID)
}

// DeleteAlertRule removes a rule and its open alerts (its history stays).
func (s *Store) DeleteAlertRule(ctx context.Context, id string) error {
	return s.InTx(ctx, func(tx *Store) error {
		db := tx.conn(ctx)
		res := db.Where("id = ?", id).Delete(&alertRuleRow{})
		if res.Error != nil {
			return mapErr(res.Error, "alert rule")
		}
		if res.RowsAffected == 0 {
			return domain.NotFound("alert rule")
		}
		return mapErr(db.Where("rule_id = ?", id).Delete(&alertOpenRow{}).Error, "open alerts")
	})
}

// OpenAlert is an alert firing now.
type OpenAlert struct {
	RuleID         string
	Subject        string
	OpenedAt       time.Time
	LastNotifiedAt time.Time
	Message        string
}

// OpenAlerts returns the firing alerts, keyed by rule id then subject.
func (s *Store) OpenAlerts(ctx context.Context) (map[string]map[string]OpenAlert, error) {
	var rows []alertOpenRow
	if err := s.conn(ctx).Find(&rows).Error; err != nil {
		return nil, mapErr(err, "open alerts")
	}
	out := map[string]map[string]OpenAlert{}
	for _, r := range rows {
		if out[r.RuleID] == nil {
			out[r.RuleID] = map[string]OpenAlert{}
		}
		out[r.RuleID][r.Subject] = OpenAlert{RuleID: r.RuleID, Subject: r.Subject, OpenedAt: r.OpenedAt.UTC(),
			LastNotifiedAt: r.LastNotifiedAt.UTC(), Message: r.Message}
	}
	return out, nil
}

// AlertEvent is one entry of the alert history.
type AlertEvent struct {
	ID         string
	RuleID     string
	RuleName   string
	RuleType   string
	Subject    string
	ServerName string
	Kind       string
	Severity   string
	Message    string
	CreatedAt  time.Time
	Deliveries []AlertDelivery
}

// AlertDelivery is the delivery of an event through one channel.
type AlertDelivery struct {
	ID            string
	EventID       string
	ChannelID     string
	ChannelName   string
	Status        string
	Attempts      int
	LastError     string
	Response      string
	NextAttemptAt *time.Time
	UpdatedAt     time.Time
}

// Transition kinds an event records.
const (
	AlertFiring   = "firing"
	AlertRepeat   = "repeat"
	AlertResolved = "resolved"
)

// Transition is one state change of an alert for RecordTransitions:
// the event to record, the LastNotifiedAt the caller read (repeat) and the
// channels to deliver through.
type Transition struct {
	Event        AlertEvent
	PrevNotified time.Time
	Channels     []NotificationChannel
}

// RecordTransition records one transition (RecordTransitions).
func (s *Store) RecordTransition(ctx context.Context, ev AlertEvent, prevNotified time.Time, channels []NotificationChannel) (AlertEvent, bool, error) {
	out, err := s.RecordTransitions(ctx, []Transition{{Event: ev, PrevNotified: prevNotified, Channels: channels}})
	if err != nil || len(out) == 0 {
		return AlertEvent{}, false, err
	}
	return out[0], true, nil
}

// RecordTransitions applies state changes of alerts and records each
// one's event with a pending delivery per channel, in one transaction. Each
// change is conditional, so replicas evaluating at the same moment notify
// once: firing inserts the open alert (nothing when it is open already),
// repeat moves LastNotifiedAt only from the value the caller saw, resolved
// deletes the open alert (nothing when another replica did). It returns the
// events this caller made, with their deliveries.
func (s *Store) RecordTransitions(ctx context.Context, ts []Transition) ([]AlertEvent, error) {
	var made []AlertEvent
	err := s.InTx(ctx, func(tx *Store) error {
		made = made[:0]
		db := tx.conn(ctx)
		var events []alertEventRow
		var deliveries []alertDeliveryRow
		// Each kind's conditional writes go out as one statement per chunk
		// (RETURNING names the rows this caller changed): a first evaluation
		// opens thousands of alerts, a repeat wave touches them all.
		const chunk = 300
		for lo := 0; lo < len(ts); lo += chunk {
			part := ts[lo:min(lo+chunk, len(ts))]
			done, err := applyTransitions(db, part)
			if err != nil {
				return err
			}
			for _, t := range part {
				ev := t.Event
				if !done[openKey{ev.RuleID, ev.Subject}] {
					continue
				}
				now := ev.CreatedAt.UTC()
				ev.ID = uuid.NewString()
				events = append(events, alertEventRow{ID: ev.ID, RuleID: ev.RuleID, RuleName: ev.RuleName, RuleType: ev.RuleType, Subject: ev.Subject,
					ServerName: ev.ServerName, Kind: ev.Kind, Severity: ev.Severity, Message: ev.Message, CreatedAt: now})
				ev.CreatedAt = now
				ev.Deliveries = nil
				for _, c := range t.Channels {
					d := alertDeliveryRow{ID: uuid.NewString(), EventID: ev.ID, ChannelID: c.ID, ChannelName: c.Name, Status: DeliveryPending,
						NextAttemptAt: &now, UpdatedAt: now}
					deliveries = append(deliveries, d)
					ev.Deliveries = append(ev.Deliveries, deliveryOf(d))
				}
				made = append(made, ev)
			}
		}
		if len(events) > 0 {
			if err := db.CreateInBatches(events, 200).Error; err != nil {
				return err
			}
		}
		if len(deliveries) > 0 {
			if err := db.CreateInBatches(deliveries, 200).Error; err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, mapErr(err, "alert event")
	}
	return made, nil
}

type openKey struct{ rule, subject string }

// applyTransitions applies the state changes of ts (distinct alerts) and
// returns the alerts this caller changed: firing inserts the open alert
// (nothing when it is open already), repeat moves last_notified_at only
// from the value the caller saw, resolved deletes it (nothing when another
// replica did). PostgreSQL and SQLite (3.35+) both return the changed rows.
func applyTransitions(db *gorm.DB, ts []Transition) (map[openKey]bool, error) {
	done := map[openKey]bool{}
	var firing, repeat, resolved []Transition
	for _, t := range ts {
		switch t.Event.Kind {
		case AlertFiring:
			firing = append(firing, t)
		case AlertRepeat:
			repeat = append(repeat, t)
		case AlertResolved:
			resolved = append(resolved, t)
		default:
			return nil, fmt.Errorf("store: unknown alert transition %q", t.Event.Kind)
		}
	}
	collect := func(q string, args []any) error {
		rows, err := db.Raw(q, args...).Rows()
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var k openKey
			if err := rows.Scan(&k.rule, &k.subject); err != nil {
				return err
			}
			done[k] = true
		}
		return rows.Err()
	}
	if len(firing) > 0 {
		var b strings.Builder
		args := make([]any, 0, 5*len(firing))
		b.WriteString("INSERT INTO alert_open (rule_id, subject, opened_at, last_notified_at, message) VALUES ")
		for i, t := range firing {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("(?, ?, ?, ?, ?)")
			now := t.Event.CreatedAt.UTC()
			args = append(args, t.Event.RuleID, t.Event.Subject, now, now, t.Event.Message)
		}
		b.WriteString(" ON CONFLICT (rule_id, subject) DO NOTHING RETURNING rule_id, subject")
		if err := collect(b.String(), args); err != nil {
			return nil, err
		}
	}
	if len(repeat) > 0 {
		// One notification time per evaluation; the message per alert.
		var msg, in strings.Builder
		var msgArgs, inArgs []any
		msg.WriteString("CASE")
		for i, t := range repeat {
			if i > 0 {
				in.WriteString(", ")
			}
			msg.WriteString(" WHEN rule_id = ? AND subject = ? THEN ?")
			msgArgs = append(msgArgs, t.Event.RuleID, t.Event.Subject, t.Event.Message)
			in.WriteString("(?, ?, ?)")
			inArgs = append(inArgs, t.Event.RuleID, t.Event.Subject, t.PrevNotified.UTC())
		}
		msg.WriteString(" ELSE message END")
		// Every repeat of one call shares the evaluation's time (checked).
		now := repeat[0].Event.CreatedAt.UTC()
		for _, t := range repeat {
			if !t.Event.CreatedAt.Equal(repeat[0].Event.CreatedAt) {
				return nil, fmt.Errorf("store: repeats of one call must share their time")
			}
		}
		args := append([]any{now}, msgArgs...)
		args = append(args, inArgs...)
		q := "UPDATE alert_open SET last_notified_at = ?, message = " + msg.String() +
			" WHERE (rule_id, subject, last_notified_at) IN (" + in.String() + ") RETURNING rule_id, subject"
		if err := collect(q, args); err != nil {
			return nil, err
		}
	}
	if len(resolved) > 0 {
		var in strings.Builder
		args := make([]any, 0, 2*len(resolved))
		for i, t := range resolved {
			if i > 0 {
				in.WriteString(", ")
			}
			in.WriteString("(?, ?)")
			args = append(args, t.Event.RuleID, t.Event.Subject)
		}
		if err := collect("DELETE FROM alert_open WHERE (rule_id, subject) IN ("+in.String()+") RETURNING rule_id, subject", args); err != nil {
			return nil, err
		}
	}
	return done, nil
}

// Delivery states.
const (
	DeliveryPending  = "pending"
	DeliverySent     = "sent"
	DeliveryRetrying = "retrying"
	DeliveryGivenUp  = "given_up"
)

func deliveryOf(r alertDeliveryRow) AlertDelivery {
	d := AlertDelivery{ID: r.ID, EventID: r.EventID, ChannelID: r.ChannelID, ChannelName: r.ChannelName, Status: r.Status,
		Attempts: r.Attempts, LastError: r.LastError, Response: r.Response, UpdatedAt: r.UpdatedAt.UTC()}
	if r.NextAttemptAt != nil {
		t := r.NextAttemptAt.UTC()
		d.NextAttemptAt = &t
	}
	return d
}

// UpdateDelivery stores the outcome of a delivery attempt.
func (s *Store) UpdateDelivery(ctx context.Context, d AlertDelivery) error {
	return mapErr(s.conn(ctx).Model(&alertDeliveryRow{}).Where("id = ?", d.ID).Updates(map[string]any{
		"status": d.Status, "attempts": d.Attempts, "last_error": d.LastError, "response": d.Response,
		"next_attempt_at": d.NextAttemptAt, "updated_at": time.Now().UTC()}).Error, "alert delivery")
}

// ChannelIDs lists the ids of every notification channel (the delivery
// pump visits each one's queue).
func (s *Store) ChannelIDs(ctx context.Context) ([]string, error) {
	var ids []string
	return ids, mapErr(s.conn(ctx).Model(&notificationChannelRow{}).Order("id").Pluck("id", &ids).Error, "notification channels")
}

// ClaimDueDeliveries claims up to limit due deliveries (pending or
// retrying, next attempt at or before now) of a channel, oldest first, by
// moving each one's next attempt to until (the lease of the attempt).
// Deliveries are the queue: a waiting one is only a row, holds no
// goroutine and is not written while it waits. Each claim is conditional
// on the value read, so of replicas claiming together exactly one gets
// each delivery; a replica that dies mid-attempt leaves the lease to run
// out, and the delivery is due again for anyone. Each status is read
// along the (channel_id, status, next_attempt_at) index, so a claim reads
// at most limit rows of each however long the queue.
func (s *Store) ClaimDueDeliveries(ctx context.Context, channelID string, now, until time.Time, limit int) ([]AlertDelivery, error) {
	if limit <= 0 {
		return nil, nil
	}
	var rows []alertDeliveryRow
	for _, st := range []string{DeliveryPending, DeliveryRetrying} {
		var part []alertDeliveryRow
		if err := s.conn(ctx).Where("channel_id = ? AND status = ? AND next_attempt_at <= ?", channelID, st, now.UTC()).
			Order("next_attempt_at").Limit(limit).Find(&part).Error; err != nil {
			return nil, mapErr(err, "alert deliveries")
		}
		rows = append(rows, part...)
	}
	slices.SortFunc(rows, func(a, b alertDeliveryRow) int { return a.NextAttemptAt.Compare(*b.NextAttemptAt) })
	var out []AlertDelivery
	for _, r := range rows[:min(limit, len(rows))] {
		res := s.conn(ctx).Model(&alertDeliveryRow{}).Where("id = ? AND next_attempt_at = ? AND status = ?", r.ID, r.NextAttemptAt, r.Status).
			Update("next_attempt_at", until.UTC())
		if res.Error != nil {
			return nil, mapErr(res.Error, "alert deliveries")
		}
		if res.RowsAffected == 1 {
			u := until.UTC()
			r.NextAttemptAt = &u
			out = append(out, deliveryOf(r))
		}
	}
	return out, nil
}

// GetAlertEvent returns one event with its deliveries.
func (s *Store) GetAlertEvent(ctx context.Context, id string) (AlertEvent, error) {
	evs, err := s.ListAlertEvents(ctx, AlertEventFilter{ID: id, Limit: 1})
	if err != nil {
		return AlertEvent{}, err
	}
	if len(evs) == 0 {
		return AlertEvent{}, domain.NotFound("alert event")
	}
	return evs[0], nil
}

// AlertEventFilter narrows the history; zero fields match everything.
// ServerIDs, when not nil, restricts to those subjects (scoping).
type AlertEventFilter struct {
	ID             string
	RuleID         string
	Subject        string
	Kind           string
	Severity       string
	DeliveryStatus string
	Since, Until   time.Time
	ServerIDs      []string
	Limit, Offset  int
}

// ListAlertEvents returns events newest first, with their deliveries.
func (s *Store) ListAlertEvents(ctx context.Context, f AlertEventFilter) ([]AlertEvent, error) {
	q := s.conn(ctx).Model(&alertEventRow{})
	if f.ID != "" {
		q = q.Where("id = ?", f.ID)
	}
	if f.RuleID != "" {
		q = q.Where("rule_id = ?", f.RuleID)
	}
	if f.Subject != "" {
		q = q.Where("subject = ?", f.Subject)
	}
	if f.Kind != "" {
		q = q.Where("kind = ?", f.Kind)
	}
	if f.Severity != "" {
		q = q.Where("severity = ?", f.Severity)
	}
	if !f.Since.IsZero() {
		q = q.Where("created_at >= ?", f.Since.UTC())
	}
	if !f.Until.IsZero() {
		q = q.Where("created_at < ?", f.Until.UTC())
	}
	if f.ServerIDs != nil {
		q = q.Where("subject IN ?", append([]string{""}, f.ServerIDs...))
	}
	if f.DeliveryStatus != "" {
		q = q.Where("id IN (SELECT event_id FROM alert_deliveries WHERE status = ?)", f.DeliveryStatus)
	}
	limit := f.Limit
	if limit <= 0 || limit > 500 {
		limit = 100
	}
	var rows []alertEventRow
	if err := q.Order("created_at DESC, id").Limit(limit).Offset(max(f.Offset, 0)).Find(&rows).Error; err != nil {
		return nil, mapErr(err, "alert events")
	}
	out := make([]AlertEvent, len(rows))
	idx := map[string]int{}
	ids := make([]string, len(rows))
	for i, r := range rows {
		out[i] = AlertEvent{ID: r.ID, RuleID: r.RuleID, RuleName: r.RuleName, RuleType: r.RuleType, Subject: r.Subject,
			ServerName: r.ServerName, Kind: r.Kind, Severity: r.Severity, Message: r.Message, CreatedAt: r.CreatedAt.UTC(),
			Deliveries: []AlertDelivery{}}
		idx[r.ID], ids[i] = i, r.ID
	}
	if len(ids) == 0 {
		return out, nil
	}
	var ds []alertDeliveryRow
	if err := s.conn(ctx).Where("event_id IN ?", ids).Order("channel_name").Find(&ds).Error; err != nil {
		return nil, mapErr(err, "alert deliveries")
	}
	for _, d := range ds {
		i := idx[d.EventID]
		out[i].Deliveries = append(out[i].Deliveries, deliveryOf(d))
	}
	return out, nil
}

// GroupServerIDs returns each server's group ids (servers without a group
// are absent).
func (s *Store) GroupServerIDs(ctx context.Context) (map[string][]string, error) {
	var rows []groupServerRow
	if err := s.conn(ctx).Omit("Group", "Server").Find(&rows).Error; err != nil {
		return nil, mapErr(err, "group servers")
	}
	out := map[string][]string{}
	for _, r := range rows {
		out[r.ServerID] = append(out[r.ServerID], r.GroupID)
	}
	return out, nil
}

// ManagedGroupIDs returns the ids of the groups a user manages.
func (s *Store) ManagedGroupIDs(ctx context.Context, userID string) ([]string, error) {
	var ids []string
	if err := s.conn(ctx).Model(&groupManagerRow{}).Where("user_id = ?", userID).Pluck("group_id", &ids).Error; err != nil {
		return nil, mapErr(err, "group managers")
	}
	return ids, nil
}

// GenStorageDaily names the generation of storage_daily: every write of
// daily aggregates (the daily aggregation, a direct replace) moves it, in
// the writing transaction.
const GenStorageDaily = "storage_daily"

func (s *Store) bumpGeneration(ctx context.Context, name string) error {
	return mapErr(s.conn(ctx).Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "name"}},
		DoUpdates: clause.Assignments(map[string]any{"gen": gorm.Expr("data_generations.gen + 1")})}).
		Create(&dataGenerationRow{Name: name, Gen: 1}).Error, "data generation")
}

// Generation returns the current generation of name (0 before its first
// write). Replicas share it through the database.
func (s *Store) Generation(ctx context.Context, name string) (int64, error) {
	var gens []int64
	if err := s.conn(ctx).Model(&dataGenerationRow{}).Where("name = ?", name).Pluck("gen", &gens).Error; err != nil {
		return 0, mapErr(err, "data generation")
	}
	if len(gens) == 0 {
		return 0, nil
	}
	return gens[0], nil
}

// StorageTrend is the least-squares sums of a server's daily used bytes of
// "/" (x: days since the first day asked for, y: the day's average used
// bytes) with its last day's used and total bytes.
type StorageTrend struct {
	N                   int
	SX, SY, SXY, SXX    float64
	LastUsed, LastTotal int64
	LastDay             string
}

// RootStorageTrends sums, per server in ids, the daily aggregates of "/"
// from sinceDay (YYYY-MM-DD) on, in the database: one row per server
// instead of one per day (10,000 servers × 30 days would be 300,000 rows
// for the alert evaluation to read). The forecast from the sums is
// inventory.ForecastFromSums, the same formula the storage history shows.
func (s *Store) RootStorageTrends(ctx context.Context, ids []string, sinceDay string) (map[string]StorageTrend, error) {
	// x: whole days since sinceDay. SQLite compares Julian day numbers
	// (the first one computed here once, not per row).
	since, err := time.Parse(dayFormat, sinceDay)
	if err != nil {
		return nil, domain.Invalid("invalid_day", "sinceDay must be YYYY-MM-DD")
	}
	var sinceArg any = float64(since.Unix())/86400 + 2440587.5
	x := "CAST(julianday(day) - ? AS INTEGER)"
	if s.dialect == Postgres {
		x, sinceArg = "(CAST(day AS date) - CAST(? AS date))", sinceDay
	}
	q := `SELECT a.server_id, a.n, a.sx, a.sy, a.sxy, a.sxx, d.avg_used, d.total_bytes, a.last
	FROM (SELECT server_id, COUNT(*) AS n, CAST(SUM(x) AS DOUBLE PRECISION) AS sx, CAST(SUM(avg_used) AS DOUBLE PRECISION) AS sy,
			CAST(SUM(x * avg_used) AS DOUBLE PRECISION) AS sxy, CAST(SUM(x * x) AS DOUBLE PRECISION) AS sxx, MAX(day) AS last
		FROM (SELECT server_id, day, avg_used, ` + x + ` AS x FROM storage_daily WHERE server_id IN ? AND mount = ? AND day >= ?) p
		GROUP BY server_id) a
	JOIN storage_daily d ON d.server_id = a.server_id AND d.mount = ? AND d.day = a.last`
	out := make(map[string]StorageTrend, len(ids))
	for lo := 0; lo < len(ids); lo += ingestBatch {
		rows, err := s.conn(ctx).Raw(q, sinceArg, ids[lo:min(lo+ingestBatch, len(ids))], "/", sinceDay, "/").Rows()
		if err != nil {
			return nil, mapErr(err, "storage daily")
		}
		for rows.Next() {
			var id string
			var t StorageTrend
			if err := rows.Scan(&id, &t.N, &t.SX, &t.SY, &t.SXY, &t.SXX, &t.LastUsed, &t.LastTotal, &t.LastDay); err != nil {
				rows.Close()
				return nil, mapErr(err, "storage daily")
			}
			out[id] = t
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, mapErr(err, "storage daily")
		}
	}
	return out, nil
}

// ServerNames returns the names of the given servers (system scope).
func (s *Store) ServerNames(ctx context.Context, ids []string) (map[string]string, error) {
	out := map[string]string{}
	for lo := 0; lo < len(ids); lo += ingestBatch {
		var rows []serverRow
		if err := s.conn(ctx).Select("id", "name").Where("id IN ?", ids[lo:min(lo+ingestBatch, len(ids))]).Find(&rows).Error; err != nil {
			return nil, mapErr(err, "servers")
		}
		for _, r := range rows {
			out[r.ID] = r.Name
		}
	}
	return out, nil
}

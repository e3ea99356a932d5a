package store

import (
	"context"
	"strings"
	"time"

	"gorm.io/gorm/clause"

	"github.com/lcmproject/lcm/internal/domain"
)

// EarlyWarning is one stored early-warning finding.
type EarlyWarning struct {
	ID                                                    uint64
	ServerID, ServerName                                  string
	Advisory, Package, Source, Installed, Fixed, Severity string
	CVEs                                                  []string
	CVSS                                                  float64
	Summary, Ecosystem                                    string
	AdvisoryModified, CreatedAt                           time.Time
	AcknowledgedAt                                        *time.Time
	AcknowledgedBy                                        string
}

// AddEarlyWarnings stores findings not stored yet (key: server, advisory,
// package) and returns the ones it created. A finding acknowledged before
// stays acknowledged: an advisory modified again does not raise it anew.
func (s *Store) AddEarlyWarnings(ctx context.Context, list []EarlyWarning, at time.Time) ([]EarlyWarning, error) {
	var created []EarlyWarning
	err := s.InTx(ctx, func(tx *Store) error {
		db := tx.conn(ctx)
		seen := map[string]bool{}
		for _, w := range list {
			k := w.ServerID + "\x00" + w.Advisory + "\x00" + w.Package
			if seen[k] {
				continue
			}
			seen[k] = true
			r := earlyWarningRow{ServerID: w.ServerID, Advisory: trunc(w.Advisory, 128), Package: trunc(w.Package, 255),
				CVEs: trunc(strings.Join(w.CVEs, ","), 2048), Source: trunc(w.Source, 255), Installed: trunc(w.Installed, 255),
				Fixed: trunc(w.Fixed, 255), Severity: trunc(w.Severity, 16), CVSS: w.CVSS, Summary: trunc(w.Summary, 512),
				Ecosystem: trunc(w.Ecosystem, 128), AdvisoryModified: w.AdvisoryModified, CreatedAt: at}
			res := db.Omit("Server").Clauses(clause.OnConflict{DoNothing: true}).Create(&r)
			if res.Error != nil {
				return mapErr(res.Error, "early-warning finding")
			}
			if res.RowsAffected == 1 {
				created = append(created, toEarlyWarning(r))
			}
		}
		return nil
	})
	return created, err
}

// EarlyWarningFilter selects early-warning findings.
type EarlyWarningFilter struct {
	ServerID    string
	State       string // "open" (default), "acknowledged", "all"
	MinSeverity int
	Limit       int
	Offset      int
}

// EarlyWarnings lists findings of servers visible in sc, newest first,
// with the number matching.
func (s *Store) EarlyWarnings(ctx context.Context, sc Scope, f EarlyWarningFilter) ([]EarlyWarning, int64, error) {
	q := applyServerScope(s.conn(ctx).Model(&earlyWarningRow{}), "server_id", sc)
	if f.ServerID != "" {
		q = q.Where("server_id = ?", f.ServerID)
	}
	switch f.State {
	case "", "open":
		q = q.Where("acknowledged_at IS NULL")
	case "acknowledged":
		q = q.Where("acknowledged_at IS NOT NULL")
	}
	if f.MinSeverity > 0 {
		q = q.Where("severity IN ?", severitiesFrom(f.MinSeverity))
	}
	var total int64
	if err := q.Count(&total).Error; err != nil {
		return nil, 0, mapErr(err, "early-warning findings")
	}
	lim := f.Limit
	if lim <= 0 {
		lim = 200
	}
	var rows []earlyWarningRow
	if err := q.Omit("Server").Order("created_at DESC, id DESC").Limit(lim).Offset(f.Offset).Find(&rows).Error; err != nil {
		return nil, 0, mapErr(err, "early-warning findings")
	}
	var ids []string
	seen := map[string]bool{}
	for _, r := range rows {
		if !seen[r.ServerID] {
			seen[r.ServerID] = true
			ids = append(ids, r.ServerID)
		}
	}
	names := map[string]string{}
	if len(ids) > 0 {
		srvs, err := s.ServersByID(ctx, SystemScope, ids)
		if err != nil {
			return nil, 0, err
		}
		for _, v := range srvs {
			names[v.ID] = v.Name
		}
	}
	out := make([]EarlyWarning, len(rows))
	for i, r := range rows {
		out[i] = toEarlyWarning(r)
		out[i].ServerName = names[r.ServerID]
	}
	return out, total, nil
}

func toEarlyWarning(r earlyWarningRow) EarlyWarning {
	var cves []string
	if r.CVEs != "" {
		cves = strings.Split(r.CVEs, ",")
	}
	return EarlyWarning{ID: r.ID, ServerID: r.ServerID, Advisory: r.Advisory, Package: r.Package, Source: r.Source,
		Installed: r.Installed, Fixed: r.Fixed, Severity: r.Severity, CVEs: cves, CVSS: r.CVSS, Summary: r.Summary,
		Ecosystem: r.Ecosystem, AdvisoryModified: r.AdvisoryModified, CreatedAt: r.CreatedAt,
		AcknowledgedAt: r.AcknowledgedAt, AcknowledgedBy: r.AcknowledgedBy}
}

// AcknowledgeEarlyWarning marks a finding of a visible server acknowledged
// (again acknowledging keeps the first acknowledgement) and returns it.
func (s *Store) AcknowledgeEarlyWarning(ctx context.Context, sc Scope, id uint64, by string, at time.Time) (EarlyWarning, error) {
	var out EarlyWarning
	err := s.InTx(ctx, func(tx *Store) error {
		var rows []earlyWarningRow
		q := applyServerScope(tx.conn(ctx).Omit("Server").Model(&earlyWarningRow{}), "server_id", sc)
		if err := q.Where("id = ?", id).Limit(1).Find(&rows).Error; err != nil {
			return mapErr(err, "early-warning finding")
		}
		if len(rows) == 0 {
			return domain.NotFound("early-warning finding")
		}
		r := rows[0]
		if r.AcknowledgedAt == nil {
			r.AcknowledgedAt, r.AcknowledgedBy = &at, trunc(by, 255)
			if err := tx.conn(ctx).Omit("Server").Save(&r).Error; err != nil {
				return mapErr(err, "early-warning finding")
			}
		}
		out = toEarlyWarning(r)
		return nil
	})
	return out, err
}

// OpenEarlyWarnings returns the unacknowledged findings per server (system
// use: the alert rule "new early-warning finding").
func (s *Store) OpenEarlyWarnings(ctx context.Context) (map[string][]EarlyWarning, error) {
	var rows []earlyWarningRow
	if err := s.conn(ctx).Omit("Server").Where("acknowledged_at IS NULL").Order("id").Find(&rows).Error; err != nil {
		return nil, mapErr(err, "early-warning findings")
	}
	out := map[string][]EarlyWarning{}
	for _, r := range rows {
		out[r.ServerID] = append(out[r.ServerID], toEarlyWarning(r))
	}
	return out, nil
}

// EarlyWarningCounts counts the findings visible in sc: open and
// acknowledged.
func (s *Store) EarlyWarningCounts(ctx context.Context, sc Scope) (open, acknowledged int64, err error) {
	q := applyServerScope(s.conn(ctx).Model(&earlyWarningRow{}), "server_id", sc)
	if err = q.Where("acknowledged_at IS NULL").Count(&open).Error; err != nil {
		return 0, 0, mapErr(err, "early-warning findings")
	}
	q = applyServerScope(s.conn(ctx).Model(&earlyWarningRow{}), "server_id", sc)
	if err = q.Where("acknowledged_at IS NOT NULL").Count(&acknowledged).Error; err != nil {
		return 0, 0, mapErr(err, "early-warning findings")
	}
	return open, acknowledged, nil
}

// AdvisoryCursor is the poll position of one ecosystem.
type AdvisoryCursor struct {
	Ecosystem string
	Cursor    time.Time
	PolledAt  time.Time
	Records   int
	Error     string
}

// AdvisoryCursors returns every ecosystem's poll position.
func (s *Store) AdvisoryCursors(ctx context.Context) (map[string]AdvisoryCursor, error) {
	var rows []advisoryCursorRow
	if err := s.conn(ctx).Order("ecosystem").Find(&rows).Error; err != nil {
		return nil, mapErr(err, "advisory cursors")
	}
	out := make(map[string]AdvisoryCursor, len(rows))
	for _, r := range rows {
		out[r.Ecosystem] = AdvisoryCursor(r)
	}
	return out, nil
}

// PutAdvisoryCursor stores an ecosystem's poll position.
func (s *Store) PutAdvisoryCursor(ctx context.Context, c AdvisoryCursor) error {
	r := advisoryCursorRow{Ecosystem: trunc(c.Ecosystem, 64), Cursor: c.Cursor, PolledAt: c.PolledAt, Records: c.Records, Error: trunc(c.Error, 1024)}
	return mapErr(s.conn(ctx).Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "ecosystem"}},
		DoUpdates: clause.AssignmentColumns([]string{"cursor", "polled_at", "records", "error"})}).Create(&r).Error, "advisory cursor")
}

// AdvisoryRun is the last run of a kind ("poll", "mirror").
type AdvisoryRun struct {
	Kind                  string
	StartedAt, FinishedAt time.Time
	Error                 string
	Detail                []byte
}

// PutAdvisoryRun records the last run of its kind.
func (s *Store) PutAdvisoryRun(ctx context.Context, r AdvisoryRun) error {
	row := advisoryRunRow{Kind: trunc(r.Kind, 16), StartedAt: r.StartedAt, FinishedAt: r.FinishedAt, Error: trunc(r.Error, 2048), Detail: r.Detail}
	return mapErr(s.conn(ctx).Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "kind"}},
		DoUpdates: clause.AssignmentColumns([]string{"started_at", "finished_at", "error", "detail"})}).Create(&row).Error, "advisory run")
}

// AdvisoryRuns returns the last run of each kind.
func (s *Store) AdvisoryRuns(ctx context.Context) (map[string]AdvisoryRun, error) {
	var rows []advisoryRunRow
	if err := s.conn(ctx).Find(&rows).Error; err != nil {
		return nil, mapErr(err, "advisory runs")
	}
	out := make(map[string]AdvisoryRun, len(rows))
	for _, r := range rows {
		out[r.Kind] = AdvisoryRun(r)
	}
	return out, nil
}

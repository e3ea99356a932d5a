package store

import (
	"context"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/lcmproject/lcm/internal/domain"
)

// StatusRecord is a server's stored traffic light.
type StatusRecord struct {
	ServerID     string
	Status       string
	InsightsJSON []byte
	InputsHash   string
	ComputedAt   time.Time
}

// StatusInputs is everything the status model reads about one server.
type StatusInputs struct {
	Facts            *FactsRecord // nil: never refreshed
	LastSeenAt       *time.Time
	FailedContacts   int
	UnreachableSince *time.Time
	ContactError     string
	LastJobKind      string
	LastJobStatus    string
	LastJobError     string
	LastJobAt        *time.Time
	Findings         map[string]int // severity → count
	Previous         *StatusRecord
}

// LoadStatusInputs reads the status inputs of a server (system scope).
func (s *Store) LoadStatusInputs(ctx context.Context, serverID string) (StatusInputs, error) {
	db := s.conn(ctx)
	var in StatusInputs
	var srv []serverRow
	if err := db.Select("id", "last_seen_at").Where("id = ?", serverID).Limit(1).Find(&srv).Error; err != nil {
		return in, mapErr(err, "server")
	}
	if len(srv) == 0 {
		return in, domain.NotFound("server")
	}
	in.LastSeenAt = srv[0].LastSeenAt
	var facts []serverFactsRow
	if err := db.Omit("Server", "facts").Where("server_id = ?", serverID).Limit(1).Find(&facts).Error; err != nil {
		return in, mapErr(err, "server facts")
	}
	if len(facts) == 1 {
		r := facts[0]
		in.Facts = &FactsRecord{ServerID: r.ServerID, PackageManager: r.PackageManager, Packages: r.Packages,
			Updates: r.Updates, SecurityUpdates: r.SecurityUpdates, RebootRequired: r.RebootRequired,
			RootUsedPercent: r.RootUsedPercent, CollectedAt: r.CollectedAt, SecuritySince: r.SecuritySince}
	}
	var st []serverStatusRow
	if err := db.Omit("Server").Where("server_id = ?", serverID).Limit(1).Find(&st).Error; err != nil {
		return in, mapErr(err, "server status")
	}
	if len(st) == 1 {
		r := st[0]
		in.FailedContacts, in.UnreachableSince, in.ContactError = r.FailedContacts, r.UnreachableSince, r.ContactError
		in.Previous = &StatusRecord{ServerID: r.ServerID, Status: r.Status, InsightsJSON: []byte(r.Insights), InputsHash: r.InputsHash, ComputedAt: r.ComputedAt}
	}
	var jobs []jobRow
	if err := db.Select("kind", "status", "error", "finished_at").
		Where("server_id = ? AND status IN ?", serverID, []string{"success", "failed"}).
		Order("finished_at DESC").Limit(1).Find(&jobs).Error; err != nil {
		return in, mapErr(err, "jobs")
	}
	if len(jobs) == 1 {
		in.LastJobKind, in.LastJobStatus, in.LastJobError, in.LastJobAt = jobs[0].Kind, jobs[0].Status, jobs[0].Error, jobs[0].FinishedAt
	}
	type sev struct {
		Severity string
		N        int
	}
	var sevs []sev
	if err := db.Model(&serverFindingRow{}).Select("severity, COUNT(*) AS n").Where("server_id = ?", serverID).
		Group("severity").Scan(&sevs).Error; err != nil {
		return in, mapErr(err, "findings")
	}
	in.Findings = map[string]int{}
	for _, x := range sevs {
		in.Findings[x.Severity] = x.N
	}
	return in, nil
}

// SaveStatus stores a computed status and mirrors the colour into
// servers.status (the column the server list filters on).
func (s *Store) SaveStatus(ctx context.Context, r StatusRecord) error {
	return s.InTx(ctx, func(tx *Store) error {
		db := tx.conn(ctx)
		row := serverStatusRow{ServerID: r.ServerID, Status: r.Status, Insights: string(r.InsightsJSON), InputsHash: r.InputsHash, ComputedAt: r.ComputedAt}
		if err := db.Omit("Server").Clauses(clause.OnConflict{
			Columns:   []clause.Column{{Name: "server_id"}},
			DoUpdates: clause.AssignmentColumns([]string{"status", "insights", "inputs_hash", "computed_at"}),
		}).Create(&row).Error; err != nil {
			return mapErr(err, "server status")
		}
		return mapErr(db.Model(&serverRow{}).Where("id = ?", r.ServerID).UpdateColumn("status", r.Status).Error, "server")
	})
}

// RecordContact notes a successful (ok) or failed contact with a server:
// success resets the failure streak and stamps last_seen_at; a failure
// extends the streak and remembers since when and why.
func (s *Store) RecordContact(ctx context.Context, serverID string, ok bool, reason string, at time.Time) error {
	return s.InTx(ctx, func(tx *Store) error {
		db := tx.conn(ctx)
		var rows []serverStatusRow
		if err := db.Omit("Server").Where("server_id = ?", serverID).Limit(1).Find(&rows).Error; err != nil {
			return mapErr(err, "server status")
		}
		row := serverStatusRow{ServerID: serverID, Status: "unknown", Insights: "[]", ComputedAt: at}
		if len(rows) == 1 {
			row = rows[0]
		}
		at := at.UTC()
		row.LastContactAt = &at
		if ok {
			row.FailedContacts, row.UnreachableSince, row.ContactError = 0, nil, ""
			if err := db.Model(&serverRow{}).Where("id = ?", serverID).UpdateColumn("last_seen_at", at).Error; err != nil {
				return mapErr(err, "server")
			}
		} else {
			row.FailedContacts++
			row.ContactError = reason
			if row.UnreachableSince == nil {
				row.UnreachableSince = &at
			}
		}
		return mapErr(db.Omit("Server").Clauses(clause.OnConflict{
			Columns:   []clause.Column{{Name: "server_id"}},
			DoUpdates: clause.AssignmentColumns([]string{"failed_contacts", "unreachable_since", "contact_error", "last_contact_at"}),
		}).Create(&row).Error, "server status")
	})
}

// StatusOf returns the stored status of visible servers (ids not computed
// yet are absent from the map).
func (s *Store) StatusOf(ctx context.Context, sc Scope, ids []string) (map[string]StatusRecord, error) {
	out := map[string]StatusRecord{}
	if len(ids) == 0 {
		return out, nil
	}
	var rows []serverStatusRow
	q := applyServerScope(s.conn(ctx).Omit("Server").Model(&serverStatusRow{}), "server_id", sc)
	for i := 0; i < len(ids); i += ingestBatch {
		rows = rows[:0]
		if err := q.Session(&gorm.Session{}).Where("server_id IN ?", ids[i:min(i+ingestBatch, len(ids))]).Find(&rows).Error; err != nil {
			return nil, mapErr(err, "server status")
		}
		for _, r := range rows {
			out[r.ServerID] = StatusRecord{ServerID: r.ServerID, Status: r.Status, InsightsJSON: []byte(r.Insights), InputsHash: r.InputsHash, ComputedAt: r.ComputedAt}
		}
	}
	return out, nil
}

// Finding is one vulnerability finding of a server.
type Finding struct {
	CVE, Package, Version, FixedIn, Severity string
}

// SetFindings replaces a server's findings (the scanner's result).
func (s *Store) SetFindings(ctx context.Context, serverID string, fs []Finding) error {
	return s.InTx(ctx, func(tx *Store) error {
		db := tx.conn(ctx)
		if err := db.Where("server_id = ?", serverID).Delete(&serverFindingRow{}).Error; err != nil {
			return mapErr(err, "findings")
		}
		if len(fs) == 0 {
			return nil
		}
		rows := make([]serverFindingRow, len(fs))
		for i, f := range fs {
			rows[i] = serverFindingRow{ServerID: serverID, CVE: f.CVE, Package: f.Package, Version: f.Version, FixedIn: f.FixedIn, Severity: f.Severity}
		}
		return mapErr(db.Omit("Server").CreateInBatches(rows, ingestBatch).Error, "findings")
	})
}

// ServerEndpoint is a server's address, for duplicate detection.
type ServerEndpoint struct {
	ID, Name, Host string
	Port           int
}

// ServerEndpoints lists every server's host and port (system use: the
// self-registration duplicate check; hosts are decrypted here).
func (s *Store) ServerEndpoints(ctx context.Context) ([]ServerEndpoint, error) {
	var rows []serverRow
	if err := s.conn(ctx).Select("id", "name", "host", "port").Find(&rows).Error; err != nil {
		return nil, mapErr(err, "servers")
	}
	out := make([]ServerEndpoint, len(rows))
	for i, r := range rows {
		out[i] = ServerEndpoint{ID: r.ID, Name: r.Name, Host: r.Host, Port: r.Port}
	}
	return out, nil
}

// ServerIDs lists the ids of all servers (joined only when joined is true),
// for the schedules.
func (s *Store) ServerIDs(ctx context.Context, joinedOnly bool) ([]string, error) {
	q := s.conn(ctx).Model(&serverRow{})
	if joinedOnly {
		q = q.Where("joined = ?", true)
	}
	var ids []string
	return ids, mapErr(q.Order("id").Pluck("id", &ids).Error, "servers")
}

package store

import (
	"context"
	"slices"
	"strings"
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
	LastJobParams    []byte
	LastJobStatus    string
	LastJobError     string
	LastJobAt        *time.Time
	Findings         map[string]int // severity → count
	// Severe are the critical and high findings (package and fix), for
	// the insight that names them.
	Severe   []Finding
	Previous *StatusRecord
	// SSHHardened and FirewallActive are the proven hardening state
	// (the best state, excellent, needs both); FirewallTool is "" when the
	// firewall was never read back.
	SSHHardened    bool
	FirewallActive bool
	FirewallTool   string
	FirewallKnown  bool
	// ContainerUpdates is the last newer-image check of the server's
	// containers (containers.ImageUpdate JSON list), nil when never checked.
	ContainerUpdates []byte
}

// LoadStatusInputs reads the status inputs of a server (system scope).
func (s *Store) LoadStatusInputs(ctx context.Context, serverID string) (StatusInputs, error) {
	m, err := s.LoadStatusInputsMany(ctx, []string{serverID})
	if err != nil {
		return StatusInputs{}, err
	}
	in, ok := m[serverID]
	if !ok {
		return StatusInputs{}, domain.NotFound("server")
	}
	return in, nil
}

// LoadStatusInputsMany reads the status inputs of the servers ids, five
// queries per up to ingestBatch servers; servers that do not exist are
// absent from the map.
func (s *Store) LoadStatusInputsMany(ctx context.Context, ids []string) (map[string]StatusInputs, error) {
	out := make(map[string]StatusInputs, len(ids))
	for lo := 0; lo < len(ids); lo += ingestBatch {
		if err := s.loadStatusInputs(ctx, ids[lo:min(lo+ingestBatch, len(ids))], out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (s *Store) loadStatusInputs(ctx context.Context, ids []string, out map[string]StatusInputs) error {
	db := s.conn(ctx)
	// The two widest reads (every server, every facts row) are scanned
	// into plain values, without the ORM's per-field reflection: the alert
	// evaluation and the status recompute read 10,000 servers at a time.
	ins := make(map[string]*StatusInputs, len(ids))
	rows, err := db.Model(&serverRow{}).Select("id", "last_seen_at", "ssh_hardened", "firewall_active", "firewall_tool", "firewall_at").
		Where("id IN ?", ids).Rows()
	if err != nil {
		return mapErr(err, "server")
	}
	for rows.Next() {
		var id, tool string
		var seen, fwAt *time.Time
		var hardened, active bool
		if err := rows.Scan(&id, &seen, &hardened, &active, &tool, &fwAt); err != nil {
			rows.Close()
			return mapErr(err, "server")
		}
		ins[id] = &StatusInputs{LastSeenAt: seen, Findings: map[string]int{},
			SSHHardened: hardened, FirewallActive: active, FirewallTool: tool, FirewallKnown: fwAt != nil}
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return mapErr(err, "server")
	}
	if len(ins) == 0 {
		return nil
	}
	rows, err = db.Model(&serverFactsRow{}).Select("server_id", "package_manager", "packages", "updates", "security_updates",
		"reboot_required", "root_used_percent", "collected_at", "security_since").Where("server_id IN ?", ids).Rows()
	if err != nil {
		return mapErr(err, "server facts")
	}
	for rows.Next() {
		var f FactsRecord
		if err := rows.Scan(&f.ServerID, &f.PackageManager, &f.Packages, &f.Updates, &f.SecurityUpdates, &f.RebootRequired,
			&f.RootUsedPercent, &f.CollectedAt, &f.SecuritySince); err != nil {
			rows.Close()
			return mapErr(err, "server facts")
		}
		if in := ins[f.ServerID]; in != nil {
			in.Facts = &f
		}
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return mapErr(err, "server facts")
	}
	var st []serverStatusRow
	if err := db.Omit("Server").Where("server_id IN ?", ids).Find(&st).Error; err != nil {
		return mapErr(err, "server status")
	}
	for _, r := range st {
		if in := ins[r.ServerID]; in != nil {
			in.FailedContacts, in.UnreachableSince, in.ContactError = r.FailedContacts, r.UnreachableSince, r.ContactError
			in.Previous = &StatusRecord{ServerID: r.ServerID, Status: r.Status, InsightsJSON: []byte(r.Insights), InputsHash: r.InputsHash, ComputedAt: r.ComputedAt}
		}
	}
	// The last finished job per server: the newest finished_at among its
	// successful or failed jobs (ties: any of them, as before).
	finished := []string{"success", "failed"}
	var jobs []jobRow
	if err := db.Raw(`SELECT j.server_id, j.kind, j.params, j.status, j.error, j.finished_at FROM jobs j
	JOIN (SELECT server_id, MAX(finished_at) AS last FROM jobs WHERE server_id IN ? AND status IN ? GROUP BY server_id) m
	ON m.server_id = j.server_id AND m.last = j.finished_at
	WHERE j.server_id IN ? AND j.status IN ?`, ids, finished, ids, finished).Scan(&jobs).Error; err != nil {
		return mapErr(err, "jobs")
	}
	for _, j := range jobs {
		if in := ins[j.ServerID]; in != nil {
			in.LastJobKind, in.LastJobStatus, in.LastJobError, in.LastJobAt = j.Kind, j.Status, j.Error, j.FinishedAt
			in.LastJobParams = []byte(j.Params)
		}
	}
	type sev struct {
		ServerID string
		Severity string
		N        int
	}
	var sevs []sev
	if err := db.Model(&serverFindingRow{}).Select("server_id, severity, COUNT(*) AS n").Where("server_id IN ?", ids).
		Group("server_id, severity").Scan(&sevs).Error; err != nil {
		return mapErr(err, "findings")
	}
	for _, x := range sevs {
		if in := ins[x.ServerID]; in != nil {
			in.Findings[x.Severity] = x.N
		}
	}
	var severe []serverFindingRow
	if err := db.Omit("Server").Where("server_id IN ? AND severity IN ?", ids, []string{"critical", "high"}).
		Order("server_id, package, id").Find(&severe).Error; err != nil {
		return mapErr(err, "findings")
	}
	for _, r := range severe {
		if in := ins[r.ServerID]; in != nil {
			in.Severe = append(in.Severe, Finding{CVE: r.CVE, Package: r.Package, Version: r.Version, FixedIn: r.FixedIn, Severity: r.Severity})
		}
	}
	var ctrs []containerInventoryRow
	if err := db.Select("server_id", "updates").Where("server_id IN ? AND updates <> ''", ids).Find(&ctrs).Error; err != nil {
		return mapErr(err, "container updates")
	}
	for _, r := range ctrs {
		if in := ins[r.ServerID]; in != nil {
			in.ContainerUpdates = []byte(r.Updates)
		}
	}
	for id, in := range ins {
		out[id] = *in
	}
	return nil
}

// SaveStatus stores a computed status and mirrors the colour into
// servers.status (the column the server list filters on).
func (s *Store) SaveStatus(ctx context.Context, r StatusRecord) error {
	return s.SaveStatuses(ctx, []StatusRecord{r})
}

// SaveStatuses is SaveStatus for many servers, in one transaction. The
// mirror into servers.status is one statement per server, each naming its
// server, so the server list's change tracking (changes.go) refreshes
// just those.
func (s *Store) SaveStatuses(ctx context.Context, rs []StatusRecord) error {
	if len(rs) == 0 {
		return nil
	}
	last := make(map[string]int, len(rs)) // one row per server: the last record
	for i, r := range rs {
		last[r.ServerID] = i
	}
	return s.InTx(ctx, func(tx *Store) error {
		db := tx.conn(ctx)
		rows := make([]serverStatusRow, 0, len(last))
		for i, r := range rs {
			if last[r.ServerID] == i {
				rows = append(rows, serverStatusRow{ServerID: r.ServerID, Status: r.Status, Insights: string(r.InsightsJSON), InputsHash: r.InputsHash, ComputedAt: r.ComputedAt})
			}
		}
		// Key order: concurrent batches on PostgreSQL lock the rows in the
		// same order and wait for each other instead of deadlocking.
		slices.SortFunc(rows, func(a, b serverStatusRow) int { return strings.Compare(a.ServerID, b.ServerID) })
		if err := db.Omit("Server").Clauses(clause.OnConflict{
			Columns:   []clause.Column{{Name: "server_id"}},
			DoUpdates: clause.AssignmentColumns([]string{"status", "insights", "inputs_hash", "computed_at"}),
		}).CreateInBatches(rows, ingestBatch/10).Error; err != nil {
			return mapErr(err, "server status")
		}
		for _, r := range rows {
			if err := db.Model(&serverRow{}).Where("id = ?", r.ServerID).UpdateColumn("status", r.Status).Error; err != nil {
				return mapErr(err, "server")
			}
		}
		return nil
	})
}

// Contact is one contact outcome with a server (RecordContacts).
type Contact struct {
	ServerID string
	OK       bool
	Reason   string // why it failed
}

// RecordContact notes a successful (ok) or failed contact with a server:
// success resets the failure streak and stamps last_seen_at; a failure
// extends the streak and remembers since when and why.
func (s *Store) RecordContact(ctx context.Context, serverID string, ok bool, reason string, at time.Time) error {
	return s.RecordContacts(ctx, []Contact{{ServerID: serverID, OK: ok, Reason: reason}}, at)
}

// RecordContacts is RecordContact for many contacts, in order, in one
// transaction. A contact with a server that does not exist fails the
// whole call with domain.ErrNotFound, as RecordContact does.
func (s *Store) RecordContacts(ctx context.Context, cs []Contact, at time.Time) error {
	if len(cs) == 0 {
		return nil
	}
	at = at.UTC()
	return s.InTx(ctx, func(tx *Store) error {
		db := tx.conn(ctx)
		var ids []string
		seen := map[string]bool{}
		for _, c := range cs {
			if !seen[c.ServerID] {
				seen[c.ServerID] = true
				ids = append(ids, c.ServerID)
			}
		}
		slices.Sort(ids) // lock order, as in SaveStatuses
		var rows []serverStatusRow
		if err := db.Omit("Server").Where("server_id IN ?", ids).Find(&rows).Error; err != nil {
			return mapErr(err, "server status")
		}
		cur := make(map[string]*serverStatusRow, len(ids))
		for i := range rows {
			cur[rows[i].ServerID] = &rows[i]
		}
		seenOK := map[string]bool{}
		for _, c := range cs {
			row := cur[c.ServerID]
			if row == nil {
				row = &serverStatusRow{ServerID: c.ServerID, Status: "unknown", Insights: "[]", ComputedAt: at}
				cur[c.ServerID] = row
			}
			row.LastContactAt = &at
			if c.OK {
				row.FailedContacts, row.UnreachableSince, row.ContactError = 0, nil, ""
				seenOK[c.ServerID] = true
			} else {
				row.FailedContacts++
				row.ContactError = c.Reason
				if row.UnreachableSince == nil {
					row.UnreachableSince = &at
				}
			}
		}
		var n int64
		if err := db.Model(&serverRow{}).Where("id IN ?", ids).Count(&n).Error; err != nil {
			return mapErr(err, "server")
		}
		if n != int64(len(ids)) {
			return domain.NotFound("server")
		}
		for _, id := range ids {
			if !seenOK[id] {
				continue
			}
			if err := db.Model(&serverRow{}).Where("id = ?", id).UpdateColumn("last_seen_at", at).Error; err != nil {
				return mapErr(err, "server")
			}
		}
		out := make([]serverStatusRow, 0, len(ids))
		for _, id := range ids {
			out = append(out, *cur[id])
		}
		return mapErr(db.Omit("Server").Clauses(clause.OnConflict{
			Columns:   []clause.Column{{Name: "server_id"}},
			DoUpdates: clause.AssignmentColumns([]string{"failed_contacts", "unreachable_since", "contact_error", "last_contact_at"}),
		}).CreateInBatches(out, ingestBatch/10).Error, "server status")
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

// ServerFindings returns a server's findings (system use: the demo
// simulator drops the ones a simulated upgrade fixed).
func (s *Store) ServerFindings(ctx context.Context, serverID string) ([]Finding, error) {
	var rows []serverFindingRow
	if err := s.conn(ctx).Omit("Server").Where("server_id = ?", serverID).Order("id").Find(&rows).Error; err != nil {
		return nil, mapErr(err, "findings")
	}
	out := make([]Finding, len(rows))
	for i, r := range rows {
		out[i] = Finding{CVE: r.CVE, Package: r.Package, Version: r.Version, FixedIn: r.FixedIn, Severity: r.Severity}
	}
	return out, nil
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

package store

import (
	"context"

	"gorm.io/gorm"
)

// FactsJSONOf returns the stored facts document (the last refresh's JSON)
// of each server in ids that has one (system scope: callers filter
// visibility themselves). It reads at most ingestBatch ids per query.
func (s *Store) FactsJSONOf(ctx context.Context, ids []string) (map[string][]byte, error) {
	out := make(map[string][]byte, len(ids))
	for i := 0; i < len(ids); i += ingestBatch {
		var rows []serverFactsRow
		if err := s.conn(ctx).Omit("Server").Select("server_id", "facts").
			Where("server_id IN ?", ids[i:min(i+ingestBatch, len(ids))]).Find(&rows).Error; err != nil {
			return nil, mapErr(err, "server facts")
		}
		for _, r := range rows {
			out[r.ServerID] = []byte(r.Facts)
		}
	}
	return out, nil
}

// VisibleGroups returns the groups whose servers sc sees (the groups the
// user manages: the same rule as applyServerScope). For an unrestricted
// scope it returns nil and all=true. The MCP view filters its cached
// servers by their group ids with it: one small indexed query per request
// instead of the ids of every visible server.
func (s *Store) VisibleGroups(ctx context.Context, sc Scope) (groups map[string]bool, all bool, err error) {
	if sc.all {
		return nil, true, nil
	}
	groups = map[string]bool{}
	if sc.userID == "" {
		return groups, false, nil
	}
	var list []string
	if err := s.conn(ctx).Model(&groupManagerRow{}).Where("user_id = ?", sc.userID).Pluck("group_id", &list).Error; err != nil {
		return nil, false, mapErr(err, "group managers")
	}
	for _, id := range list {
		groups[id] = true
	}
	return groups, false, nil
}

// FindingRecord is one vulnerability finding with its server.
type FindingRecord struct {
	ServerID string
	Finding
}

// FindingsFilter narrows ListFindings.
type FindingsFilter struct {
	ServerIDs []string // empty: every visible server
	Severity  string
	Package   string
	CVE       string
	FixOnly   bool // only findings with a fixed version
	Limit     int
	Offset    int
}

// ListFindings returns the vulnerability findings of servers visible in
// sc, newest ingest order, with the total that match the filter.
func (s *Store) ListFindings(ctx context.Context, sc Scope, f FindingsFilter) ([]FindingRecord, int64, error) {
	q := applyServerScope(s.conn(ctx).Model(&serverFindingRow{}), "server_id", sc)
	if len(f.ServerIDs) > 0 {
		q = q.Where("server_id IN ?", f.ServerIDs)
	}
	if f.Severity != "" {
		q = q.Where("severity = ?", f.Severity)
	}
	if f.Package != "" {
		q = q.Where("package = ?", f.Package)
	}
	if f.CVE != "" {
		q = q.Where("cve = ?", f.CVE)
	}
	if f.FixOnly {
		q = q.Where("fixed_in <> ''")
	}
	var total int64
	if err := q.Session(&gorm.Session{}).Count(&total).Error; err != nil {
		return nil, 0, mapErr(err, "findings")
	}
	var rows []serverFindingRow
	if err := q.Omit("Server").Order("id").Limit(f.Limit).Offset(f.Offset).Find(&rows).Error; err != nil {
		return nil, 0, mapErr(err, "findings")
	}
	out := make([]FindingRecord, len(rows))
	for i, r := range rows {
		out[i] = FindingRecord{ServerID: r.ServerID, Finding: Finding{CVE: r.CVE, Package: r.Package, Version: r.Version, FixedIn: r.FixedIn, Severity: r.Severity}}
	}
	return out, total, nil
}

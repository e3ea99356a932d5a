package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"sort"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm/clause"

	"github.com/lcmproject/lcm/internal/domain"
)

// Vulnerability finding states.
const (
	VulnNew          = "new"
	VulnAcknowledged = "acknowledged"
	VulnFixed        = "fixed"
)

// VulnFinding is one stored finding.
type VulnFinding struct {
	ID                                                    uint64
	ServerID, ServerName                                  string
	Advisory, Package, Source, Installed, Fixed, Severity string
	Container                                             string // "docker/web": found in that container; "" = on the host
	CVEs                                                  []string
	CVSS                                                  float64
	Summary, Ecosystem, State                             string
	FirstSeenAt, LastSeenAt                               time.Time
	AcknowledgedAt, FixedAt                               *time.Time
	AcknowledgedBy                                        string
}

// ScanOutcome is one server's scan result to store.
type ScanOutcome struct {
	ServerID string
	Engine   string
	Findings []VulnFinding // Advisory, Package, … (state and dates are set here)
}

// ApplyScan stores a scan of a server: findings seen again keep their
// state (a fixed one that is back becomes new), new ones are added, open
// ones no longer found become fixed. The open findings (new and
// acknowledged) replace server_findings, which the traffic light reads.
//
// A rescan that finds exactly what the last one stored (same digest)
// only moves the scan's time. Otherwise it mostly finds what the last one
// found: such rows are not written at all (an open finding was last seen at its server's last scan,
// vuln_scans.scanned_at, which VulnFindings reports); new and changed rows
// are written with multi-row upserts on the finding's key, fixed ones with
// one UPDATE per 1,000; server_findings is rewritten only when the open
// set changed (BenchmarkApplyScanRescan).
func (s *Store) ApplyScan(ctx context.Context, o ScanOutcome, at time.Time) error {
	digest := scanDigest(o.Findings)
	return s.InTx(ctx, func(tx *Store) error {
		db := tx.conn(ctx)
		// The same findings as the last scan stored: nothing changes but
		// the scan's time (an open finding's last_seen_at is read from it).
		var last []vulnScanRow
		if err := db.Omit("Server").Select("server_id", "digest", "error").Where("server_id = ?", o.ServerID).Limit(1).Find(&last).Error; err != nil {
			return mapErr(err, "vulnerability scan")
		}
		if len(last) == 1 && last[0].Digest == digest && last[0].Error == "" {
			return mapErr(db.Model(&vulnScanRow{}).Where("server_id = ?", o.ServerID).
				Updates(map[string]any{"scanned_at": at, "engine": o.Engine}).Error, "vulnerability scan")
		}
		cur, err := tx.serverVulnRows(ctx, o.ServerID)
		if err != nil {
			return err
		}
		byKey := make(map[string]*vulnFindingRow, len(cur))
		for i := range cur {
			byKey[findingKey(cur[i].Advisory, cur[i].Package, cur[i].Container)] = &cur[i]
		}
		seen := make(map[string]bool, len(o.Findings))
		var upsert []vulnFindingRow // new, or changed beyond last_seen_at
		open := make([]Finding, 0, len(o.Findings))
		for _, f := range o.Findings {
			k := findingKey(trunc(f.Advisory, 128), trunc(f.Package, 255), trunc(f.Container, 160))
			if seen[k] {
				continue
			}
			seen[k] = true
			next := vulnFindingRow{ServerID: o.ServerID, Advisory: trunc(f.Advisory, 128), Package: trunc(f.Package, 255),
				Container: trunc(f.Container, 160), State: VulnNew, FirstSeenAt: at}
			old, ok := byKey[k]
			if ok {
				next = *old
				if old.State == VulnFixed {
					next.State, next.FixedAt, next.AcknowledgedAt, next.AcknowledgedBy, next.FirstSeenAt = VulnNew, nil, nil, "", at
				}
			}
			next.CVEs, next.Source, next.Installed, next.Fixed = trunc(strings.Join(f.CVEs, ","), 2048), trunc(f.Source, 255), trunc(f.Installed, 255), trunc(f.Fixed, 255)
			next.Severity, next.CVSS, next.Summary, next.Ecosystem, next.LastSeenAt = f.Severity, f.CVSS, trunc(f.Summary, 512), trunc(f.Ecosystem, 128), at
			if !ok || !sameFinding(*old, next) {
				next.ID = 0 // the upsert finds an existing row by its key
				upsert = append(upsert, next)
			}
			cve := f.Advisory
			if len(f.CVEs) > 0 {
				cve = f.CVEs[0]
			}
			open = append(open, Finding{CVE: trunc(cve, 64), Package: f.Package, Version: f.Installed, FixedIn: f.Fixed, Severity: f.Severity})
		}
		if len(upsert) > 0 {
			err := db.Omit("Server").Clauses(clause.OnConflict{
				Columns: []clause.Column{{Name: "server_id"}, {Name: "advisory"}, {Name: "package"}, {Name: "container"}},
				DoUpdates: clause.AssignmentColumns([]string{"cves", "source", "installed", "fixed", "severity", "cvss", "summary",
					"ecosystem", "state", "first_seen_at", "last_seen_at", "acknowledged_at", "acknowledged_by", "fixed_at"}),
			}).CreateInBatches(upsert, ingestBatch/10).Error
			if err != nil {
				return mapErr(err, "vulnerability findings")
			}
		}
		var gone []uint64
		for k, r := range byKey {
			if !seen[k] && r.State != VulnFixed {
				gone = append(gone, r.ID)
			}
		}
		for i := 0; i < len(gone); i += ingestBatch {
			if err := db.Model(&vulnFindingRow{}).Where("id IN ?", gone[i:min(i+ingestBatch, len(gone))]).
				Updates(map[string]any{"state": VulnFixed, "fixed_at": at}).Error; err != nil {
				return mapErr(err, "vulnerability findings")
			}
		}
		if len(upsert) > 0 || len(gone) > 0 || !tx.findingsCount(ctx, o.ServerID, len(open)) {
			if err := tx.syncFindings(ctx, o.ServerID, open); err != nil {
				return err
			}
		}
		return mapErr(db.Omit("Server").Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "server_id"}},
			DoUpdates: clause.AssignmentColumns([]string{"scanned_at", "engine", "findings", "error", "digest"})}).
			Create(&vulnScanRow{ServerID: o.ServerID, ScannedAt: at, Engine: o.Engine, Findings: len(open), Digest: digest}).Error, "vulnerability scan")
	})
}

// scanDigest is the SHA-256 of a scan's findings as ApplyScan stores them
// (truncated, first of each key), in key order.
func scanDigest(fs []VulnFinding) string {
	lines := make([]string, 0, len(fs))
	seen := make(map[string]bool, len(fs))
	for _, f := range fs {
		k := findingKey(trunc(f.Advisory, 128), trunc(f.Package, 255), trunc(f.Container, 160))
		if seen[k] {
			continue
		}
		seen[k] = true
		lines = append(lines, strings.Join([]string{k, trunc(strings.Join(f.CVEs, ","), 2048), trunc(f.Source, 255),
			trunc(f.Installed, 255), trunc(f.Fixed, 255), f.Severity, strconv.FormatFloat(f.CVSS, 'g', -1, 64),
			trunc(f.Summary, 512), trunc(f.Ecosystem, 128)}, "\x00"))
	}
	sort.Strings(lines)
	h := sha256.New()
	for _, l := range lines {
		h.Write([]byte(l))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// serverVulnRows reads a server's findings with database/sql's scanner
// (gorm's reflection costs more than the query at 3,000 rows a server).
func (s *Store) serverVulnRows(ctx context.Context, serverID string) ([]vulnFindingRow, error) {
	rows, err := s.conn(ctx).Model(&vulnFindingRow{}).Select("id", "advisory", "package", "container", "cves", "source",
		"installed", "fixed", "severity", "cvss", "summary", "ecosystem", "state", "first_seen_at", "last_seen_at",
		"acknowledged_at", "acknowledged_by", "fixed_at").Where("server_id = ?", serverID).Rows()
	if err != nil {
		return nil, mapErr(err, "vulnerability findings")
	}
	defer rows.Close()
	var out []vulnFindingRow
	for rows.Next() {
		r := vulnFindingRow{ServerID: serverID}
		var ack, fixed sql.NullTime
		if err := rows.Scan(&r.ID, &r.Advisory, &r.Package, &r.Container, &r.CVEs, &r.Source, &r.Installed, &r.Fixed,
			&r.Severity, &r.CVSS, &r.Summary, &r.Ecosystem, &r.State, &r.FirstSeenAt, &r.LastSeenAt, &ack,
			&r.AcknowledgedBy, &fixed); err != nil {
			return nil, mapErr(err, "vulnerability findings")
		}
		if ack.Valid {
			r.AcknowledgedAt = &ack.Time
		}
		if fixed.Valid {
			r.FixedAt = &fixed.Time
		}
		out = append(out, r)
	}
	return out, mapErr(rows.Err(), "vulnerability findings")
}

// sameFinding reports whether a stored finding and its rescan differ only
// in last_seen_at (timestamps compared as instants: databases round them).
// last_seen_at of an open finding is not stored on every scan: it is the
// server's last scan time.
func sameFinding(a, b vulnFindingRow) bool {
	sameTime := func(x, y *time.Time) bool {
		return (x == nil) == (y == nil) && (x == nil || x.Equal(*y))
	}
	return a.State == b.State && a.CVEs == b.CVEs && a.Source == b.Source && a.Installed == b.Installed &&
		a.Fixed == b.Fixed && a.Severity == b.Severity && a.CVSS == b.CVSS && a.Summary == b.Summary &&
		a.Ecosystem == b.Ecosystem && a.FirstSeenAt.Equal(b.FirstSeenAt) && a.AcknowledgedBy == b.AcknowledgedBy &&
		sameTime(a.AcknowledgedAt, b.AcknowledgedAt) && sameTime(a.FixedAt, b.FixedAt)
}

// syncFindings makes server_findings hold exactly fs for the server,
// deleting and inserting only the difference (a rescan after a database
// update changes a few of thousands).
func (s *Store) syncFindings(ctx context.Context, serverID string, fs []Finding) error {
	db := s.conn(ctx)
	var rows []serverFindingRow
	if err := db.Omit("Server").Where("server_id = ?", serverID).Find(&rows).Error; err != nil {
		return mapErr(err, "findings")
	}
	want := make(map[Finding]int, len(fs))
	for _, f := range fs {
		want[f]++
	}
	var del []uint64
	for _, r := range rows {
		f := Finding{CVE: r.CVE, Package: r.Package, Version: r.Version, FixedIn: r.FixedIn, Severity: r.Severity}
		if want[f] > 0 {
			want[f]--
			continue
		}
		del = append(del, r.ID)
	}
	for i := 0; i < len(del); i += ingestBatch {
		if err := db.Where("id IN ?", del[i:min(i+ingestBatch, len(del))]).Delete(&serverFindingRow{}).Error; err != nil {
			return mapErr(err, "findings")
		}
	}
	var add []serverFindingRow
	for _, f := range fs {
		if want[f] > 0 {
			want[f]--
			add = append(add, serverFindingRow{ServerID: serverID, CVE: f.CVE, Package: f.Package, Version: f.Version, FixedIn: f.FixedIn, Severity: f.Severity})
		}
	}
	if len(add) == 0 {
		return nil
	}
	return mapErr(db.Omit("Server").CreateInBatches(add, ingestBatch).Error, "findings")
}

// findingsCount reports whether server_findings holds n rows for the
// server. ApplyScan is its only writer outside the demo, so when no
// finding was added, changed or fixed, an equal count means the open set
// is already there and need not be rewritten.
func (s *Store) findingsCount(ctx context.Context, serverID string, n int) bool {
	var cur int64
	if err := s.conn(ctx).Model(&serverFindingRow{}).Where("server_id = ?", serverID).Count(&cur).Error; err != nil {
		return false
	}
	return cur == int64(n)
}

// findingKey identifies a finding of a server: an advisory on a package,
// on the host or in one container.
func findingKey(advisory, pkg, container string) string {
	return advisory + "\x00" + pkg + "\x00" + container
}

func trunc(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// VulnFilter selects findings.
type VulnFilter struct {
	ServerID    string
	MinSeverity int    // 0 = all; 1 low … 4 critical
	Package     string // exact package name
	CVE         string // substring of the advisory or CVE ids
	FixOnly     bool   // only findings with a fixed version
	States      []string
	Limit       int
	Offset      int
}

// severitiesFrom lists the severities at or above rank.
func severitiesFrom(rank int) []string {
	all := []string{"unknown", "low", "medium", "high", "critical"}
	if rank <= 0 {
		return all
	}
	return all[min(rank, 4):]
}

// VulnFindings lists findings of servers visible in sc, most severe first,
// with the number matching.
func (s *Store) VulnFindings(ctx context.Context, sc Scope, f VulnFilter) ([]VulnFinding, int64, error) {
	q := applyServerScope(s.conn(ctx).Model(&vulnFindingRow{}), "server_id", sc)
	if f.ServerID != "" {
		q = q.Where("server_id = ?", f.ServerID)
	}
	if f.MinSeverity > 0 {
		q = q.Where("severity IN ?", severitiesFrom(f.MinSeverity))
	}
	if f.Package != "" {
		q = q.Where("package = ?", f.Package)
	}
	if f.CVE != "" {
		like := "%" + strings.NewReplacer("%", "", "_", "").Replace(strings.ToUpper(f.CVE)) + "%"
		q = q.Where("(UPPER(advisory) LIKE ? OR UPPER(cves) LIKE ?)", like, like)
	}
	if f.FixOnly {
		q = q.Where("fixed <> ''")
	}
	if len(f.States) > 0 {
		q = q.Where("state IN ?", f.States)
	}
	var total int64
	if err := q.Count(&total).Error; err != nil {
		return nil, 0, mapErr(err, "vulnerability findings")
	}
	var rows []vulnFindingRow
	lim := f.Limit
	if lim <= 0 {
		lim = 500
	}
	err := q.Omit("Server").
		Order(`CASE severity WHEN 'critical' THEN 0 WHEN 'high' THEN 1 WHEN 'medium' THEN 2 WHEN 'low' THEN 3 ELSE 4 END, package, advisory, container, id`).
		Limit(lim).Offset(f.Offset).Find(&rows).Error
	if err != nil {
		return nil, 0, mapErr(err, "vulnerability findings")
	}
	// Server names are stored encrypted: read them through the server layer.
	seen := map[string]bool{}
	var ids []string
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
	scanned, err := s.lastScans(ctx, ids)
	if err != nil {
		return nil, 0, err
	}
	out := make([]VulnFinding, len(rows))
	for i, r := range rows {
		out[i] = toVulnFinding(r)
		out[i].ServerName = names[r.ServerID]
		// An open finding was seen by its server's last scan (ApplyScan
		// does not rewrite unchanged rows).
		if at, ok := scanned[r.ServerID]; ok && r.State != VulnFixed && at.After(out[i].LastSeenAt) {
			out[i].LastSeenAt = at
		}
	}
	return out, total, nil
}

// lastScans returns the time of the last stored scan of each server.
func (s *Store) lastScans(ctx context.Context, ids []string) (map[string]time.Time, error) {
	out := make(map[string]time.Time, len(ids))
	for i := 0; i < len(ids); i += ingestBatch {
		var rows []vulnScanRow
		if err := s.conn(ctx).Omit("Server").Select("server_id", "scanned_at").Where("server_id IN ?", ids[i:min(i+ingestBatch, len(ids))]).
			Find(&rows).Error; err != nil {
			return nil, mapErr(err, "vulnerability scans")
		}
		for _, r := range rows {
			out[r.ServerID] = r.ScannedAt
		}
	}
	return out, nil
}

func toVulnFinding(r vulnFindingRow) VulnFinding {
	var cves []string
	if r.CVEs != "" {
		cves = strings.Split(r.CVEs, ",")
	}
	return VulnFinding{ID: r.ID, ServerID: r.ServerID, Advisory: r.Advisory, Package: r.Package, Source: r.Source,
		Container: r.Container, Installed: r.Installed, Fixed: r.Fixed, Severity: r.Severity, CVEs: cves, CVSS: r.CVSS, Summary: r.Summary,
		Ecosystem: r.Ecosystem, State: r.State, FirstSeenAt: r.FirstSeenAt, LastSeenAt: r.LastSeenAt,
		AcknowledgedAt: r.AcknowledgedAt, AcknowledgedBy: r.AcknowledgedBy, FixedAt: r.FixedAt}
}

// AcknowledgeVuln marks an open finding of a visible server acknowledged
// and returns it. A fixed finding cannot be acknowledged (conflict).
func (s *Store) AcknowledgeVuln(ctx context.Context, sc Scope, id uint64, by string, at time.Time) (VulnFinding, error) {
	var out VulnFinding
	err := s.InTx(ctx, func(tx *Store) error {
		var rows []vulnFindingRow
		q := applyServerScope(tx.conn(ctx).Omit("Server").Model(&vulnFindingRow{}), "server_id", sc)
		if err := q.Where("id = ?", id).Limit(1).Find(&rows).Error; err != nil {
			return mapErr(err, "vulnerability finding")
		}
		if len(rows) == 0 {
			return domain.NotFound("vulnerability finding")
		}
		r := rows[0]
		if r.State == VulnFixed {
			return domain.Conflict("finding_fixed", "the finding is fixed; there is nothing to acknowledge")
		}
		if r.State == VulnNew {
			r.State, r.AcknowledgedAt, r.AcknowledgedBy = VulnAcknowledged, &at, trunc(by, 255)
			if err := tx.conn(ctx).Omit("Server").Save(&r).Error; err != nil {
				return mapErr(err, "vulnerability finding")
			}
		}
		out = toVulnFinding(r)
		return nil
	})
	return out, err
}

// VulnerablePackage is one vulnerable (package, installed, fixed) across
// the visible fleet, on hosts or in containers of one name (Container,
// "docker/web"): a container's package never merges with the host's.
type VulnerablePackage struct {
	Package, Installed, Fixed, Severity string
	Container                           string
	Advisories, CVEs                    []string
	ServerIDs                           []string
}

// VulnerablePackages groups the open findings of visible servers by
// package, installed and fixed version and container (most severe first).
func (s *Store) VulnerablePackages(ctx context.Context, sc Scope, f VulnFilter) ([]VulnerablePackage, error) {
	f.States, f.Limit, f.Offset = []string{VulnNew, VulnAcknowledged}, 100000, 0
	list, _, err := s.VulnFindings(ctx, sc, f)
	if err != nil {
		return nil, err
	}
	type acc struct {
		p             VulnerablePackage
		adv, cve, srv map[string]bool
		rank          int
	}
	rank := map[string]int{"low": 1, "medium": 2, "high": 3, "critical": 4}
	groups := map[string]*acc{}
	var order []string
	for _, v := range list {
		k := v.Package + "\x00" + v.Installed + "\x00" + v.Fixed + "\x00" + v.Container
		a := groups[k]
		if a == nil {
			a = &acc{p: VulnerablePackage{Package: v.Package, Installed: v.Installed, Fixed: v.Fixed, Severity: v.Severity, Container: v.Container},
				adv: map[string]bool{}, cve: map[string]bool{}, srv: map[string]bool{}, rank: -1}
			groups[k] = a
			order = append(order, k)
		}
		if rank[v.Severity] > a.rank {
			a.rank, a.p.Severity = rank[v.Severity], v.Severity
		}
		a.adv[v.Advisory] = true
		for _, c := range v.CVEs {
			a.cve[c] = true
		}
		a.srv[v.ServerID] = true
	}
	keys := func(m map[string]bool) []string {
		out := make([]string, 0, len(m))
		for k := range m {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	out := make([]VulnerablePackage, 0, len(order))
	for _, k := range order {
		a := groups[k]
		a.p.Advisories, a.p.CVEs, a.p.ServerIDs = keys(a.adv), keys(a.cve), keys(a.srv)
		out = append(out, a.p)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if ri, rj := rank[out[i].Severity], rank[out[j].Severity]; ri != rj {
			return ri > rj
		}
		return len(out[i].ServerIDs) > len(out[j].ServerIDs)
	})
	return out, nil
}

// VulnScan is the last scan of a server.
type VulnScan struct {
	ServerID  string
	ScannedAt time.Time
	Engine    string
	Findings  int
}

// LastVulnScan returns the newest scan time over all servers (nil: none).
func (s *Store) LastVulnScan(ctx context.Context) (*time.Time, error) {
	var rows []vulnScanRow
	if err := s.conn(ctx).Omit("Server").Order("scanned_at DESC").Limit(1).Find(&rows).Error; err != nil {
		return nil, mapErr(err, "vulnerability scans")
	}
	if len(rows) == 0 {
		return nil, nil
	}
	t := rows[0].ScannedAt
	return &t, nil
}

// VulnScanOf returns a server's last scan (nil: never scanned).
func (s *Store) VulnScanOf(ctx context.Context, serverID string) (*VulnScan, error) {
	var rows []vulnScanRow
	if err := s.conn(ctx).Omit("Server").Where("server_id = ?", serverID).Limit(1).Find(&rows).Error; err != nil {
		return nil, mapErr(err, "vulnerability scans")
	}
	if len(rows) == 0 {
		return nil, nil
	}
	r := rows[0]
	return &VulnScan{ServerID: r.ServerID, ScannedAt: r.ScannedAt, Engine: r.Engine, Findings: r.Findings}, nil
}

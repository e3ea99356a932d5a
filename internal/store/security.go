package store

import (
	"context"
	"sort"
	"strings"
	"time"

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

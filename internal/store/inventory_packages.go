package store

import (
	"context"
	"fmt"
	"sort"
	"time"

	"gorm.io/gorm"

	"github.com/lcmproject/lcm/internal/domain"
)

// ingestBatch bounds the rows per GORM batch insert and the ids per IN
// list: 1,000 stays far below PostgreSQL's 65,535 and SQLite's 32,766
// bound parameters.
const ingestBatch = 1000

// PackageRecord is one installed package of a server.
type PackageRecord struct {
	Name, Version, Arch, Source, Manager string
}

// OutdatedRecord is one package with a newer candidate.
type OutdatedRecord struct {
	Name, Arch, Current, Candidate string
	Security                       bool
	Held                           bool // on hold: upgrades keep it back
}

// FactsRecord is the stored result of a refresh.
type FactsRecord struct {
	ServerID        string
	FactsJSON       []byte
	PackageManager  string
	Packages        int
	Updates         int
	SecurityUpdates int
	RebootRequired  bool
	RootUsedPercent float64 // -1 when unknown
	CollectedAt     time.Time
	SecuritySince   *time.Time
	// InventoryDigest identifies Packages and Outdated (pkgmgr's
	// Inventory.Digest); with InventoryIngest.Unchanged it names the stored
	// inventory the refresh found unchanged.
	InventoryDigest string
}

// ServerVisible reports domain.ErrNotFound unless the server exists and sc
// sees it: every per-server inventory read starts here.
func (s *Store) ServerVisible(ctx context.Context, sc Scope, id string) error {
	var n int64
	q := applyServerScope(s.conn(ctx).Model(&serverRow{}), "id", sc)
	if err := q.Where("id = ?", id).Count(&n).Error; err != nil {
		return mapErr(err, "server")
	}
	if n == 0 {
		return domain.NotFound("server")
	}
	return nil
}

// ServerFacts returns the last refresh of a visible server; ErrNotFound
// when it was never refreshed.
func (s *Store) ServerFactsOf(ctx context.Context, sc Scope, id string) (FactsRecord, error) {
	if err := s.ServerVisible(ctx, sc, id); err != nil {
		return FactsRecord{}, err
	}
	var rows []serverFactsRow
	if err := s.conn(ctx).Omit("Server").Where("server_id = ?", id).Limit(1).Find(&rows).Error; err != nil {
		return FactsRecord{}, mapErr(err, "server facts")
	}
	if len(rows) == 0 {
		return FactsRecord{}, domain.NotFound("inventory (the server has not been refreshed yet)")
	}
	r := rows[0]
	return FactsRecord{ServerID: r.ServerID, FactsJSON: []byte(r.Facts), PackageManager: r.PackageManager,
		Packages: r.Packages, Updates: r.Updates, SecurityUpdates: r.SecurityUpdates, RebootRequired: r.RebootRequired,
		RootUsedPercent: r.RootUsedPercent, CollectedAt: r.CollectedAt, SecuritySince: r.SecuritySince, InventoryDigest: r.InventoryDigest}, nil
}

// ServerPackages lists a visible server's packages by name and arch.
func (s *Store) ServerPackages(ctx context.Context, sc Scope, id string) ([]PackageRecord, error) {
	if err := s.ServerVisible(ctx, sc, id); err != nil {
		return nil, err
	}
	var rows []PackageRecord
	if err := s.conn(ctx).Raw(`SELECT pv.name, pv.version, pv.arch, pv.source, pv.manager
	FROM inventory_servers i JOIN server_packages sp ON sp.server_num = i.num JOIN package_versions pv ON pv.id = sp.pkg_id
	WHERE i.server_id = ? ORDER BY pv.name, pv.arch, pv.version`, id).Scan(&rows).Error; err != nil {
		return nil, mapErr(err, "packages")
	}
	if rows == nil {
		rows = []PackageRecord{}
	}
	return rows, nil
}

// ServerOutdated lists a visible server's outdated packages by name.
func (s *Store) ServerOutdated(ctx context.Context, sc Scope, id string) ([]OutdatedRecord, error) {
	if err := s.ServerVisible(ctx, sc, id); err != nil {
		return nil, err
	}
	var rows []serverOutdatedRow
	if err := s.conn(ctx).Omit("Server").Where("server_id = ?", id).Order("name, arch").Find(&rows).Error; err != nil {
		return nil, mapErr(err, "outdated packages")
	}
	out := make([]OutdatedRecord, len(rows))
	for i, r := range rows {
		out[i] = OutdatedRecord{Name: r.Name, Arch: r.Arch, Current: r.Current, Candidate: r.Candidate, Security: r.Security, Held: r.Held}
	}
	return out, nil
}

// OverviewFilter selects package names for the fleet overview.
type OverviewFilter struct {
	Name   string // exact package name
	Prefix string // name prefix
	Limit  int
	Offset int
}

// PackageVersionCount is one version of a package in the fleet.
type PackageVersionCount struct {
	Version   string
	ServerIDs []string
}

// PackageOverview is one package name across the visible fleet.
type PackageOverview struct {
	Name     string
	Versions []PackageVersionCount
}

// PackageOverview lists, per package name (paged by name), which versions
// the servers visible in sc run and on which servers. It also returns the
// number of matching names.
func (s *Store) PackageOverview(ctx context.Context, sc Scope, f OverviewFilter) ([]PackageOverview, int64, error) {
	// Both queries loop over the (visible) servers and, per server, over
	// the catalog's versions of a name, seeking (server_num, pkg_id) in
	// the clustered key (CROSS JOIN fixes that join order on SQLite);
	// server_packages has no fleet-wide package index on purpose.
	const join = "CROSS JOIN inventory_servers i CROSS JOIN package_versions pv CROSS JOIN server_packages sp"
	const on = "i.server_id = sv.id AND sp.server_num = i.num AND sp.pkg_id = pv.id"
	has := applyServerScope(s.conn(ctx).Table("servers sv").Select("1").Joins(join).
		Where("pv.name = package_names.name AND "+on), "sv.id", sc)
	q := s.conn(ctx).Model(&packageNameRow{}).Where("EXISTS (?)", has)
	switch {
	case f.Name != "":
		q = q.Where("name = ?", f.Name)
	case f.Prefix != "":
		q = q.Where("name LIKE ?", likePrefix(f.Prefix))
	}
	var total int64
	if err := q.Session(&gorm.Session{}).Count(&total).Error; err != nil {
		return nil, 0, mapErr(err, "package overview")
	}
	var names []string
	if err := q.Session(&gorm.Session{}).Order("name").Limit(f.Limit).Offset(f.Offset).Pluck("name", &names).Error; err != nil {
		return nil, 0, mapErr(err, "package overview")
	}
	if len(names) == 0 {
		return []PackageOverview{}, total, nil
	}
	type row struct{ Name, Version, ServerID string }
	var rows []row
	q2 := applyServerScope(s.conn(ctx).Table("servers sv").Joins(join), "sv.id", sc)
	if err := q2.Select("DISTINCT pv.name AS name, pv.version AS version, sv.id AS server_id").
		Where("pv.name IN ? AND "+on, names).
		Order("name, version, server_id").Scan(&rows).Error; err != nil {
		return nil, 0, mapErr(err, "package overview")
	}
	idx := map[string]int{}
	out := make([]PackageOverview, 0, len(names))
	for _, n := range names {
		idx[n] = len(out)
		out = append(out, PackageOverview{Name: n})
	}
	for _, r := range rows {
		po := &out[idx[r.Name]]
		if l := len(po.Versions); l == 0 || po.Versions[l-1].Version != r.Version {
			po.Versions = append(po.Versions, PackageVersionCount{Version: r.Version})
		}
		v := &po.Versions[len(po.Versions)-1]
		v.ServerIDs = append(v.ServerIDs, r.ServerID)
	}
	for i := range out {
		sort.SliceStable(out[i].Versions, func(a, b int) bool { return len(out[i].Versions[a].ServerIDs) > len(out[i].Versions[b].ServerIDs) })
	}
	return out, total, nil
}

// likePrefix escapes LIKE wildcards in a prefix.
func likePrefix(p string) string {
	r := []rune{}
	for _, c := range p {
		if c == '%' || c == '_' || c == '\\' {
			continue
		}
		r = append(r, c)
	}
	return fmt.Sprintf("%s%%", string(r))
}

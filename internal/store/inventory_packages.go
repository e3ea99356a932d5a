package store

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

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
}

// InventoryIngest is everything one refresh stores, in one transaction.
type InventoryIngest struct {
	Facts    FactsRecord
	Packages []PackageRecord
	Outdated []OutdatedRecord
}

// IngestStats says what an ingest changed.
type IngestStats struct {
	Inserted, Deleted, Unchanged int
}

// IngestInventory replaces a server's facts, packages and outdated packages
// in one transaction. Packages are diffed against the stored set so a
// refresh that changed three packages writes six rows, not 1,500; the first
// ingest is a bulk insert. SecuritySince is carried over while security
// updates stay pending.
func (s *Store) IngestInventory(ctx context.Context, in InventoryIngest) (IngestStats, error) {
	var stats IngestStats
	id := in.Facts.ServerID
	err := s.InTx(ctx, func(tx *Store) error {
		db := tx.conn(ctx)
		// FOR SHARE holds off a concurrent delete of the server until the
		// packages are in, so its cascade trigger sees them (PostgreSQL;
		// SQLite has one writer).
		lock := ""
		if tx.dialect == Postgres {
			lock = " FOR SHARE"
		}
		var ids []string
		if err := db.Raw("SELECT id FROM servers WHERE id = ?"+lock, id).Scan(&ids).Error; err != nil {
			return mapErr(err, "server")
		}
		if len(ids) == 0 {
			return domain.NotFound("server")
		}
		var prev []serverFactsRow
		if err := db.Select("server_id", "security_since").Where("server_id = ?", id).Limit(1).Find(&prev).Error; err != nil {
			return mapErr(err, "server facts")
		}
		f := in.Facts
		switch {
		case f.SecurityUpdates == 0:
			f.SecuritySince = nil
		case len(prev) == 1 && prev[0].SecuritySince != nil:
			f.SecuritySince = prev[0].SecuritySince
		case f.SecuritySince == nil:
			t := f.CollectedAt
			f.SecuritySince = &t
		}
		row := serverFactsRow{ServerID: id, Facts: string(f.FactsJSON), PackageManager: f.PackageManager,
			Packages: f.Packages, Updates: f.Updates, SecurityUpdates: f.SecurityUpdates, RebootRequired: f.RebootRequired,
			RootUsedPercent: f.RootUsedPercent, CollectedAt: f.CollectedAt, SecuritySince: f.SecuritySince}
		if err := db.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "server_id"}}, UpdateAll: true}).
			Omit("Server").Create(&row).Error; err != nil {
			return mapErr(err, "server facts")
		}
		var err error
		if stats, err = tx.replacePackages(ctx, id, in.Packages); err != nil {
			return err
		}
		return tx.replaceOutdated(ctx, id, in.Outdated)
	})
	return stats, err
}

// pkgKey is a package's identity within a server: the primary key.
func pkgKey(p PackageRecord) string {
	return p.Name + "\x00" + p.Arch + "\x00" + p.Version
}

var packageCols = []string{"server_id", "name", "arch", "version", "source", "manager"}

// replacePackages makes the stored set of server id equal pkgs. The first
// ingest of a server (nothing stored) is a plain bulk insert; later ones
// read the server's rows (one key range) and write only the difference.
// Duplicate keys in pkgs collapse to their first occurrence.
func (s *Store) replacePackages(ctx context.Context, id string, pkgs []PackageRecord) (IngestStats, error) {
	db := s.conn(ctx)
	seen := make(map[string]int, len(pkgs))
	uniq := make([]PackageRecord, 0, len(pkgs))
	for _, p := range pkgs {
		k := pkgKey(p)
		if _, dup := seen[k]; dup {
			continue
		}
		seen[k] = len(uniq)
		uniq = append(uniq, p)
	}
	var old []serverPackageRow
	if err := db.Select(packageCols).Where("server_id = ?", id).Find(&old).Error; err != nil {
		return IngestStats{}, mapErr(err, "packages")
	}
	add, stale := slices.Clone(uniq), []PackageRecord(nil)
	if len(old) > 0 {
		keep := make([]bool, len(uniq))
		for _, r := range old {
			o := PackageRecord{Name: r.Name, Version: r.Version, Arch: r.Arch, Source: r.Source, Manager: r.Manager}
			if i, ok := seen[pkgKey(o)]; ok && uniq[i] == o {
				keep[i] = true
				continue
			}
			stale = append(stale, o)
		}
		add = nil
		for i, p := range uniq {
			if !keep[i] {
				add = append(add, p)
			}
		}
	}
	// Key order turns the inserts into a walk along one key range.
	sort.Slice(add, func(i, j int) bool {
		a, b := add[i], add[j]
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		if a.Arch != b.Arch {
			return a.Arch < b.Arch
		}
		return a.Version < b.Version
	})
	if err := s.deletePackages(ctx, id, stale); err != nil {
		return IngestStats{}, err
	}
	if err := s.bulkInsert(ctx, "server_packages", packageCols, "", len(add),
		func(i int) []any { p := add[i]; return []any{id, p.Name, p.Arch, p.Version, p.Source, p.Manager} }); err != nil {
		return IngestStats{}, err
	}
	if len(add) > 0 {
		// The catalog learns new names in-engine: no parameters to bind.
		if err := db.Exec("INSERT INTO package_names (name) SELECT DISTINCT name FROM server_packages WHERE server_id = ? ON CONFLICT DO NOTHING", id).Error; err != nil {
			return IngestStats{}, mapErr(err, "package names")
		}
	}
	return IngestStats{Inserted: len(add), Deleted: len(stale), Unchanged: len(old) - len(stale)}, nil
}

// deletePackages deletes rows by key, a batch per statement.
func (s *Store) deletePackages(ctx context.Context, id string, rows []PackageRecord) error {
	const batch = 100 // 3 parameters each plus the server id
	db := s.conn(ctx)
	for lo := 0; lo < len(rows); lo += batch {
		hi := min(lo+batch, len(rows))
		args := []any{id}
		vals := make([]string, 0, hi-lo)
		for _, p := range rows[lo:hi] {
			vals = append(vals, "(?,?,?)")
			args = append(args, p.Name, p.Arch, p.Version)
		}
		q := "DELETE FROM server_packages WHERE server_id = ? AND (name, arch, version) IN (VALUES " + strings.Join(vals, ",") + ")"
		if err := db.Exec(q, args...).Error; err != nil {
			return mapErr(err, "packages")
		}
	}
	return nil
}

func (s *Store) replaceOutdated(ctx context.Context, id string, up []OutdatedRecord) error {
	db := s.conn(ctx)
	if err := db.Where("server_id = ?", id).Delete(&serverOutdatedRow{}).Error; err != nil {
		return mapErr(err, "outdated packages")
	}
	if len(up) == 0 {
		return nil
	}
	return s.bulkInsert(ctx, "server_outdated", []string{"server_id", "name", "arch", "current", "candidate", "security"}, "", len(up),
		func(i int) []any { u := up[i]; return []any{id, u.Name, u.Arch, u.Current, u.Candidate, u.Security} })
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
		RootUsedPercent: r.RootUsedPercent, CollectedAt: r.CollectedAt, SecuritySince: r.SecuritySince}, nil
}

// ServerPackages lists a visible server's packages by name and arch.
func (s *Store) ServerPackages(ctx context.Context, sc Scope, id string) ([]PackageRecord, error) {
	if err := s.ServerVisible(ctx, sc, id); err != nil {
		return nil, err
	}
	var rows []serverPackageRow
	if err := s.conn(ctx).Omit("Server").Where("server_id = ?", id).Order("name, arch, version").Find(&rows).Error; err != nil {
		return nil, mapErr(err, "packages")
	}
	out := make([]PackageRecord, len(rows))
	for i, r := range rows {
		out[i] = PackageRecord{Name: r.Name, Version: r.Version, Arch: r.Arch, Source: r.Source, Manager: r.Manager}
	}
	return out, nil
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
		out[i] = OutdatedRecord{Name: r.Name, Arch: r.Arch, Current: r.Current, Candidate: r.Candidate, Security: r.Security}
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
	// Both queries loop over the (visible) servers and seek each one's
	// clustered key range by name (CROSS JOIN fixes that join order on
	// SQLite); server_packages has no fleet-wide name index on purpose.
	has := applyServerScope(s.conn(ctx).Table("servers sv").Select("1").
		Joins("CROSS JOIN server_packages sp").Where("sp.server_id = sv.id AND sp.name = package_names.name"), "sv.id", sc)
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
	q2 := applyServerScope(s.conn(ctx).Table("servers sv").Joins("CROSS JOIN server_packages sp"), "sv.id", sc)
	if err := q2.Select("DISTINCT sp.name AS name, sp.version AS version, sp.server_id AS server_id").
		Where("sp.server_id = sv.id AND sp.name IN ?", names).
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

package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// catalogCacheMax bounds the cached package versions. A fleet of a few
// Debian and Ubuntu releases runs some tens of thousands of distinct
// versions; 200,000 entries (about 30 MB) hold years of updates, and a
// full cache is simply dropped and refilled from the database.
const catalogCacheMax = 200_000

// packageCatalog caches package_versions ids by content, so an ingest of
// a server whose package versions the fleet already runs reads nothing
// from the catalog. The cache only learns ids after their transaction
// committed, and catalog rows are never deleted, so a cached id is always
// a stored row — on every replica, as each caches what it read or wrote.
type packageCatalog struct {
	mu  sync.RWMutex
	ids map[PackageRecord]int32
}

func newPackageCatalog() *packageCatalog {
	return &packageCatalog{ids: map[PackageRecord]int32{}}
}

// lookup fills ids with the cached entries of recs and returns the rest.
// A nil catalog caches nothing.
func (c *packageCatalog) lookup(recs []PackageRecord, ids map[PackageRecord]int32) (miss []PackageRecord) {
	if c == nil {
		return recs
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, p := range recs {
		if id, ok := c.ids[p]; ok {
			ids[p] = id
		} else {
			miss = append(miss, p)
		}
	}
	return miss
}

// learn adds committed ids.
func (c *packageCatalog) learn(ids map[PackageRecord]int32) {
	if c == nil || len(ids) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.ids)+len(ids) > catalogCacheMax {
		c.ids = make(map[PackageRecord]int32, len(ids))
	}
	for p, id := range ids {
		c.ids[p] = id
	}
}

// catalogCols are package_versions' content columns: its unique key.
var catalogCols = []string{"name", "arch", "version", "source", "manager"}

// catalogIDs returns the package_versions id of every record in recs
// (distinct records), inserting the versions the catalog lacks and their
// names into package_names. fresh holds the ids the cache did not know;
// the caller hands them to packageCatalog.learn once the transaction has
// committed.
func (s *Store) catalogIDs(ctx context.Context, cache *packageCatalog, recs []PackageRecord) (ids, fresh map[PackageRecord]int32, err error) {
	ids = make(map[PackageRecord]int32, len(recs))
	miss := cache.lookup(recs, ids)
	fresh = make(map[PackageRecord]int32, len(miss))
	if len(miss) == 0 {
		return ids, fresh, nil
	}
	// Read what the catalog has (a cold cache), insert the rest, read
	// those. Inserting everything with ON CONFLICT DO NOTHING would burn
	// an identity value per known version on PostgreSQL.
	if miss, err = s.readCatalog(ctx, miss, ids, fresh); err != nil || len(miss) == 0 {
		return ids, fresh, err
	}
	// Key order: concurrent ingests on PostgreSQL take the unique index's
	// locks in the same order, so they wait for each other instead of
	// deadlocking.
	slices.SortFunc(miss, comparePackageRecords)
	if err := s.bulkInsert(ctx, "package_versions", catalogCols, " ON CONFLICT DO NOTHING", len(miss), func(i int) []any {
		p := miss[i]
		return []any{p.Name, p.Arch, p.Version, p.Source, p.Manager}
	}); err != nil {
		return nil, nil, err
	}
	var names []string
	for i, p := range miss {
		if i == 0 || p.Name != miss[i-1].Name {
			names = append(names, p.Name)
		}
	}
	if err := s.bulkInsert(ctx, "package_names", []string{"name"}, " ON CONFLICT DO NOTHING", len(names),
		func(i int) []any { return []any{names[i]} }); err != nil {
		return nil, nil, err
	}
	if miss, err = s.readCatalog(ctx, miss, ids, fresh); err != nil {
		return nil, nil, err
	}
	if len(miss) > 0 {
		// Only a database that compares strings differently from Go (a
		// collation, trailing spaces) could get here.
		return nil, nil, fmt.Errorf("store: package versions: %d stored versions did not read back", len(miss))
	}
	return ids, fresh, nil
}

// readCatalog looks recs up in package_versions through its unique index,
// one JSON parameter per bulkRows records (see bulkInsert), adds the found
// ones to ids and fresh and returns the others.
func (s *Store) readCatalog(ctx context.Context, recs []PackageRecord, ids, fresh map[PackageRecord]int32) ([]PackageRecord, error) {
	var q string
	if s.dialect == Postgres {
		q = `SELECT pv.id, pv.name, pv.arch, pv.version, pv.source, pv.manager
	FROM json_array_elements(CAST(? AS json)) e JOIN package_versions pv
	ON pv.name = e->>0 AND pv.arch = e->>1 AND pv.version = e->>2 AND pv.source = e->>3 AND pv.manager = e->>4`
	} else {
		q = `SELECT pv.id, pv.name, pv.arch, pv.version, pv.source, pv.manager
	FROM json_each(?) e CROSS JOIN package_versions pv
	ON pv.name = e.value->>0 AND pv.arch = e.value->>1 AND pv.version = e.value->>2 AND pv.source = e.value->>3 AND pv.manager = e.value->>4`
	}
	db := s.conn(ctx)
	var buf []byte
	for lo := 0; lo < len(recs); lo += bulkRows {
		hi := min(lo+bulkRows, len(recs))
		buf = append(buf[:0], '[')
		for i, p := range recs[lo:hi] {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendJSONArray(buf, []any{p.Name, p.Arch, p.Version, p.Source, p.Manager})
		}
		buf = append(buf, ']')
		var got []packageVersionRow
		if err := db.Raw(q, string(buf)).Scan(&got).Error; err != nil {
			return nil, mapErr(err, "package versions")
		}
		for _, r := range got {
			p := PackageRecord{Name: r.Name, Arch: r.Arch, Version: r.Version, Source: r.Source, Manager: r.Manager}
			ids[p], fresh[p] = r.ID, r.ID
		}
	}
	var rest []PackageRecord
	for _, p := range recs {
		if _, ok := ids[p]; !ok {
			rest = append(rest, p)
		}
	}
	return rest, nil
}

// comparePackageRecords orders records by the catalog's unique key.
func comparePackageRecords(a, b PackageRecord) int {
	if c := strings.Compare(a.Name, b.Name); c != 0 {
		return c
	}
	if c := strings.Compare(a.Arch, b.Arch); c != 0 {
		return c
	}
	if c := strings.Compare(a.Version, b.Version); c != 0 {
		return c
	}
	if c := strings.Compare(a.Source, b.Source); c != 0 {
		return c
	}
	return strings.Compare(a.Manager, b.Manager)
}

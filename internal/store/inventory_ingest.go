package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/lcmproject/lcm/internal/domain"
)

// ingestTxServers bounds the servers stored per transaction. A commit
// costs a WAL sync on PostgreSQL and a checkpoint share on SQLite, so a
// refresh of the fleet commits in groups; 50 first ingests are about
// 75,000 package rows, a few hundred milliseconds on SQLite, which is how
// long other writers may wait for the single writer lock.
const ingestTxServers = 50

// InventoryIngest is everything one refresh of one server stores.
type InventoryIngest struct {
	Facts    FactsRecord
	Packages []PackageRecord
	Outdated []OutdatedRecord
	// Storage are the server's storage samples of this refresh (the
	// caller picks the mounts).
	Storage []StorageSample
	// Unchanged: the worker found the server's packages and outdated
	// packages equal to the stored ones (Facts.InventoryDigest names them):
	// Packages and Outdated are empty and the stored ones, with their
	// counters, are kept.
	Unchanged bool
}

// IngestStats says what an ingest changed.
type IngestStats struct {
	Inserted, Deleted, Unchanged int
}

// IngestResult is the outcome of one InventoryIngest.
type IngestResult struct {
	Stats IngestStats
	Err   error // domain.ErrNotFound when the server does not exist
}

// IngestInventory replaces a server's facts, packages and outdated
// packages and adds its storage samples, in one transaction (see
// IngestInventories).
func (s *Store) IngestInventory(ctx context.Context, in InventoryIngest) (IngestStats, error) {
	r := s.IngestInventories(ctx, []InventoryIngest{in})[0]
	return r.Stats, r.Err
}

// IngestInventories stores many refresh results, up to ingestTxServers per
// transaction, and reports each one's outcome in order. Per server it
// replaces the facts, the package set and the outdated packages and adds
// the storage samples. Packages are diffed against the stored set, so a
// refresh that changed three packages writes six rows, not 1,500.
// SecuritySince is carried over while security updates stay pending.
//
// A server that does not exist (deleted while its refresh ran) fails alone
// with domain.ErrNotFound; if a transaction fails otherwise, its servers
// are retried one per transaction, so one bad result cannot lose the
// others. A server listed twice is stored twice, in order.
func (s *Store) IngestInventories(ctx context.Context, ins []InventoryIngest) []IngestResult {
	out := make([]IngestResult, len(ins))
	for lo := 0; lo < len(ins); {
		hi, seen := lo, map[string]bool{}
		for hi < len(ins) && hi-lo < ingestTxServers && !seen[ins[hi].Facts.ServerID] {
			seen[ins[hi].Facts.ServerID] = true
			hi++
		}
		s.ingestGroup(ctx, ins[lo:hi], out[lo:hi])
		lo = hi
	}
	return out
}

// ingestGroup stores ins (distinct servers) in one transaction, or each
// in its own if that fails.
func (s *Store) ingestGroup(ctx context.Context, ins []InventoryIngest, out []IngestResult) {
	var fresh map[PackageRecord]int32
	run := func(on *Store, cp rowCopier) error {
		return on.InTx(ctx, func(tx *Store) error {
			var err error
			fresh, err = tx.ingestTx(ctx, s.pkgs, ins, out, cp)
			return err
		})
	}
	var err error
	if _, pool := s.db.Statement.ConnPool.(*sql.DB); pool && s.dialect == Postgres {
		// The transaction runs on one connection the package rows can be
		// COPYed through.
		err = s.db.WithContext(ctx).Connection(func(cdb *gorm.DB) error {
			on := *s
			on.db = cdb
			return run(&on, pgCopier(cdb.Statement.ConnPool))
		})
	} else {
		err = run(s, nil)
	}
	if err == nil {
		s.pkgs.learn(fresh)
		return
	}
	if len(ins) == 1 {
		out[0] = IngestResult{Err: err}
		return
	}
	s.log.Warn("inventory ingest: a group failed, storing its servers one by one", "servers", len(ins), "err", err)
	for i := range ins {
		s.ingestGroup(ctx, ins[i:i+1], out[i:i+1])
	}
}

// rowCopier writes server_packages rows (server_num, pkg_id) in bulk; nil
// where there is none (SQLite, or a store already in a transaction).
type rowCopier func(ctx context.Context, rows [][]any) error

// pgCopier COPYs rows through pool's pgx connection, inside the
// transaction open on it: on PostgreSQL that is about a fifth cheaper per
// row than INSERT … SELECT unnest(…), and package rows are most of an
// ingest.
func pgCopier(pool gorm.ConnPool) rowCopier {
	conn, ok := pool.(*sql.Conn)
	if !ok {
		return nil
	}
	return func(ctx context.Context, rows [][]any) error {
		return conn.Raw(func(dc any) error {
			c, ok := dc.(*stdlib.Conn)
			if !ok {
				return fmt.Errorf("store: COPY needs a pgx connection, not %T", dc)
			}
			_, err := c.Conn().CopyFrom(ctx, pgx.Identifier{"server_packages"}, []string{"server_num", "pkg_id"}, pgx.CopyFromRows(rows))
			return err
		})
	}
}

// serverPkgs is one server's work in storePackages.
type serverPkgs struct {
	num   int32           // inventory_servers.num
	uniq  []PackageRecord // first occurrence per (name, arch, version)
	ids   []int32         // catalog ids of uniq, sorted
	stale []int32         // stored ids no longer present
}

// ingestTx is one transaction of IngestInventories (s is bound to it).
// It returns the catalog ids the cache did not know.
func (s *Store) ingestTx(ctx context.Context, cache *packageCatalog, ins []InventoryIngest, out []IngestResult, cp rowCopier) (map[PackageRecord]int32, error) {
	db := s.conn(ctx)
	ids := make([]string, len(ins))
	for i, in := range ins {
		ids[i] = in.Facts.ServerID
	}
	// The row lock holds off a concurrent delete of the servers until the
	// packages are in, so the cascade trigger sees them (PostgreSQL;
	// SQLite has one writer). It is the lock the counters' UPDATE takes
	// (storeCounters), taken in key order: two batches with a server in
	// common wait for each other instead of both holding a share lock
	// and deadlocking on the upgrade.
	lock := ""
	if s.dialect == Postgres {
		lock = " ORDER BY id FOR NO KEY UPDATE"
	}
	var present []serverCounters
	if err := db.Raw("SELECT id, updates_avail, security_avail, reboot_required FROM servers WHERE id IN ?"+lock, ids).
		Scan(&present).Error; err != nil {
		return nil, mapErr(err, "server")
	}
	stored := make(map[string]serverCounters, len(present))
	for _, c := range present {
		stored[c.ID] = c
	}
	var todo, changed []InventoryIngest
	for i, in := range ins {
		out[i] = IngestResult{}
		c, ok := stored[in.Facts.ServerID]
		if !ok {
			out[i].Err = domain.NotFound("server")
			continue
		}
		if in.Unchanged {
			in.Facts.Updates, in.Facts.SecurityUpdates = c.UpdatesAvail, c.SecurityAvail
		} else {
			in.Facts.Updates, in.Facts.SecurityUpdates = outdatedCounts(in.Outdated)
			changed = append(changed, in)
		}
		todo = append(todo, in)
	}
	if len(todo) == 0 {
		return nil, nil
	}
	if err := s.storeCounters(ctx, todo, stored); err != nil {
		return nil, err
	}
	unchanged, err := s.storeFacts(ctx, todo)
	if err != nil {
		return nil, err
	}
	var stats map[string]IngestStats
	var fresh map[PackageRecord]int32
	if len(changed) > 0 {
		if stats, fresh, err = s.storePackages(ctx, cache, changed, cp); err != nil {
			return nil, err
		}
		if err := s.storeOutdated(ctx, changed); err != nil {
			return nil, err
		}
	}
	for i, in := range ins {
		if out[i].Err != nil {
			continue
		}
		if st, ok := stats[in.Facts.ServerID]; ok {
			out[i].Stats = st
		} else {
			out[i].Stats = IngestStats{Unchanged: unchanged[in.Facts.ServerID]}
		}
	}
	var samples []storageSampleRow
	for _, in := range todo {
		for _, x := range in.Storage {
			samples = append(samples, storageSampleRow{ServerID: in.Facts.ServerID, Mount: x.Mount, TakenAt: x.TakenAt.UTC(),
				UsedBytes: x.UsedBytes, TotalBytes: x.TotalBytes})
		}
	}
	if len(samples) > 0 {
		if err := db.Omit("Server").CreateInBatches(samples, ingestBatch).Error; err != nil {
			return nil, mapErr(err, "storage samples")
		}
	}
	return fresh, nil
}

// serverCounters are the update counters a server row carries for the
// server list, the server page and the dashboard (GET /servers reads them
// with the server, no join).
type serverCounters struct {
	ID             string
	UpdatesAvail   int
	SecurityAvail  int
	RebootRequired bool
}

// outdatedCounts counts outdated packages and the security ones among
// them: the counters are the outdated rows stored, by construction.
func outdatedCounts(rows []OutdatedRecord) (updates, security int) {
	for _, u := range rows {
		if u.Security {
			security++
		}
	}
	return len(rows), security
}

// storeCounters copies each refresh's counters (outdated packages,
// security ones, reboot flag) into its server row where they differ from
// stored. One statement per changed server, each naming its server, so the
// server list's change tracking (changes.go) refreshes just those; an
// unchanged refresh writes nothing there.
func (s *Store) storeCounters(ctx context.Context, ins []InventoryIngest, stored map[string]serverCounters) error {
	want := make([]serverCounters, 0, len(ins))
	for _, in := range ins {
		c := serverCounters{ID: in.Facts.ServerID, UpdatesAvail: in.Facts.Updates, SecurityAvail: in.Facts.SecurityUpdates,
			RebootRequired: in.Facts.RebootRequired}
		if stored[c.ID] != c {
			want = append(want, c)
		}
	}
	// Key order: lock order on PostgreSQL, as in SaveStatuses.
	slices.SortFunc(want, func(a, b serverCounters) int { return strings.Compare(a.ID, b.ID) })
	for _, c := range want {
		if err := s.conn(ctx).Model(&serverRow{}).Where("id = ?", c.ID).UpdateColumns(map[string]any{
			"updates_avail": c.UpdatesAvail, "security_avail": c.SecurityAvail, "reboot_required": c.RebootRequired,
		}).Error; err != nil {
			return mapErr(err, "server")
		}
	}
	return nil
}

// storeFacts upserts the facts rows of ins. An unchanged inventory keeps
// the stored package count; it returns those counts by server. When the
// stored digest is not the one an unchanged refresh names (an inventory
// stored between the job's start and its end, which one job per server at
// a time rules out), the digest is cleared so the next refresh sends every
// package.
func (s *Store) storeFacts(ctx context.Context, ins []InventoryIngest) (map[string]int, error) {
	db := s.conn(ctx)
	ids := make([]string, len(ins))
	for i, in := range ins {
		ids[i] = in.Facts.ServerID
	}
	var prev []serverFactsRow
	if err := db.Select("server_id", "security_since", "packages", "inventory_digest").Where("server_id IN ?", ids).Find(&prev).Error; err != nil {
		return nil, mapErr(err, "server facts")
	}
	kept := map[string]int{}
	since := make(map[string]*serverFactsRow, len(prev))
	for i := range prev {
		since[prev[i].ServerID] = &prev[i]
	}
	rows := make([]serverFactsRow, len(ins))
	for i, in := range ins {
		f := in.Facts
		if p := since[f.ServerID]; in.Unchanged {
			switch {
			case p == nil || p.InventoryDigest != f.InventoryDigest:
				s.log.Warn("inventory ingest: an unchanged inventory does not name the stored one; the next refresh sends every package",
					"server_id", f.ServerID)
				f.InventoryDigest = ""
			default:
				f.Packages = p.Packages
			}
			kept[f.ServerID] = f.Packages
		}
		switch p := since[f.ServerID]; {
		case f.SecurityUpdates == 0:
			f.SecuritySince = nil
		case p != nil && p.SecuritySince != nil:
			f.SecuritySince = p.SecuritySince
		case f.SecuritySince == nil:
			t := f.CollectedAt
			f.SecuritySince = &t
		}
		rows[i] = serverFactsRow{ServerID: f.ServerID, Facts: string(f.FactsJSON), PackageManager: f.PackageManager,
			Packages: f.Packages, Updates: f.Updates, SecurityUpdates: f.SecurityUpdates, RebootRequired: f.RebootRequired,
			RootUsedPercent: f.RootUsedPercent, CollectedAt: f.CollectedAt, SecuritySince: f.SecuritySince,
			InventoryDigest: f.InventoryDigest}
	}
	// Key order: lock order on PostgreSQL, as in SaveStatuses.
	slices.SortFunc(rows, func(a, b serverFactsRow) int { return strings.Compare(a.ServerID, b.ServerID) })
	return kept, mapErr(db.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "server_id"}}, UpdateAll: true}).
		Omit("Server").Create(&rows).Error, "server facts")
}

// InventoryDigests returns the stored inventory digest of each server that
// has one (a job hands it to the worker).
func (s *Store) InventoryDigests(ctx context.Context, ids []string) (map[string]string, error) {
	out := make(map[string]string, len(ids))
	for lo := 0; lo < len(ids); lo += ingestBatch {
		var rows []serverFactsRow
		if err := s.conn(ctx).Select("server_id", "inventory_digest").Where("server_id IN ? AND inventory_digest <> ''", ids[lo:min(lo+ingestBatch, len(ids))]).
			Find(&rows).Error; err != nil {
			return nil, mapErr(err, "server facts")
		}
		for _, r := range rows {
			out[r.ServerID] = r.InventoryDigest
		}
	}
	return out, nil
}

// pkgKey is a package's identity within a server.
func pkgKey(p PackageRecord) string {
	return p.Name + "\x00" + p.Arch + "\x00" + p.Version
}

// storePackages makes the stored package set of each server in ins equal
// its Packages (duplicate (name, arch, version) keys collapse to their
// first occurrence). A first ingest (nothing stored) is a plain insert;
// later ones read the server's ids (one key range) and write only the
// difference. New rows go through cp when there is one.
func (s *Store) storePackages(ctx context.Context, cache *packageCatalog, ins []InventoryIngest, cp rowCopier) (map[string]IngestStats, map[PackageRecord]int32, error) {
	nums, err := s.inventoryNums(ctx, ins)
	if err != nil {
		return nil, nil, err
	}
	work := make([]serverPkgs, len(ins))
	all := map[PackageRecord]struct{}{}
	var distinct []PackageRecord
	for i, in := range ins {
		w := &work[i]
		w.num = nums[in.Facts.ServerID]
		seen := make(map[string]bool, len(in.Packages))
		w.uniq = make([]PackageRecord, 0, len(in.Packages))
		for _, p := range in.Packages {
			if k := pkgKey(p); !seen[k] {
				seen[k] = true
				w.uniq = append(w.uniq, p)
				if _, ok := all[p]; !ok {
					all[p] = struct{}{}
					distinct = append(distinct, p)
				}
			}
		}
	}
	catalog, fresh, err := s.catalogIDs(ctx, cache, distinct)
	if err != nil {
		return nil, nil, err
	}
	old, err := s.storedPackageIDs(ctx, work)
	if err != nil {
		return nil, nil, err
	}
	stats := make(map[int32]IngestStats, len(ins))
	var copied [][]any
	// Key order turns the inserts into a walk along the key.
	slices.SortFunc(work, func(a, b serverPkgs) int { return int(a.num) - int(b.num) })
	for i := range work {
		w := &work[i]
		w.ids = make([]int32, len(w.uniq))
		for j, p := range w.uniq {
			w.ids[j] = catalog[p]
		}
		slices.Sort(w.ids)
		prev := old[w.num] // sorted
		add := w.ids
		if len(prev) > 0 {
			add = nil
			// Merge two sorted lists: ids only in w.ids are added, ids
			// only in prev are stale.
			a, b := 0, 0
			for a < len(w.ids) || b < len(prev) {
				switch {
				case b == len(prev) || (a < len(w.ids) && w.ids[a] < prev[b]):
					add = append(add, w.ids[a])
					a++
				case a == len(w.ids) || prev[b] < w.ids[a]:
					w.stale = append(w.stale, prev[b])
					b++
				default:
					a++
					b++
				}
			}
		}
		if err := s.execIDs(ctx, "DELETE FROM server_packages WHERE server_num = ? AND pkg_id IN (%s)", w.num, w.stale); err != nil {
			return nil, nil, mapErr(err, "packages")
		}
		stats[w.num] = IngestStats{Inserted: len(add), Deleted: len(w.stale), Unchanged: len(prev) - len(w.stale)}
		if cp != nil {
			for _, id := range add {
				copied = append(copied, []any{w.num, id})
			}
			continue
		}
		if err := s.execIDs(ctx, "INSERT INTO server_packages (server_num, pkg_id) SELECT CAST(? AS integer), value FROM (%s) ids", w.num, add); err != nil {
			return nil, nil, mapErr(err, "packages")
		}
	}
	if len(copied) > 0 {
		if err := cp(ctx, copied); err != nil {
			return nil, nil, mapErr(err, "packages")
		}
	}
	out := make(map[string]IngestStats, len(ins))
	for _, in := range ins {
		out[in.Facts.ServerID] = stats[nums[in.Facts.ServerID]]
	}
	return out, fresh, nil
}

// inventoryNums returns the inventory_servers number of each server of
// ins, numbering those that have none yet.
func (s *Store) inventoryNums(ctx context.Context, ins []InventoryIngest) (map[string]int32, error) {
	db := s.conn(ctx)
	ids := make([]string, len(ins))
	for i, in := range ins {
		ids[i] = in.Facts.ServerID
	}
	read := func(ids []string, into map[string]int32) error {
		var rows []inventoryServerRow
		if err := db.Where("server_id IN ?", ids).Find(&rows).Error; err != nil {
			return mapErr(err, "inventory servers")
		}
		for _, r := range rows {
			into[r.ServerID] = r.Num
		}
		return nil
	}
	nums := make(map[string]int32, len(ids))
	if err := read(ids, nums); err != nil {
		return nil, err
	}
	var missing []string
	for _, id := range ids {
		if _, ok := nums[id]; !ok {
			missing = append(missing, id)
		}
	}
	if len(missing) == 0 {
		return nums, nil
	}
	slices.Sort(missing) // lock order on PostgreSQL, as in catalogIDs
	if err := s.bulkInsert(ctx, "inventory_servers", []string{"server_id"}, " ON CONFLICT DO NOTHING", len(missing),
		func(i int) []any { return []any{missing[i]} }); err != nil {
		return nil, err
	}
	if err := read(missing, nums); err != nil {
		return nil, err
	}
	return nums, nil
}

// storedPackageIDs returns the sorted package ids stored for the servers
// of work: one row per server, the ids joined by commas, which reads far
// faster through the drivers than a row per package.
func (s *Store) storedPackageIDs(ctx context.Context, work []serverPkgs) (map[int32][]int32, error) {
	nums := make([]int32, len(work))
	for i, w := range work {
		nums[i] = w.num
	}
	agg := "group_concat(pkg_id)"
	if s.dialect == Postgres {
		agg = "string_agg(CAST(pkg_id AS text), ',')"
	}
	type row struct {
		ServerNum int32
		IDs       string
	}
	var rows []row
	if err := s.conn(ctx).Raw("SELECT server_num, "+agg+" AS ids FROM server_packages WHERE server_num IN ? GROUP BY server_num", nums).
		Scan(&rows).Error; err != nil {
		return nil, mapErr(err, "packages")
	}
	out := make(map[int32][]int32, len(rows))
	for _, r := range rows {
		list := make([]int32, 0, strings.Count(r.IDs, ",")+1)
		for f := range strings.SplitSeq(r.IDs, ",") {
			n, err := strconv.ParseInt(f, 10, 32)
			if err != nil {
				return nil, mapErr(err, "packages")
			}
			list = append(list, int32(n))
		}
		slices.Sort(list)
		out[r.ServerNum] = list
	}
	return out, nil
}

// execIDs runs q, whose %s is replaced by a subquery yielding the rows
// "value" of ids, with the server number and the ids as its two
// parameters. The ids travel as ONE parameter (a JSON array on SQLite, an
// array literal on PostgreSQL), see bulkInsert for why.
func (s *Store) execIDs(ctx context.Context, q string, num int32, ids []int32) error {
	if len(ids) == 0 {
		return nil
	}
	sub, open, end := "SELECT value FROM json_each(?)", byte('['), byte(']')
	if s.dialect == Postgres {
		sub, open, end = "SELECT unnest(CAST(? AS integer[])) AS value", '{', '}'
	}
	buf := make([]byte, 0, 8*len(ids))
	buf = append(buf, open)
	for i, id := range ids {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = strconv.AppendInt(buf, int64(id), 10)
	}
	buf = append(buf, end)
	return s.conn(ctx).Exec(strings.Replace(q, "%s", sub, 1), num, string(buf)).Error
}

// storeOutdated replaces the outdated packages of the servers in ins.
func (s *Store) storeOutdated(ctx context.Context, ins []InventoryIngest) error {
	ids := make([]string, len(ins))
	var rows []OutdatedRecord
	var owner []string
	for i, in := range ins {
		ids[i] = in.Facts.ServerID
		for _, u := range in.Outdated {
			rows = append(rows, u)
			owner = append(owner, in.Facts.ServerID)
		}
	}
	if err := s.conn(ctx).Where("server_id IN ?", ids).Delete(&serverOutdatedRow{}).Error; err != nil {
		return mapErr(err, "outdated packages")
	}
	return s.bulkInsert(ctx, "server_outdated", []string{"server_id", "name", "arch", "current", "candidate", "security", "held"}, "", len(rows),
		func(i int) []any {
			u := rows[i]
			return []any{owner[i], u.Name, u.Arch, u.Current, u.Candidate, u.Security, u.Held}
		})
}

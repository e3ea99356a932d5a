package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"sort"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/lcmproject/lcm/internal/domain"
)

// How ApplyScans splits its work: one transaction stores up to
// scanTxServers servers and, beyond its first server, up to
// scanTxFindings findings (a first scan inserts them all: about 60,000
// rows in each of two tables, under a second on SQLite, which is how long
// other writers may wait for the single writer lock).
const (
	scanTxServers  = 100
	scanTxFindings = 60000
	// scanStmtParams bounds the parameters of one multi-row statement,
	// below PostgreSQL's 65,535; on SQLite the pure-Go driver binds
	// parameters in time quadratic in their number (each looks for its
	// argument from the first), so its statements stay near 320
	// parameters: at 16,000 binding took three quarters of a first scan.
	scanStmtParams       = 30000
	scanStmtParamsSQLite = 320
	// scanDiffMax is the most server_findings rows a rescan deletes one
	// tuple at a time; beyond it the server's rows are rewritten.
	scanDiffMax = 256
)

// ApplyScan stores a scan of a server (ApplyScans with one outcome).
func (s *Store) ApplyScan(ctx context.Context, o ScanOutcome, at time.Time) error {
	return s.ApplyScans(ctx, []ScanOutcome{o}, at)[0]
}

// ApplyScans stores scans of many servers taken at the same time and
// reports each one's outcome in order. Per server: findings seen again
// keep their state (a fixed one that is back becomes new, first seen now),
// new ones are added, open ones no longer found become fixed, and
// server_findings, which the traffic light reads, holds the open findings
// (new and acknowledged).
//
// Servers are stored in transactions of up to scanTxServers servers
// (scanTxFindings findings); if one fails, its servers are stored again
// one per transaction, so a bad outcome fails alone and leaves nothing
// half-written. A server that does not exist (deleted meanwhile) fails
// with domain.ErrNotFound. A server listed twice is stored twice, in order.
//
// The work is sized for the daily fleet rescan (BenchmarkApplyScanRescan):
//   - a rescan with the same findings as the server's last scan (same
//     digest, vuln_scans.digest) only moves the scan's time; an open
//     finding's last_seen_at is read from it (VulnFindings);
//   - otherwise the server's stored findings are read by key with a hash of
//     their content (row_hash), not their content: only the new, changed,
//     returning and fixed ones are written, with multi-row statements, and
//     server_findings changes by the difference of the open set, derived
//     from the findings read (it is rewritten when its row count shows it
//     does not hold the last open set);
//   - outcomes sharing one findings slice (servers with the same package
//     set) are digested once.
func (s *Store) ApplyScans(ctx context.Context, outs []ScanOutcome, at time.Time) []error {
	errs := make([]error, len(outs))
	prep := make([]*preparedScan, len(outs))
	type sliceID struct {
		first *VulnFinding
		n     int
	}
	cache := map[sliceID]*preparedScan{}
	for i, o := range outs {
		var id sliceID
		if len(o.Findings) > 0 {
			id = sliceID{&o.Findings[0], len(o.Findings)}
		}
		if prep[i] = cache[id]; prep[i] == nil {
			prep[i] = prepareScan(o.Findings)
			cache[id] = prep[i]
		}
	}
	for lo := 0; lo < len(outs); {
		hi, n, seen := lo, 0, map[string]bool{}
		for hi < len(outs) && hi-lo < scanTxServers && !seen[outs[hi].ServerID] &&
			(hi == lo || n+len(prep[hi].items) <= scanTxFindings) {
			seen[outs[hi].ServerID] = true
			n += len(prep[hi].items)
			hi++
		}
		s.applyScanGroup(ctx, outs[lo:hi], prep[lo:hi], at, errs[lo:hi])
		lo = hi
	}
	return errs
}

// applyScanGroup stores outs (distinct servers) in one transaction, or
// each in its own if that fails.
func (s *Store) applyScanGroup(ctx context.Context, outs []ScanOutcome, prep []*preparedScan, at time.Time, errs []error) {
	err := s.InTx(ctx, func(tx *Store) error {
		return tx.applyScansTx(ctx, outs, prep, at, errs)
	})
	if err == nil {
		return
	}
	if len(outs) == 1 {
		errs[0] = err
		return
	}
	if s.log != nil {
		s.log.Warn("vulnerability scans: a group failed, storing its servers one by one", "servers", len(outs), "err", err)
	}
	for i := range outs {
		s.applyScanGroup(ctx, outs[i:i+1], prep[i:i+1], at, errs[i:i+1])
	}
}

// scanItem is one distinct finding of a scan as it is stored.
type scanItem struct {
	key                                      string
	advisory, pkg, container                 string
	cves, source, installed, fixed, severity string
	cvss                                     float64
	summary, ecosystem                       string
	hash                                     int64   // of the content, vuln_findings.row_hash
	open                                     Finding // its server_findings row while open
}

// preparedScan is a scan's findings as stored: the first of each key,
// truncated to the columns, and their digest.
type preparedScan struct {
	items  []scanItem
	digest string
	index  map[string]int // key → position in items
}

func prepareScan(fs []VulnFinding) *preparedScan {
	p := &preparedScan{items: make([]scanItem, 0, len(fs)), index: make(map[string]int, len(fs))}
	lines := make([]string, 0, len(fs))
	for _, f := range fs {
		it := scanItem{advisory: trunc(f.Advisory, 128), pkg: trunc(f.Package, 255), container: trunc(f.Container, 160)}
		it.key = findingKey(it.advisory, it.pkg, it.container)
		if _, dup := p.index[it.key]; dup {
			continue
		}
		p.index[it.key] = len(p.items)
		it.cves, it.source, it.installed, it.fixed = trunc(strings.Join(f.CVEs, ","), 2048), trunc(f.Source, 255), trunc(f.Installed, 255), trunc(f.Fixed, 255)
		it.severity, it.cvss, it.summary, it.ecosystem = f.Severity, f.CVSS, trunc(f.Summary, 512), trunc(f.Ecosystem, 128)
		content := strings.Join([]string{it.cves, it.source, it.installed, it.fixed, it.severity,
			strconv.FormatFloat(f.CVSS, 'g', -1, 64), it.summary, it.ecosystem}, "\x00")
		lines = append(lines, it.key+"\x00"+content)
		it.hash = contentHash(content)
		cve := f.Advisory
		if len(f.CVEs) > 0 {
			cve = f.CVEs[0]
		}
		it.open = Finding{CVE: trunc(cve, 64), Package: it.pkg, Version: it.installed, FixedIn: it.fixed, Severity: it.severity}
		p.items = append(p.items, it)
	}
	p.digest = digestLines(lines)
	return p
}

// scanDigest is the SHA-256 of a scan's findings as ApplyScans stores them
// (truncated, first of each key), in key order: vuln_scans.digest.
func scanDigest(fs []VulnFinding) string { return prepareScan(fs).digest }

func digestLines(lines []string) string {
	sort.Strings(lines)
	h := sha256.New()
	for _, l := range lines {
		h.Write([]byte(l))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// contentHash is 63 bits of the SHA-256 of a finding's content, never 0
// (the row_hash of rows stored before the column: they count as changed
// once).
func contentHash(content string) int64 {
	sum := sha256.Sum256([]byte(content))
	return int64(binary.BigEndian.Uint64(sum[:8])>>1) | 1
}

// storedFinding is what a rescan reads of a stored finding.
type storedFinding struct {
	id    int64
	state string
	hash  int64
}

// scanWork is one server's part of a transaction of ApplyScans.
type scanWork struct {
	i              int              // index in outs
	stored         []*storedFinding // by position in the scan's items; nil: none stored
	openBefore     int
	fresh, changed []*scanItem // fresh: new or back from fixed; changed: open, other content
	gone           []int64     // open, no longer found
	leaving        []int64     // open rows whose server_findings tuple goes (changed or gone)
}

// applyScansTx is one transaction of ApplyScans (s is bound to it).
func (s *Store) applyScansTx(ctx context.Context, outs []ScanOutcome, prep []*preparedScan, at time.Time, errs []error) error {
	db := s.conn(ctx)
	q := sqlRunner{s: s, db: db}
	ids := make([]any, len(outs))
	for i, o := range outs {
		ids[i] = o.ServerID
		errs[i] = nil
	}
	// The servers, locked on PostgreSQL in key order (the lock the
	// inventory ingest takes): concurrent stores of one server wait for
	// each other, and a delete waits until the findings are in.
	lock := ""
	if s.dialect == Postgres {
		lock = " ORDER BY id FOR NO KEY UPDATE"
	}
	present := map[string]bool{}
	if err := q.query(ctx, "SELECT id FROM servers WHERE id IN "+q.marks(1, len(ids), 1)+lock, ids, func(sc func(...any) error) error {
		var id string
		err := sc(&id)
		present[id] = true
		return err
	}); err != nil {
		return mapErr(err, "server")
	}
	type lastScan struct {
		digest, err string
	}
	last := map[string]lastScan{}
	if err := q.query(ctx, "SELECT server_id, digest, error FROM vuln_scans WHERE server_id IN "+q.marks(1, len(ids), 1), ids, func(sc func(...any) error) error {
		var id string
		var l lastScan
		err := sc(&id, &l.digest, &l.err)
		last[id] = l
		return err
	}); err != nil {
		return mapErr(err, "vulnerability scan")
	}
	// Same findings as the last scan: only the scan's time moves.
	sameByEngine := map[string][]any{}
	var work []*scanWork
	var fullIDs []any
	for i, o := range outs {
		if !present[o.ServerID] {
			errs[i] = domain.NotFound("server")
			continue
		}
		if l, ok := last[o.ServerID]; ok && l.digest == prep[i].digest && l.err == "" {
			sameByEngine[o.Engine] = append(sameByEngine[o.Engine], o.ServerID)
			continue
		}
		w := &scanWork{i: i, stored: make([]*storedFinding, len(prep[i].items))}
		work = append(work, w)
		fullIDs = append(fullIDs, o.ServerID)
	}
	for engine, sids := range sameByEngine {
		if err := q.exec(ctx, "UPDATE vuln_scans SET scanned_at = "+q.mark(1)+", engine = "+q.mark(2)+" WHERE server_id IN "+q.marks(1, len(sids), 3),
			append([]any{at, engine}, sids...)); err != nil {
			return mapErr(err, "vulnerability scan")
		}
	}
	if len(work) == 0 {
		return nil
	}
	// The stored findings: key, state and content hash (the content
	// itself is read only for the few open ones that change or go). The
	// key columns are compared as bytes, without building strings.
	var leaving []any
	var key []byte
	for _, w := range work {
		p := prep[w.i]
		var adv, pkg, ctr, state sql.RawBytes
		if err := q.query(ctx, "SELECT id, advisory, package, container, state, row_hash FROM vuln_findings WHERE server_id = "+q.mark(1),
			[]any{outs[w.i].ServerID}, func(sc func(...any) error) error {
				var id, hash int64
				if err := sc(&id, &adv, &pkg, &ctr, &state, &hash); err != nil {
					return err
				}
				open := string(state) != VulnFixed
				key = append(append(append(append(append(key[:0], adv...), 0), pkg...), 0), ctr...)
				j, ok := p.index[string(key)]
				switch {
				case ok:
					w.stored[j] = &storedFinding{id: id, state: string(state), hash: hash}
					if open {
						w.openBefore++
					}
				case open: // no longer found
					w.openBefore++
					w.gone = append(w.gone, id)
					w.leaving = append(w.leaving, id)
				}
				return nil
			}); err != nil {
			return mapErr(err, "vulnerability findings")
		}
		for j := range p.items {
			it := &p.items[j]
			switch r := w.stored[j]; {
			case r == nil || r.state == VulnFixed:
				w.fresh = append(w.fresh, it)
			case r.hash != it.hash:
				w.changed = append(w.changed, it)
				w.leaving = append(w.leaving, r.id)
			}
		}
		for _, id := range w.leaving {
			leaving = append(leaving, id)
		}
	}
	// The server_findings tuples of the open findings that change or go,
	// read before they are written.
	old := make(map[int64]Finding, len(leaving))
	for lo := 0; lo < len(leaving); lo += ingestBatch {
		chunk := leaving[lo:min(lo+ingestBatch, len(leaving))]
		if err := q.query(ctx, "SELECT id, advisory, cves, package, installed, fixed, severity FROM vuln_findings WHERE id IN "+q.marks(1, len(chunk), 1),
			chunk, func(sc func(...any) error) error {
				var id int64
				var adv, cves string
				var f Finding
				if err := sc(&id, &adv, &cves, &f.Package, &f.Version, &f.FixedIn, &f.Severity); err != nil {
					return err
				}
				f.CVE = adv
				if cves != "" {
					f.CVE, _, _ = strings.Cut(cves, ",")
				}
				f.CVE = trunc(f.CVE, 64)
				old[id] = f
				return nil
			}); err != nil {
			return mapErr(err, "vulnerability findings")
		}
	}
	counts := map[string]int{}
	if err := q.query(ctx, "SELECT server_id, COUNT(*) FROM server_findings WHERE server_id IN "+q.marks(1, len(fullIDs), 1)+" GROUP BY server_id",
		fullIDs, func(sc func(...any) error) error {
			var sid string
			var n int
			err := sc(&sid, &n)
			counts[sid] = n
			return err
		}); err != nil {
		return mapErr(err, "findings")
	}

	// vuln_findings: new and returning findings are (re)written whole,
	// changed ones keep their state and dates, gone ones become fixed.
	var fresh, changed []any
	var gone []any
	for _, w := range work {
		sid := outs[w.i].ServerID
		for _, it := range w.fresh {
			fresh = append(fresh, sid, it.advisory, it.pkg, it.container, it.cves, it.source, it.installed, it.fixed, it.severity,
				it.cvss, it.summary, it.ecosystem, VulnNew, at, at, it.hash)
		}
		for _, it := range w.changed {
			changed = append(changed, sid, it.advisory, it.pkg, it.container, it.cves, it.source, it.installed, it.fixed, it.severity,
				it.cvss, it.summary, it.ecosystem, VulnNew, at, at, it.hash)
		}
		for _, id := range w.gone {
			gone = append(gone, id)
		}
	}
	const findingCols = "server_id, advisory, package, container, cves, source, installed, fixed, severity, cvss, summary, ecosystem, state, first_seen_at, last_seen_at, row_hash"
	const content = "cves = excluded.cves, source = excluded.source, installed = excluded.installed, fixed = excluded.fixed, " +
		"severity = excluded.severity, cvss = excluded.cvss, summary = excluded.summary, ecosystem = excluded.ecosystem, " +
		"last_seen_at = excluded.last_seen_at, row_hash = excluded.row_hash"
	const onKey = " ON CONFLICT (server_id, advisory, package, container) DO UPDATE SET " + content
	if err := q.insert(ctx, "INSERT INTO vuln_findings ("+findingCols+") VALUES ", onKey+", state = excluded.state, "+
		"first_seen_at = excluded.first_seen_at, acknowledged_at = NULL, acknowledged_by = '', fixed_at = NULL", 16, fresh); err != nil {
		return mapErr(err, "vulnerability findings")
	}
	if err := q.insert(ctx, "INSERT INTO vuln_findings ("+findingCols+") VALUES ", onKey, 16, changed); err != nil {
		return mapErr(err, "vulnerability findings")
	}
	for lo := 0; lo < len(gone); lo += ingestBatch {
		chunk := gone[lo:min(lo+ingestBatch, len(gone))]
		if err := q.exec(ctx, "UPDATE vuln_findings SET state = "+q.mark(1)+", fixed_at = "+q.mark(2)+" WHERE id IN "+q.marks(1, len(chunk), 3),
			append([]any{VulnFixed, at}, chunk...)); err != nil {
			return mapErr(err, "vulnerability findings")
		}
	}

	// server_findings follows the open set by its difference.
	var touched []string
	var add []any
	for _, w := range work {
		sid := outs[w.i].ServerID
		p := prep[w.i]
		drop := map[Finding]int{}
		for _, id := range w.leaving {
			drop[old[id]]++
		}
		put := map[Finding]int{}
		for _, it := range w.fresh {
			put[it.open]++
		}
		for _, it := range w.changed {
			put[it.open]++
		}
		ndrop := 0
		for f, n := range drop {
			k := min(n, put[f])
			drop[f] -= k
			put[f] -= k
			ndrop += drop[f]
		}
		rewrite := counts[sid] != w.openBefore || ndrop > scanDiffMax
		if !rewrite {
			for f, n := range drop {
				if n == 0 {
					continue
				}
				got, err := q.execN(ctx, "DELETE FROM server_findings WHERE id IN (SELECT id FROM server_findings WHERE server_id = "+q.mark(1)+
					" AND cve = "+q.mark(2)+" AND package = "+q.mark(3)+" AND version = "+q.mark(4)+" AND fixed_in = "+q.mark(5)+
					" AND severity = "+q.mark(6)+" LIMIT "+strconv.Itoa(n)+")", []any{sid, f.CVE, f.Package, f.Version, f.FixedIn, f.Severity})
				if err != nil {
					return mapErr(err, "findings")
				}
				if got != int64(n) { // not the open set it was: rewrite it
					rewrite = true
					break
				}
			}
		}
		if rewrite {
			if err := q.exec(ctx, "DELETE FROM server_findings WHERE server_id = "+q.mark(1), []any{sid}); err != nil {
				return mapErr(err, "findings")
			}
			for j := range p.items {
				f := p.items[j].open
				add = append(add, sid, f.CVE, f.Package, f.Version, f.FixedIn, f.Severity)
			}
			touched = append(touched, sid)
			continue
		}
		wrote := ndrop > 0
		for j := range p.items {
			if f := p.items[j].open; put[f] > 0 {
				put[f]--
				add = append(add, sid, f.CVE, f.Package, f.Version, f.FixedIn, f.Severity)
				wrote = true
			}
		}
		if wrote {
			touched = append(touched, sid)
		}
	}
	if err := q.insert(ctx, "INSERT INTO server_findings (server_id, cve, package, version, fixed_in, severity) VALUES ", "", 6, add); err != nil {
		return mapErr(err, "findings")
	}
	if len(touched) > 0 {
		// server_findings is a fleet table: the writes above bypass GORM's
		// callbacks, so the servers are recorded here (at the commit).
		s.changes.wrote(db, false, touched)
	}

	var scans []any
	for _, w := range work {
		o := outs[w.i]
		scans = append(scans, o.ServerID, at, o.Engine, len(prep[w.i].items), "", prep[w.i].digest)
	}
	return mapErr(q.insert(ctx, "INSERT INTO vuln_scans (server_id, scanned_at, engine, findings, error, digest) VALUES ",
		" ON CONFLICT (server_id) DO UPDATE SET scanned_at = excluded.scanned_at, engine = excluded.engine, findings = excluded.findings, "+
			"error = excluded.error, digest = excluded.digest", 6, scans), "vulnerability scan")
}

// sqlRunner runs SQL on a store's connection (its transaction) through
// database/sql directly: GORM's statement building and reflection cost
// more than the statements on the rescan's hot path. Its writes are not
// seen by the change tracking: a caller writing a fleet table records it.
type sqlRunner struct {
	s  *Store
	db *gorm.DB
}

// mark is placeholder n (1-based).
func (q sqlRunner) mark(n int) string {
	if q.s.dialect == Postgres {
		return "$" + strconv.Itoa(n)
	}
	return "?"
}

// marks is rows parenthesized lists of cols placeholders, numbered from
// first: "(?,?),(?,?)".
func (q sqlRunner) marks(rows, cols, first int) string {
	var b strings.Builder
	n := first
	for r := 0; r < rows; r++ {
		if r > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('(')
		for c := 0; c < cols; c++ {
			if c > 0 {
				b.WriteByte(',')
			}
			b.WriteString(q.mark(n))
			n++
		}
		b.WriteByte(')')
	}
	return b.String()
}

func (q sqlRunner) exec(ctx context.Context, sql string, args []any) error {
	_, err := q.execN(ctx, sql, args)
	return err
}

func (q sqlRunner) execN(ctx context.Context, sql string, args []any) (int64, error) {
	res, err := q.db.Statement.ConnPool.ExecContext(ctx, sql, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// insert writes rows of cols values each (args, flat) with multi-row
// statements: head + "(…),(…)" + tail.
func (q sqlRunner) insert(ctx context.Context, head, tail string, cols int, args []any) error {
	limit := scanStmtParams
	if q.s.dialect == SQLite {
		limit = scanStmtParamsSQLite
	}
	per := min(ingestBatch, limit/cols) * cols
	if len(args) >= 2*per {
		// Full chunks share one prepared statement (parsed once).
		st, err := q.db.Statement.ConnPool.PrepareContext(ctx, head+q.marks(per/cols, cols, 1)+tail)
		if err != nil {
			return err
		}
		defer st.Close()
		for ; len(args) >= per; args = args[per:] {
			if _, err := st.ExecContext(ctx, args[:per]...); err != nil {
				return err
			}
		}
	}
	for lo := 0; lo < len(args); lo += per {
		chunk := args[lo:min(lo+per, len(args))]
		if err := q.exec(ctx, head+q.marks(len(chunk)/cols, cols, 1)+tail, chunk); err != nil {
			return err
		}
	}
	return nil
}

// query runs a query and calls row for each result row with its Scan.
func (q sqlRunner) query(ctx context.Context, sql string, args []any, row func(scan func(...any) error) error) error {
	rows, err := q.db.Statement.ConnPool.QueryContext(ctx, sql, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := row(rows.Scan); err != nil {
			return err
		}
	}
	return rows.Err()
}

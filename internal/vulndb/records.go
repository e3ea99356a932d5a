package vulndb

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"strings"
	"time"
)

// FromRecords builds an in-memory database from records (the early
// warning's batch of new advisories). Records without a matchable
// ecosystem are kept but never match.
func FromRecords(recs []*Record) *DB {
	db := &DB{index: map[string][]entry{}, cveSev: map[string]sevScore{}}
	for _, r := range recs {
		if r != nil {
			db.add(r)
		}
	}
	return db
}

// BorrowSeverities copies the CVE severities of other (a loaded export)
// for CVE ids db has none for, so a batch of Debian records, which carry
// no severity, is rated as the full database would rate it.
func (db *DB) BorrowSeverities(other *DB) {
	if other == nil {
		return
	}
	for cve, s := range other.cveSev {
		if cur, ok := db.cveSev[cve]; !ok || SeverityRank(cur.sev) == 0 {
			db.cveSev[cve] = s
		}
	}
}

// CacheStats counts the lookups of the shared per-component match cache
// (DB.Match): a hit is a package version matched before on this load.
type CacheStats struct {
	Hits    int64 `json:"hits"`
	Misses  int64 `json:"misses"`
	Entries int64 `json:"entries"`
}

// CacheStats reports the shared match cache's counters.
func (db *DB) CacheStats() CacheStats {
	return CacheStats{Hits: db.hits.Load(), Misses: db.misses.Load(), Entries: min(db.sharedN.Load(), maxShared)}
}

// ModifiedEntry is one line of an OSV export's modified_id.csv.
type ModifiedEntry struct {
	Modified time.Time
	// Ecosystem is the directory the root file names ("Debian/DSA-…");
	// "" in an ecosystem's own file, whose lines carry the id alone.
	Ecosystem string
	ID        string
}

// maxModifiedLines bounds a modified_id.csv (Debian's has ~100,000 lines).
const maxModifiedLines = 5_000_000

// ParseModifiedIDs reads an OSV export's modified_id.csv: one
// "<RFC 3339 modified>,<id>" (or "<ecosystem>/<id>" in the bucket's root
// file) per line, newest first as osv.dev writes it. Empty lines are
// skipped; anything else malformed is an error naming its line.
func ParseModifiedIDs(b []byte) ([]ModifiedEntry, error) {
	var out []ModifiedEntry
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(strings.TrimSuffix(sc.Text(), "\r"))
		if line == "" {
			continue
		}
		if n > maxModifiedLines {
			return nil, errors.New("modified_id.csv: too many lines")
		}
		ts, id, ok := strings.Cut(line, ",")
		if !ok {
			return nil, fmt.Errorf("modified_id.csv line %d: want <modified>,<id>", n)
		}
		t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(ts))
		if err != nil {
			return nil, fmt.Errorf("modified_id.csv line %d: modified time: %w", n, err)
		}
		id = strings.TrimSpace(id)
		eco := ""
		if e, rest, ok := strings.Cut(id, "/"); ok {
			if !validEcosystemDir(e) {
				return nil, fmt.Errorf("modified_id.csv line %d: invalid ecosystem %q", n, e)
			}
			eco, id = e, rest
		}
		if !ValidID(id) {
			return nil, fmt.Errorf("modified_id.csv line %d: invalid id %q", n, id)
		}
		out = append(out, ModifiedEntry{Modified: t.UTC(), Ecosystem: eco, ID: id})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("modified_id.csv: %w", err)
	}
	return out, nil
}

// ValidID reports whether id can be an OSV id and a file name: letters,
// digits, '-', '_', '.', ':', 1 to 128 characters, not starting with '.'.
func ValidID(id string) bool {
	if id == "" || len(id) > 128 || id[0] == '.' {
		return false
	}
	for _, r := range id {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.', r == ':':
		default:
			return false
		}
	}
	return true
}

// validEcosystemDir accepts an export directory name ("Debian",
// "Rocky Linux", "Ubuntu:Pro"): letters, digits, ' ', '-', '.', ':', '_'.
func validEcosystemDir(e string) bool {
	if e == "" || len(e) > 64 || e[0] == '.' {
		return false
	}
	for _, r := range e {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == ' ', r == '-', r == '.', r == ':', r == '_':
		default:
			return false
		}
	}
	return true
}

// ModifiedAt is the record's "modified" time (zero when absent or invalid).
func (r *Record) ModifiedAt() time.Time {
	t, err := time.Parse(time.RFC3339Nano, r.Modified)
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}

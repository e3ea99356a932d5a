package vulndb

import (
	"archive/zip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// entry is one affected package of one record.
type entry struct {
	rec *Record
	aff *Affected
}

// EcosystemInfo describes one loaded <ecosystem>/all.zip.
type EcosystemInfo struct {
	Name       string    `json:"name"`
	Records    int       `json:"records"`
	ImportedAt time.Time `json:"imported_at"` // the file's modification time
	Newest     time.Time `json:"newest"`      // the newest record's "modified"
}

// DB is an immutable, loaded vulnerability database. Build a new one to
// update; a scanner swaps the pointer.
type DB struct {
	index      map[string][]entry // releaseKey + "\x00" + package name
	cveSev     map[string]sevScore
	ecosystems []EcosystemInfo
	records    int

	shared  sync.Map // Component → []Finding
	sharedN atomic.Int64
	hits    atomic.Int64 // Match lookups answered from shared
	misses  atomic.Int64
}

type sevScore struct {
	sev   string
	score float64
}

// Ecosystems lists what was loaded, in Ecosystems order.
func (db *DB) Ecosystems() []EcosystemInfo { return db.ecosystems }

// Records is the number of records loaded.
func (db *DB) Records() int { return db.records }

// Newest is the newest record modification over all ecosystems: the
// database's age is measured from it (the export is regenerated daily, so
// its newest record is about as old as the export).
func (db *DB) Newest() time.Time {
	var t time.Time
	for _, e := range db.ecosystems {
		if e.Newest.After(t) {
			t = e.Newest
		}
	}
	return t
}

// ErrEmpty is returned by Load when the directory holds no all.zip of a
// known ecosystem.
var ErrEmpty = errors.New("no OSV export found: expected <ecosystem>/all.zip (Debian, Ubuntu, Alpine, Rocky Linux, AlmaLinux, Red Hat, SUSE, openSUSE)")

// Load reads every <ecosystem>/all.zip under dir.
func Load(dir string) (*DB, error) {
	db := &DB{index: map[string][]entry{}, cveSev: map[string]sevScore{}}
	for _, eco := range Ecosystems {
		p := filepath.Join(dir, eco, "all.zip")
		fi, err := os.Stat(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		info, err := db.loadZip(p)
		if err != nil {
			return nil, fmt.Errorf("%s/all.zip: %w", eco, err)
		}
		info.Name, info.ImportedAt = eco, fi.ModTime().UTC()
		db.ecosystems = append(db.ecosystems, info)
	}
	if len(db.ecosystems) == 0 {
		return nil, ErrEmpty
	}
	return db, nil
}

// maxRecord bounds one record's size: real records are a few kB, the
// largest (kernel) well below 8 MiB.
const maxRecord = 32 << 20

func (db *DB) loadZip(path string) (EcosystemInfo, error) {
	zr, err := zip.OpenReader(path)
	if err != nil {
		return EcosystemInfo{}, err
	}
	defer zr.Close()
	var info EcosystemInfo
	in := interner{}
	for _, f := range zr.File {
		if f.FileInfo().IsDir() || !strings.HasSuffix(f.Name, ".json") {
			continue
		}
		rec, err := readRecord(f)
		if err != nil {
			return info, fmt.Errorf("%s: %w", f.Name, err)
		}
		in.compact(rec)
		db.add(rec)
		info.Records++
		if t, err := time.Parse(time.RFC3339, rec.Modified); err == nil && t.After(info.Newest) {
			info.Newest = t.UTC()
		}
	}
	return info, nil
}

func readRecord(f *zip.File) (*Record, error) {
	rc, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, maxRecord+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxRecord {
		return nil, errors.New("record larger than 32 MiB")
	}
	return ParseRecord(b)
}

// ParseRecord decodes one OSV JSON record; it needs an id.
func ParseRecord(b []byte) (*Record, error) {
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("not an OSV record: %w", err)
	}
	if r.ID == "" {
		return nil, errors.New("not an OSV record: no id")
	}
	return &r, nil
}

func (db *DB) add(r *Record) {
	db.records++
	for i := range r.Affected {
		a := &r.Affected[i]
		key, ok := releaseKey(a.Package.Ecosystem)
		if !ok || a.Package.Name == "" {
			continue
		}
		k := key + "\x00" + a.Package.Name
		db.index[k] = append(db.index[k], entry{rec: r, aff: a})
		sev, score := r.ownSeverity(a)
		if SeverityRank(sev) == 0 {
			continue
		}
		for _, cve := range r.CVEs() {
			cur := db.cveSev[cve]
			if SeverityRank(sev) > SeverityRank(cur.sev) {
				cur.sev = sev
			}
			cur.score = max(cur.score, score)
			db.cveSev[cve] = cur
		}
	}
}

// severityOf is a finding's severity: the record's own, else the highest
// any record sharing one of its CVE ids states.
func (db *DB) severityOf(r *Record, a *Affected) (string, float64) {
	sev, score := r.ownSeverity(a)
	for _, cve := range r.CVEs() {
		if s, ok := db.cveSev[cve]; ok {
			if SeverityRank(sev) == 0 && SeverityRank(s.sev) > SeverityRank(sev) {
				sev = s.sev
			}
			if score == 0 && s.score > 0 {
				score = s.score
			}
		}
	}
	return sev, score
}

// CheckZip verifies that an uploaded file is an OSV export: a zip of
// JSON records, each with an id. It returns the record count.
func CheckZip(r io.ReaderAt, size int64) (int, error) {
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return 0, fmt.Errorf("not a zip file: %w", err)
	}
	n := 0
	for _, f := range zr.File {
		if f.FileInfo().IsDir() || !strings.HasSuffix(f.Name, ".json") {
			continue
		}
		if _, err := readRecord(f); err != nil {
			return 0, fmt.Errorf("%s: %w", f.Name, err)
		}
		n++
	}
	if n == 0 {
		return 0, errors.New("the zip holds no OSV records (*.json)")
	}
	return n, nil
}

// interner shares equal strings of one export: package names, ecosystems,
// versions and vectors repeat across thousands of records.
type interner map[string]string

func (in interner) s(v string) string {
	if v == "" {
		return ""
	}
	if c, ok := in[v]; ok {
		return c
	}
	in[v] = v
	return v
}

func (in interner) all(vs []string) []string {
	for i := range vs {
		vs[i] = in.s(vs[i])
	}
	return vs
}

// compact drops what matching never reads from a loaded record and shares
// repeated strings, so a full Debian + Ubuntu + Alpine export stays well
// inside the scanner's memory budget (BenchmarkScannerRSS):
//   - details: only its first line serves as the summary when there is none;
//   - package purls and Ubuntu's per-CVE rating map (its ratings are moved
//     into the affected entry's severity list, which rates it the same);
//   - an affected entry's "versions" when it has an ECOSYSTEM range: the
//     distributions' exports enumerate the versions their ranges cover, so
//     the range decides alone (records with versions only keep them).
func (in interner) compact(r *Record) {
	if r.Summary == "" {
		r.Summary = firstLine(r.Details, 200)
	}
	r.Details = ""
	r.Aliases, r.Related, r.Upstream = in.all(r.Aliases), in.all(r.Related), in.all(r.Upstream)
	for i := range r.Severity {
		r.Severity[i].Type, r.Severity[i].Score = in.s(r.Severity[i].Type), in.s(r.Severity[i].Score)
	}
	for i := range r.Affected {
		a := &r.Affected[i]
		a.Package.Ecosystem, a.Package.Name, a.Package.PURL = in.s(a.Package.Ecosystem), in.s(a.Package.Name), ""
		for _, c := range a.DatabaseSpecific.CVEsMap.CVEs {
			for _, sv := range c.Severity {
				if !slices.Contains(a.Severity, sv) {
					a.Severity = append(a.Severity, sv)
				}
			}
		}
		a.DatabaseSpecific.CVEsMap.CVEs = nil
		for j := range a.Severity {
			a.Severity[j].Type, a.Severity[j].Score = in.s(a.Severity[j].Type), in.s(a.Severity[j].Score)
		}
		a.EcosystemSpecific.Severity, a.EcosystemSpecific.Urgency = in.s(a.EcosystemSpecific.Severity), in.s(a.EcosystemSpecific.Urgency)
		a.DatabaseSpecific.Severity = in.s(a.DatabaseSpecific.Severity)
		ranged := false
		for j := range a.Ranges {
			rg := &a.Ranges[j]
			rg.Type = in.s(rg.Type)
			for k := range rg.Events {
				e := &rg.Events[k]
				e.Introduced, e.Fixed, e.LastAffected, e.Limit = in.s(e.Introduced), in.s(e.Fixed), in.s(e.LastAffected), in.s(e.Limit)
			}
			if rg.Type == "ECOSYSTEM" && len(rg.Events) > 0 {
				ranged = true
			}
		}
		if ranged {
			a.Versions = nil
		} else {
			a.Versions = in.all(a.Versions)
		}
	}
}

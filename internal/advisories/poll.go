package advisories

import (
	"archive/zip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/facts"
	"github.com/lcmproject/lcm/internal/sbom"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/vulndb"
)

// maxPerPoll bounds the records one poll of an ecosystem reads: a source
// that regenerated everything (osv.dev does, now and then) is caught up
// over several polls instead of in one run of hours.
const maxPerPoll = 2000

// maxCSV and maxRecord bound the downloads (Debian's modified_id.csv is a
// few MB; records are a few kB, the kernel's the largest).
const (
	maxCSV    = 64 << 20
	maxRecord = 32 << 20
)

// EcosystemPoll is one ecosystem's part of a poll.
type EcosystemPoll struct {
	Ecosystem string    `json:"ecosystem"`
	Servers   int       `json:"servers"`
	New       int       `json:"new_records"` // records modified since the cursor
	Read      int       `json:"records_read"`
	Findings  int       `json:"findings_created"`
	Cursor    time.Time `json:"cursor"`
	Offline   bool      `json:"from_mirror,omitempty"` // the source failed; the mirror's list was used
	Error     string    `json:"error,omitempty"`
}

// PollSummary is the outcome of a poll.
type PollSummary struct {
	StartedAt  time.Time       `json:"started_at"`
	FinishedAt time.Time       `json:"finished_at"`
	Skipped    string          `json:"skipped,omitempty"`
	Servers    int             `json:"servers"`
	Ecosystems []EcosystemPoll `json:"ecosystems"`
	Findings   int             `json:"findings_created"`
}

// fleetServer is one server's SBOM input, with its ecosystem.
type fleetServer struct {
	in  sbom.Server
	eco string
}

// fleet reads the package records of every server LCM matches OSV data
// for (servers never refreshed have none yet).
func (s *Service) fleet(ctx context.Context) ([]fleetServer, error) {
	ids, err := s.store.ServerIDs(ctx, false)
	if err != nil {
		return nil, err
	}
	var out []fleetServer
	for _, id := range ids {
		fr, err := s.store.ServerFactsOf(ctx, store.SystemScope, id)
		if errors.Is(err, domain.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		var f facts.Facts
		_ = json.Unmarshal(fr.FactsJSON, &f)
		eco := vulndb.EcosystemOf(f.OS.ID)
		if eco == "" {
			continue
		}
		pkgs, err := s.store.ServerPackages(ctx, store.SystemScope, id)
		if err != nil {
			return nil, err
		}
		in := sbom.Server{ID: id, OSID: f.OS.ID, OSVersion: f.OS.VersionID, OSPretty: f.OS.PrettyName, Packages: make([]sbom.Package, len(pkgs))}
		for i, p := range pkgs {
			in.Packages[i] = sbom.Package{Name: p.Name, Version: p.Version, Arch: p.Arch, Source: p.Source, Manager: p.Manager}
		}
		out = append(out, fleetServer{in: in, eco: eco})
	}
	return out, nil
}

// Poll reads the advisories modified since the last poll for every
// ecosystem the fleet runs, and stores the findings they cause. scheduled
// polls do nothing while the early warning is off; a manual one is
// refused then.
func (s *Service) Poll(ctx context.Context, scheduled bool) (PollSummary, error) {
	sum := PollSummary{StartedAt: s.now(), Ecosystems: []EcosystemPoll{}}
	set, err := s.Settings(ctx)
	if err != nil {
		return sum, err
	}
	if !set.Enabled {
		if scheduled {
			sum.Skipped = "early warning is switched off"
			return sum, nil
		}
		return sum, errDisabled
	}
	if !s.pollMu.TryLock() {
		return sum, domain.Conflict("poll_running", "a poll is already running")
	}
	defer s.pollMu.Unlock()
	servers, err := s.fleet(ctx)
	if err != nil {
		return sum, err
	}
	sum.Servers = len(servers)
	byEco := map[string][]fleetServer{}
	for _, fs := range servers {
		byEco[fs.eco] = append(byEco[fs.eco], fs)
	}
	ecos := make([]string, 0, len(byEco))
	for e := range byEco {
		ecos = append(ecos, e)
	}
	sort.Strings(ecos)
	cursors, err := s.store.AdvisoryCursors(ctx)
	if err != nil {
		return sum, err
	}
	var created []store.EarlyWarning
	var errs []error
	for _, eco := range ecos {
		ep, c, err := s.pollEcosystem(ctx, set.BaseURL, eco, byEco[eco], cursors[eco])
		created = append(created, c...)
		if err != nil {
			ep.Error = err.Error()
			errs = append(errs, fmt.Errorf("%s: %w", eco, err))
		}
		sum.Ecosystems = append(sum.Ecosystems, ep)
		sum.Findings += ep.Findings
	}
	sum.FinishedAt = s.now()
	runErr := errors.Join(errs...)
	s.run(ctx, "poll", sum.StartedAt, sum, runErr)
	if len(created) > 0 && s.o.OnCreated != nil {
		s.o.OnCreated(ctx, created)
	}
	if runErr != nil {
		s.log.Warn("advisory poll had errors", "err", runErr)
	}
	return sum, nil
}

func (s *Service) pollEcosystem(ctx context.Context, base, eco string, servers []fleetServer, cur store.AdvisoryCursor) (EcosystemPoll, []store.EarlyWarning, error) {
	ep := EcosystemPoll{Ecosystem: eco, Servers: len(servers)}
	since := cur.Cursor
	if since.IsZero() {
		since = s.now().Add(-s.o.Lookback)
	}
	ep.Cursor = since
	save := func(err error) {
		c := store.AdvisoryCursor{Ecosystem: eco, Cursor: ep.Cursor, PolledAt: s.now(), Records: ep.Read}
		if err != nil {
			c.Error = err.Error()
		}
		if perr := s.store.PutAdvisoryCursor(context.WithoutCancel(ctx), c); perr != nil {
			s.log.Warn("advisory cursor not stored", "ecosystem", eco, "err", perr)
		}
	}
	raw, err := s.fetch(ctx, ecoURL(base, eco, "modified_id.csv"), maxCSV)
	if err != nil {
		local, lerr := os.ReadFile(filepath.Join(s.o.MirrorDir, eco, "modified_id.csv"))
		if lerr != nil {
			save(err)
			return ep, nil, err
		}
		raw, ep.Offline = local, true
		s.log.Warn("advisory source unreachable; polling the local mirror", "ecosystem", eco, "err", err)
	}
	entries, err := vulndb.ParseModifiedIDs(raw)
	if err != nil {
		save(err)
		return ep, nil, err
	}
	var todo []vulndb.ModifiedEntry
	for _, e := range entries {
		if e.Ecosystem != "" && e.Ecosystem != eco {
			continue
		}
		if e.Modified.After(since) {
			todo = append(todo, e)
		}
	}
	// Oldest first, so the cursor can advance over what was read when a
	// poll stops at maxPerPoll.
	sort.SliceStable(todo, func(i, j int) bool { return todo[i].Modified.Before(todo[j].Modified) })
	ep.New = len(todo)
	if len(todo) > maxPerPoll {
		todo = todo[:maxPerPoll]
	}
	rc := s.openRecordCache(eco)
	defer rc.close()
	var recs []*vulndb.Record
	var firstFail *time.Time
	var fetchErrs []error
	newest := since
	for _, e := range todo {
		r, err := s.record(ctx, base, eco, e, rc)
		if err != nil {
			if isNotFound(err) { // withdrawn from the bucket since the list was written
				continue
			}
			fetchErrs = append(fetchErrs, err)
			if firstFail == nil {
				t := e.Modified
				firstFail = &t
			}
			continue
		}
		ep.Read++
		recs = append(recs, r)
		if firstFail == nil && e.Modified.After(newest) {
			newest = e.Modified
		}
	}
	ep.Cursor = newest
	var created []store.EarlyWarning
	if len(recs) > 0 {
		ws := s.match(recs, servers)
		c, err := s.store.AddEarlyWarnings(ctx, ws, s.now())
		if err != nil {
			save(err)
			return ep, nil, err
		}
		created, ep.Findings = c, len(c)
	}
	ferr := errors.Join(fetchErrs...)
	if len(fetchErrs) > 3 {
		ferr = fmt.Errorf("%d records could not be read, the first: %w", len(fetchErrs), fetchErrs[0])
	}
	save(ferr)
	return ep, created, ferr
}

// match matches the records against each distinct package set once.
func (s *Service) match(recs []*vulndb.Record, servers []fleetServer) []store.EarlyWarning {
	db := vulndb.FromRecords(recs)
	db.BorrowSeverities(s.loadMirrorDB())
	modified := map[string]time.Time{}
	for _, r := range recs {
		modified[r.ID] = r.ModifiedAt()
	}
	type group struct {
		in  sbom.Server
		ids []string
	}
	groups := map[string]*group{}
	var order []string
	for _, fs := range servers {
		k := sbom.PackageSetKey(fs.in)
		if g := groups[k]; g != nil {
			g.ids = append(g.ids, fs.in.ID)
			continue
		}
		groups[k] = &group{in: fs.in, ids: []string{fs.in.ID}}
		order = append(order, k)
	}
	var out []store.EarlyWarning
	now := s.now()
	for _, k := range order {
		g := groups[k]
		for _, f := range db.Match(sbom.Components(sbom.Build(g.in, now))) {
			for _, id := range g.ids {
				out = append(out, store.EarlyWarning{ServerID: id, Advisory: f.Advisory, Package: f.Package, Source: f.Source,
					Installed: f.Installed, Fixed: f.Fixed, Severity: f.Severity, CVEs: f.CVEs, CVSS: f.CVSS, Summary: f.Summary,
					Ecosystem: f.Ecosystem, AdvisoryModified: modified[f.Advisory]})
			}
		}
	}
	cs := db.CacheStats()
	s.matchHits.Add(cs.Hits)
	s.matchMisses.Add(cs.Misses)
	return out
}

// recordCache finds records locally: the records fetched before
// (<mirror>/<eco>/records/<id>.json) and the mirrored all.zip.
type recordCache struct {
	dir string
	zr  *zip.ReadCloser
	zf  map[string]*zip.File
}

func (s *Service) openRecordCache(eco string) *recordCache {
	rc := &recordCache{}
	if s.o.MirrorDir == "" {
		return rc
	}
	rc.dir = filepath.Join(s.o.MirrorDir, eco, "records")
	if zr, err := zip.OpenReader(filepath.Join(s.o.MirrorDir, eco, "all.zip")); err == nil {
		rc.zr, rc.zf = zr, make(map[string]*zip.File, len(zr.File))
		for _, f := range zr.File {
			rc.zf[f.Name] = f
		}
	}
	return rc
}

func (rc *recordCache) close() {
	if rc.zr != nil {
		rc.zr.Close()
	}
}

func (rc *recordCache) lookup(id string) *vulndb.Record {
	var best *vulndb.Record
	if rc.dir != "" {
		if b, err := os.ReadFile(filepath.Join(rc.dir, id+".json")); err == nil {
			if r, err := vulndb.ParseRecord(b); err == nil && r.ID == id {
				best = r
			}
		}
	}
	if f := rc.zf[id+".json"]; f != nil {
		if r, err := readZipRecord(f); err == nil && r.ID == id && (best == nil || r.ModifiedAt().After(best.ModifiedAt())) {
			best = r
		}
	}
	return best
}

func readZipRecord(f *zip.File) (*vulndb.Record, error) {
	rc, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, maxRecord))
	if err != nil {
		return nil, err
	}
	return vulndb.ParseRecord(b)
}

// record returns the record of an entry: from the cache when it is at
// least as new as the list says, else from the source (then cached).
func (s *Service) record(ctx context.Context, base, eco string, e vulndb.ModifiedEntry, rc *recordCache) (*vulndb.Record, error) {
	if r := rc.lookup(e.ID); r != nil && !r.ModifiedAt().Before(e.Modified) {
		s.recordHits.Add(1)
		return r, nil
	}
	s.recordMisses.Add(1)
	b, err := s.fetch(ctx, ecoURL(base, eco, e.ID+".json"), maxRecord)
	if err != nil {
		return nil, err
	}
	r, err := vulndb.ParseRecord(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", e.ID, err)
	}
	if r.ID != e.ID {
		return nil, fmt.Errorf("%s.json holds the record %q", e.ID, r.ID)
	}
	if rc.dir != "" {
		if err := os.MkdirAll(rc.dir, 0o750); err == nil {
			tmp := filepath.Join(rc.dir, "."+e.ID+".tmp")
			if err := os.WriteFile(tmp, b, 0o640); err == nil {
				_ = os.Rename(tmp, filepath.Join(rc.dir, e.ID+".json"))
			}
		}
	}
	return r, nil
}

// loadMirrorDB loads the mirror once (after each mirror run) for the
// severities of CVE ids the polled records do not rate themselves.
func (s *Service) loadMirrorDB() *vulndb.DB {
	if s.mirrorLoaded.Load() || s.o.MirrorDir == "" {
		return s.mirrorDB.Load()
	}
	db, err := vulndb.Load(s.o.MirrorDir)
	if err == nil {
		s.mirrorDB.Store(db)
	}
	s.mirrorLoaded.Store(true)
	return s.mirrorDB.Load()
}

package advisories

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/safe"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/vulndb"
)

// maxZip bounds one mirrored all.zip (Debian's is ~100 MB, Ubuntu's less).
const maxZip = 4 << 30

// MirrorEcosystem is one ecosystem's part of a mirror run.
type MirrorEcosystem struct {
	Ecosystem string `json:"ecosystem"`
	Records   int    `json:"records"`
	Bytes     int64  `json:"bytes"`
	Uploaded  bool   `json:"uploaded_to_scanners"`
	Error     string `json:"error,omitempty"`
}

// MirrorSummary is the outcome of a mirror run.
type MirrorSummary struct {
	StartedAt  time.Time         `json:"started_at"`
	FinishedAt time.Time         `json:"finished_at"`
	Ecosystems []MirrorEcosystem `json:"ecosystems"`
}

// Mirror downloads <ecosystem>/all.zip and modified_id.csv of every
// ecosystem the fleet runs into the mirror directory and hands each
// all.zip to the scanners. It works with the early warning switched off
// (it is an explicit operator action).
func (s *Service) Mirror(ctx context.Context) (MirrorSummary, error) {
	if s.o.MirrorDir == "" {
		return MirrorSummary{}, domain.Unavailable("mirror_unavailable", "no mirror directory is configured")
	}
	if !s.mirrorMu.TryLock() {
		return MirrorSummary{}, domain.Conflict("mirror_running", "a mirror run is already running")
	}
	defer s.mirrorMu.Unlock()
	return s.mirror(ctx)
}

// StartMirror starts a mirror run in the background (downloads take
// minutes); its outcome is the status's last_mirror.
func (s *Service) StartMirror(ctx context.Context) error {
	if s.o.MirrorDir == "" {
		return domain.Unavailable("mirror_unavailable", "no mirror directory is configured")
	}
	if !s.mirrorMu.TryLock() {
		return domain.Conflict("mirror_running", "a mirror run is already running")
	}
	go func() {
		defer s.mirrorMu.Unlock()
		var err error
		if safe.Do("advisory mirror", func() { _, err = s.mirror(context.WithoutCancel(ctx)) }) {
			err = errors.New("internal error in the mirror run (logged with its stack)")
		}
		if err != nil {
			s.run(ctx, "mirror", s.now(), nil, err)
			s.log.Warn("advisory mirror failed", "err", err)
		}
	}()
	return nil
}

func (s *Service) mirror(ctx context.Context) (MirrorSummary, error) {
	sum := MirrorSummary{StartedAt: s.now(), Ecosystems: []MirrorEcosystem{}}
	set, err := s.Settings(ctx)
	if err != nil {
		return sum, err
	}
	servers, err := s.fleet(ctx)
	if err != nil {
		return sum, err
	}
	seen := map[string]bool{}
	var ecos []string
	for _, fs := range servers {
		if !seen[fs.eco] {
			seen[fs.eco] = true
			ecos = append(ecos, fs.eco)
		}
	}
	sort.Strings(ecos)
	if len(ecos) == 0 {
		return sum, domain.Conflict("no_ecosystems", "no refreshed server runs a distribution with OSV data yet: refresh the servers first")
	}
	var errs []error
	for _, eco := range ecos {
		me := s.mirrorEcosystem(ctx, set.BaseURL, eco)
		if me.Error != "" {
			errs = append(errs, fmt.Errorf("%s: %s", eco, me.Error))
		}
		sum.Ecosystems = append(sum.Ecosystems, me)
	}
	s.mirrorLoaded.Store(false) // severities are read from the new files
	s.mirrorDB.Store(nil)
	sum.FinishedAt = s.now()
	s.run(ctx, "mirror", sum.StartedAt, sum, errors.Join(errs...))
	return sum, nil
}

func (s *Service) mirrorEcosystem(ctx context.Context, base, eco string) MirrorEcosystem {
	me := MirrorEcosystem{Ecosystem: eco}
	dir := filepath.Join(s.o.MirrorDir, eco)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		me.Error = err.Error()
		return me
	}
	tmp, err := os.CreateTemp(dir, ".all.zip-*")
	if err != nil {
		me.Error = err.Error()
		return me
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	if me.Bytes, err = s.download(ctx, ecoURL(base, eco, "all.zip"), tmp); err != nil {
		me.Error = err.Error()
		return me
	}
	if me.Records, err = vulndb.CheckZip(tmp, me.Bytes); err != nil {
		me.Error = "not an OSV export: " + err.Error()
		return me
	}
	if err := tmp.Sync(); err != nil {
		me.Error = err.Error()
		return me
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, "all.zip")); err != nil {
		me.Error = err.Error()
		return me
	}
	if csv, err := s.fetch(ctx, ecoURL(base, eco, "modified_id.csv"), maxCSV); err == nil {
		if _, perr := vulndb.ParseModifiedIDs(csv); perr == nil {
			_ = os.WriteFile(filepath.Join(dir, "modified_id.csv"), csv, 0o640)
		}
	} else if !isNotFound(err) {
		me.Error = "modified_id.csv: " + err.Error()
	}
	if s.o.Uploader != nil {
		f, err := os.Open(filepath.Join(dir, "all.zip"))
		if err == nil {
			_, err = s.o.Uploader.UploadDB(ctx, eco, f, me.Bytes)
			f.Close()
		}
		if err != nil {
			me.Error = joinMsg(me.Error, "upload to the scanners: "+err.Error())
		} else {
			me.Uploaded = true
		}
	}
	return me
}

func joinMsg(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func (s *Service) download(ctx context.Context, rawURL string, w io.Writer) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return 0, err
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, &httpError{url: rawURL, status: resp.StatusCode}
	}
	n, err := io.Copy(w, io.LimitReader(resp.Body, maxZip+1))
	if err != nil {
		return n, fmt.Errorf("GET %s: %w", rawURL, err)
	}
	if n > maxZip {
		return n, fmt.Errorf("GET %s: larger than %d bytes", rawURL, int64(maxZip))
	}
	return n, nil
}

// MirrorFile is one ecosystem's mirrored export.
type MirrorFile struct {
	Ecosystem  string    `json:"ecosystem"`
	Bytes      int64     `json:"bytes"`
	ModifiedAt time.Time `json:"modified_at"`
}

// Status is GET /security/advisories/status.
type Status struct {
	Settings      Settings     `json:"settings"`
	LastPoll      *Run         `json:"last_poll,omitempty"`
	LastMirror    *Run         `json:"last_mirror,omitempty"`
	Cursors       []CursorView `json:"ecosystems"`
	Mirror        []MirrorFile `json:"mirror"`
	Open          int64        `json:"open"`
	Acknowledged  int64        `json:"acknowledged"`
	Exploitation  string       `json:"exploitation_signal"`
	PollRunning   bool         `json:"poll_running"`
	MirrorRunning bool         `json:"mirror_running"`
}

// Run is a poll or mirror run as the status shows it.
type Run struct {
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`
	Error      string    `json:"error,omitempty"`
	Detail     any       `json:"detail,omitempty"`
}

// CursorView is one ecosystem's poll position.
type CursorView struct {
	Ecosystem string    `json:"ecosystem"`
	Cursor    time.Time `json:"cursor"`
	PolledAt  time.Time `json:"polled_at"`
	Records   int       `json:"records_read"`
	Error     string    `json:"error,omitempty"`
}

// Status reports settings, the last poll and mirror runs, the poll
// positions, the mirror's files and the findings visible to p.
func (s *Service) Status(ctx context.Context, p *domain.Principal) (Status, error) {
	st := Status{Cursors: []CursorView{}, Mirror: []MirrorFile{},
		Exploitation: "not available: no configured source carries an exploitation signal (EUVD)"}
	var err error
	if st.Settings, err = s.Settings(ctx); err != nil {
		return st, err
	}
	runs, err := s.store.AdvisoryRuns(ctx)
	if err != nil {
		return st, err
	}
	for kind, dst := range map[string]**Run{"poll": &st.LastPoll, "mirror": &st.LastMirror} {
		if r, ok := runs[kind]; ok {
			v := &Run{StartedAt: r.StartedAt, FinishedAt: r.FinishedAt, Error: r.Error}
			if len(r.Detail) > 0 {
				v.Detail = jsonRaw(r.Detail)
			}
			*dst = v
		}
	}
	cur, err := s.store.AdvisoryCursors(ctx)
	if err != nil {
		return st, err
	}
	for _, c := range cur {
		st.Cursors = append(st.Cursors, CursorView{Ecosystem: c.Ecosystem, Cursor: c.Cursor, PolledAt: c.PolledAt, Records: c.Records, Error: c.Error})
	}
	sort.Slice(st.Cursors, func(i, j int) bool { return st.Cursors[i].Ecosystem < st.Cursors[j].Ecosystem })
	if s.o.MirrorDir != "" {
		for _, eco := range vulndb.Ecosystems {
			if fi, err := os.Stat(filepath.Join(s.o.MirrorDir, eco, "all.zip")); err == nil {
				st.Mirror = append(st.Mirror, MirrorFile{Ecosystem: eco, Bytes: fi.Size(), ModifiedAt: fi.ModTime().UTC()})
			}
		}
	}
	if s.mirrorMu.TryLock() {
		s.mirrorMu.Unlock()
	} else {
		st.MirrorRunning = true
	}
	if s.pollMu.TryLock() {
		s.pollMu.Unlock()
	} else {
		st.PollRunning = true
	}
	if st.Open, st.Acknowledged, err = s.store.EarlyWarningCounts(ctx, store.ScopeOf(p)); err != nil {
		return st, err
	}
	return st, nil
}

// Cache is one lookup cache's counters.
type Cache struct {
	Name        string  `json:"name"`
	Description string  `json:"description"`
	Known       bool    `json:"known"`
	Hits        int64   `json:"hits"`
	Misses      int64   `json:"misses"`
	Entries     int64   `json:"entries,omitempty"`
	HitRatio    float64 `json:"hit_ratio"`
}

func cacheOf(name, desc string, hits, misses, entries int64) Cache {
	c := Cache{Name: name, Description: desc, Known: true, Hits: hits, Misses: misses, Entries: entries}
	if hits+misses > 0 {
		c.HitRatio = float64(hits) / float64(hits+misses)
	}
	return c
}

// Caches reports the hit statistics of the vulnerability lookups: this
// replica's counters since it started, and the scanners' since their
// database was loaded.
func (s *Service) Caches(ctx context.Context) []Cache {
	out := []Cache{
		cacheOf("advisory_records", "early warning: advisory records found in the local record cache or mirror instead of fetched from the source",
			s.recordHits.Load(), s.recordMisses.Load(), 0),
		cacheOf("early_warning_match", "early warning: package versions matched once per poll and reused for servers sharing them",
			s.matchHits.Load(), s.matchMisses.Load(), 0),
	}
	sc := Cache{Name: "scanner_match", Description: "scanner: package versions matched once per database load and reused across servers"}
	if s.o.ScannerCache != nil {
		if c, ok := s.o.ScannerCache(ctx); ok && c != nil {
			sc = cacheOf(sc.Name, sc.Description, c.Hits, c.Misses, c.Entries)
		}
	}
	return append(out, sc)
}

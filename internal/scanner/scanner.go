// Package scanner is the lcm-scanner process: it answers scan requests
// from the bus (queue group "scanners", so several share the work),
// matching each CycloneDX SBOM against its offline OSV database. It holds
// no database connection and no master key; the managed servers are
// never contacted. Uploaded databases reach it through the bus's object
// store; an operator can also fill its directory by hand.
package scanner

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/lcmproject/lcm/internal/bus"
	"github.com/lcmproject/lcm/internal/metrics"
	"github.com/lcmproject/lcm/internal/sbom"
	"github.com/lcmproject/lcm/internal/vulndb"
)

// Engine is the built-in OSV engine's name.
const Engine = "osv"

// Scanner holds one loaded database and answers requests.
type Scanner struct {
	dir  string
	name string
	log  *slog.Logger

	db       atomic.Pointer[vulndb.DB]
	loadedAt atomic.Pointer[time.Time]
	reason   atomic.Pointer[string]
	reload   sync.Mutex

	// Trivy, when set, is the engine instead of the built-in OSV matcher
	// (selected per installation: scanner.engine "trivy").
	Trivy *Trivy

	// InlineLimit overrides the reply size above which results go through
	// the object store (0: the NATS payload limit; tests set it low).
	InlineLimit int64
}

// New returns a scanner over the OSV export in dir (<ecosystem>/all.zip)
// and loads it. A missing database is not an error: the scanner reports
// itself disabled with the reason until one arrives.
func New(dir, name string, log *slog.Logger) *Scanner {
	if log == nil {
		log = slog.Default()
	}
	s := &Scanner{dir: dir, name: name, log: log}
	s.Reload()
	return s
}

// Reload reads the directory again (after an import).
func (s *Scanner) Reload() {
	s.reload.Lock()
	defer s.reload.Unlock()
	db, err := vulndb.Load(s.dir)
	if err != nil {
		reason := fmt.Sprintf("no vulnerability database in %s: %v", s.dir, err)
		if errors.Is(err, vulndb.ErrEmpty) {
			reason = fmt.Sprintf("no vulnerability database: upload an OSV export (<ecosystem>/all.zip) or copy one into %s", s.dir)
		}
		if s.db.Load() == nil {
			s.reason.Store(&reason)
		}
		s.log.Warn("vulnerability database not loaded", "dir", s.dir, "err", err)
		return
	}
	now := time.Now().UTC()
	s.db.Store(db)
	s.loadedAt.Store(&now)
	s.reason.Store(nil)
	s.log.Info("vulnerability database loaded", "dir", s.dir, "records", db.Records(), "ecosystems", len(db.Ecosystems()))
}

// Status reports the engine and database.
func (s *Scanner) Status() bus.ScannerStatus {
	st := bus.ScannerStatus{V: bus.MessageVersion, Scanner: s.name, Ecosystems: []bus.ScannerEcosystem{}}
	if s.Trivy != nil {
		st.Engine = EngineTrivy
		meta, err := s.Trivy.Database()
		if err != nil {
			st.Reason = err.Error()
			return st
		}
		st.Enabled = true
		st.Newest, st.LoadedAt = &meta.UpdatedAt, &meta.DownloadedAt
		return st
	}
	db := s.db.Load()
	if db == nil {
		if r := s.reason.Load(); r != nil {
			st.Reason = *r
		}
		return st
	}
	st.Engine, st.Enabled, st.Records = Engine, true, db.Records()
	n := db.Newest()
	st.Newest, st.LoadedAt = &n, s.loadedAt.Load()
	cs := db.CacheStats()
	st.Cache = &bus.CacheCounters{Hits: cs.Hits, Misses: cs.Misses, Entries: cs.Entries}
	for _, e := range db.Ecosystems() {
		st.Ecosystems = append(st.Ecosystems, bus.ScannerEcosystem{Name: e.Name, Records: e.Records, ImportedAt: e.ImportedAt, Newest: e.Newest})
	}
	return st
}

// maxSBOM bounds an unpacked SBOM (a server with 20,000 packages is ~10 MiB).
const maxSBOM = 64 << 20

// Scan matches one request, counted in lcm_scanner_scans_total and timed
// in lcm_scanner_scan_duration_seconds.
func (s *Scanner) Scan(req bus.ScanRequest) bus.ScanResult {
	start := time.Now()
	res := s.scan(req)
	result := "ok"
	switch {
	case res.Disabled:
		result = "disabled"
	case res.Error != "":
		result = "error"
	}
	engine := s.engine()
	metrics.ScannerScans.WithLabelValues(engine, result).Inc()
	if result != "disabled" {
		metrics.ScannerScanDuration.WithLabelValues(engine).Observe(time.Since(start).Seconds())
	}
	return res
}

// engine names the engine this scanner matches with.
func (s *Scanner) engine() string {
	if s.Trivy != nil {
		return EngineTrivy
	}
	return Engine
}

// RegisterMetrics adds the database gauges, read at scrape time, to this
// process's metrics: records loaded (0 without a database) and the
// newest record's modification time.
func (s *Scanner) RegisterMetrics(log *slog.Logger) {
	metrics.GaugeFunc("lcm_scanner_database_records", "Vulnerability records the scanner has loaded (0: no database, scans answer disabled).",
		nil, time.Second, log, func(context.Context) ([]metrics.Gauge, error) {
			n := 0
			if db := s.db.Load(); db != nil {
				n = db.Records()
			}
			return []metrics.Gauge{{Value: float64(n)}}, nil
		})
	metrics.GaugeFunc("lcm_scanner_database_newest_timestamp_seconds", "Modification time of the newest record in the scanner's database (Unix seconds; absent without a database).",
		nil, time.Second, log, func(context.Context) ([]metrics.Gauge, error) {
			db := s.db.Load()
			if db == nil {
				return nil, nil
			}
			return []metrics.Gauge{{Value: float64(db.Newest().Unix())}}, nil
		})
}

// scan matches one request.
func (s *Scanner) scan(req bus.ScanRequest) bus.ScanResult {
	res := bus.ScanResult{V: bus.MessageVersion, Key: req.Key, Scanner: s.name}
	db := s.db.Load()
	if db == nil && s.Trivy == nil {
		res.Disabled = true
		if r := s.reason.Load(); r != nil {
			res.Reason = *r
		}
		return res
	}
	if s.Trivy != nil {
		if _, err := s.Trivy.Database(); err != nil {
			res.Disabled, res.Reason = true, err.Error()
			return res
		}
	}
	res.Engine = Engine
	zr, err := gzip.NewReader(bytes.NewReader(req.SBOMGzip))
	if err != nil {
		res.Error = "the SBOM is not gzip data: " + err.Error()
		return res
	}
	raw, err := io.ReadAll(io.LimitReader(zr, maxSBOM))
	if err != nil {
		res.Error = "the SBOM is not gzip data: " + err.Error()
		return res
	}
	bom, err := sbom.Decode(bytes.NewReader(raw))
	if err != nil {
		res.Error = err.Error()
		return res
	}
	var fs []vulndb.Finding
	if s.Trivy != nil {
		res.Engine = EngineTrivy
		if fs, err = s.Trivy.Scan(context.Background(), raw); err != nil {
			res.Error = err.Error()
			return res
		}
	} else {
		fs = db.Match(sbom.Components(bom))
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err := json.NewEncoder(zw).Encode(fs); err != nil {
		res.Error = err.Error()
		return res
	}
	if err := zw.Close(); err != nil {
		res.Error = err.Error()
		return res
	}
	res.FindingsGzip = buf.Bytes()
	return res
}

// resultObjects names large results in the object store.
var resultObjects atomic.Uint64

// reply encodes a result; one larger than the connection's payload limit
// goes through the object store.
func (s *Scanner) reply(ctx context.Context, b *bus.Bus, res bus.ScanResult) []byte {
	out, _ := json.Marshal(res)
	limit := b.NC.MaxPayload() - 4096
	if s.InlineLimit > 0 {
		limit = s.InlineLimit
	}
	if int64(len(out)) < limit {
		return out
	}
	obs, err := b.JS.ObjectStore(ctx, bus.BucketVulnDB)
	if err == nil {
		name := fmt.Sprintf("results/%s-%d-%d", strings.ReplaceAll(s.name, "/", "_"), time.Now().UnixNano(), resultObjects.Add(1))
		if _, err = obs.PutBytes(ctx, name, res.FindingsGzip); err == nil {
			res.FindingsGzip, res.FindingsObject = nil, name
			out, _ = json.Marshal(res)
			return out
		}
	}
	out, _ = json.Marshal(bus.ScanResult{V: bus.MessageVersion, Key: res.Key, Engine: res.Engine, Error: "result too large for the bus: " + fmt.Sprint(err)})
	return out
}

// Serve answers scan and status requests and follows database updates
// until ctx ends. concurrency bounds the requests matched at once.
func (s *Scanner) Serve(ctx context.Context, b *bus.Bus, concurrency int) error {
	if concurrency < 1 {
		concurrency = 2
	}
	s.Sync(ctx, b)
	stopScan, err := b.ServeConcurrently(bus.SubjectScanRequest, bus.QueueScanners, concurrency, func(data []byte) []byte {
		var req bus.ScanRequest
		var res bus.ScanResult
		if err := json.Unmarshal(data, &req); err != nil || req.V > bus.MessageVersion {
			res = bus.ScanResult{V: bus.MessageVersion, Error: "unreadable scan request"}
			metrics.ScannerScans.WithLabelValues(s.engine(), "error").Inc()
		} else {
			res = s.Scan(req)
		}
		return s.reply(ctx, b, res)
	})
	if err != nil {
		return err
	}
	defer stopScan()
	// Every scanner answers a status request (no queue group): the control
	// plane sees them all and reports the fleet's weakest (Client.Status).
	stopStatus, err := b.Serve(bus.SubjectScanStatus, "", func([]byte) []byte {
		out, _ := json.Marshal(s.Status())
		return out
	})
	if err != nil {
		return err
	}
	defer stopStatus()
	stopDB, err := b.Subscribe(bus.SubjectScanDBUpdated, func(string, []byte) { s.Sync(ctx, b) })
	if err != nil {
		return err
	}
	defer stopDB()
	<-ctx.Done()
	return nil
}

// Sync copies the uploaded exports of the object store that differ from
// the local ones into the directory and reloads when any changed.
func (s *Scanner) Sync(ctx context.Context, b *bus.Bus) {
	obs, err := b.JS.ObjectStore(ctx, bus.BucketVulnDB)
	if errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
		// Nothing uploaded yet (lcm-api creates the store at start).
		if s.db.Load() == nil {
			s.Reload()
		}
		return
	}
	if err != nil {
		s.log.Warn("vulnerability database store unavailable", "err", err)
		return
	}
	infos, err := obs.List(ctx)
	if err != nil && !errors.Is(err, jetstream.ErrNoObjectsFound) {
		s.log.Warn("listing uploaded vulnerability databases", "err", err)
		return
	}
	changed := false
	for _, info := range infos {
		eco, file := path.Split(info.Name)
		eco = strings.TrimSuffix(eco, "/")
		if file != "all.zip" || !vulndb.KnownEcosystem(eco) || info.Deleted { // also skips results/
			continue
		}
		dst := filepath.Join(s.dir, eco, "all.zip")
		if d, _ := os.ReadFile(dst + ".digest"); string(d) == info.Digest {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			s.log.Warn("vulnerability database", "err", err)
			continue
		}
		tmp := dst + ".part"
		if err := obs.GetFile(ctx, info.Name, tmp); err != nil {
			s.log.Warn("fetching an uploaded vulnerability database", "object", info.Name, "err", err)
			os.Remove(tmp)
			continue
		}
		if err := os.Rename(tmp, dst); err != nil {
			s.log.Warn("vulnerability database", "err", err)
			continue
		}
		_ = os.WriteFile(dst+".digest", []byte(info.Digest), 0o644)
		changed = true
	}
	if changed || s.db.Load() == nil {
		s.Reload()
	}
}

// VulnDBStore opens the object store of uploaded exports. lcm-api creates
// it (bus.Open, with the configured replicas); a scanner's NATS user may
// not create streams.
func VulnDBStore(ctx context.Context, b *bus.Bus) (jetstream.ObjectStore, error) {
	obs, err := b.JS.ObjectStore(ctx, bus.BucketVulnDB)
	if err != nil {
		return nil, fmt.Errorf("object store %s (lcm-api creates it): %w", bus.BucketVulnDB, err)
	}
	return obs, nil
}

// Package vulnsvc is the control plane's side of vulnerability scanning:
// it builds each server's SBOM from the package records it holds, sends
// it to a scanner over the bus, stores the findings with their life cycle
// (new, acknowledged, fixed) and hands the open ones to the traffic light.
// Servers with identical package sets are matched once per run.
package vulnsvc

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"

	"github.com/lcmproject/lcm/internal/bus"
	"github.com/lcmproject/lcm/internal/containers"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/facts"
	"github.com/lcmproject/lcm/internal/safe"
	"github.com/lcmproject/lcm/internal/sbom"
	"github.com/lcmproject/lcm/internal/scanner"
	"github.com/lcmproject/lcm/internal/status"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/vulndb"
)

// Scanner is what the service needs of the scanners (scanner.Client).
type Scanner interface {
	Scan(ctx context.Context, key string, bom *cdx.BOM) ([]vulndb.Finding, string, error)
	Status(ctx context.Context) (bus.ScannerStatus, bool)
	Upload(ctx context.Context, ecosystem string, zip io.ReaderAt, size int64) (int, error)
}

// Service scans servers and serves the findings.
type Service struct {
	store   *store.Store
	status  *status.Service
	scanner Scanner
	log     *slog.Logger
	now     func() time.Time

	upgrader Upgrader
	bulk     bulkState

	fleetRunning atomic.Bool
	lastRun      atomic.Pointer[RunSummary]
	rescanMu     sync.Mutex
}

// New returns the service.
func New(st *store.Store, stat *status.Service, sc Scanner, log *slog.Logger) *Service {
	if log == nil {
		log = slog.Default()
	}
	return &Service{store: st, status: stat, scanner: sc, log: log, now: func() time.Time { return time.Now().UTC() }}
}

// SetClock replaces the clock (tests).
func (s *Service) SetClock(now func() time.Time) { s.now = now }

// serverSBOM reads what the SBOM of a server is built from; ErrNotFound
// (inventory) when the server was never refreshed.
func (s *Service) serverSBOM(ctx context.Context, id string) (sbom.Server, error) {
	srv, err := s.store.GetServer(ctx, store.SystemScope, id)
	if err != nil {
		return sbom.Server{}, err
	}
	fr, err := s.store.ServerFactsOf(ctx, store.SystemScope, id)
	if err != nil {
		return sbom.Server{}, err
	}
	var f facts.Facts
	_ = json.Unmarshal(fr.FactsJSON, &f)
	pkgs, err := s.store.ServerPackages(ctx, store.SystemScope, id)
	if err != nil {
		return sbom.Server{}, err
	}
	out := sbom.Server{ID: id, Name: srv.Name, OSID: f.OS.ID, OSVersion: f.OS.VersionID, OSPretty: f.OS.PrettyName,
		Packages: make([]sbom.Package, len(pkgs))}
	for i, p := range pkgs {
		out.Packages[i] = sbom.Package{Name: p.Name, Version: p.Version, Arch: p.Arch, Source: p.Source, Manager: p.Manager}
	}
	cps, err := s.containerPackages(ctx, id)
	if err != nil {
		return sbom.Server{}, err
	}
	out.Packages = append(out.Packages, cps...)
	return out, nil
}

// containerPackages are the packages the last container refresh read from
// the server's CVE-relevant containers (issue 15): only containers still
// marked, as "engine/name".
func (s *Service) containerPackages(ctx context.Context, id string) ([]sbom.Package, error) {
	row, err := s.store.GetContainerInventory(ctx, id)
	if errors.Is(err, domain.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var inv containers.Inventory
	if json.Unmarshal(row.Data, &inv) != nil || len(inv.CVEPackages) == 0 {
		return nil, nil
	}
	marks, err := s.store.ContainerCVEMarks(ctx, store.SystemScope, id)
	if err != nil {
		return nil, err
	}
	marked := map[string]bool{}
	for _, m := range marks {
		marked[m.Engine+"/"+m.Container] = true
	}
	var out []sbom.Package
	for _, ip := range inv.CVEPackages {
		name := string(ip.Engine) + "/" + ip.Container
		if ip.Error != "" || !marked[name] {
			continue
		}
		manager := ip.Manager
		if manager == "" {
			manager = "dpkg" // stored before apk images were read
		}
		for _, p := range ip.Packages {
			out = append(out, sbom.Package{Name: p.Name, Version: p.Version, Arch: p.Arch, Source: p.Source, Manager: manager,
				Container: name, OSID: ip.OSID, OSVersion: ip.OSVersion})
		}
	}
	return out, nil
}

// SBOM returns the CycloneDX SBOM of a server visible to p.
func (s *Service) SBOM(ctx context.Context, p *domain.Principal, id string) (*cdx.BOM, error) {
	if err := s.store.ServerVisible(ctx, store.ScopeOf(p), id); err != nil {
		return nil, err
	}
	in, err := s.serverSBOM(ctx, id)
	if err != nil {
		return nil, err
	}
	return sbom.Build(in, s.now()), nil
}

// scanParallel is the number of package sets a run has in flight: enough
// to keep two scanner requests busy while results are stored.
const scanParallel = 4

// A run stores results once storeServers servers or storeFindings
// findings (distinct lists) are waiting.
const (
	storeServers  = 100
	storeFindings = 60000
)

// GroupSBOM returns one SBOM for the servers of a group visible to p
// (servers never refreshed are left out).
func (s *Service) GroupSBOM(ctx context.Context, p *domain.Principal, groupID string) (*cdx.BOM, error) {
	g, err := s.store.GetGroup(ctx, store.ScopeOf(p), groupID)
	if err != nil {
		return nil, err
	}
	var servers []sbom.Server
	for _, id := range g.ServerIDs {
		in, err := s.serverSBOM(ctx, id)
		if errors.Is(err, domain.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		servers = append(servers, in)
	}
	return sbom.BuildGroup(g.ID, g.Name, servers, s.now()), nil
}

// RunSummary is the outcome of a scan run.
type RunSummary struct {
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`
	Servers    int       `json:"servers"`
	Scanned    int       `json:"scanned"`
	Skipped    int       `json:"skipped"` // never refreshed: no package records yet
	Failed     int       `json:"failed"`
	Distinct   int       `json:"distinct_package_sets"`
	Findings   int       `json:"findings"`
	Error      string    `json:"error,omitempty"`
}

// scan scans servers: it groups them by package set, asks a scanner once
// per set, and stores every server's findings.
func (s *Service) scan(ctx context.Context, ids []string) (RunSummary, error) {
	sum := RunSummary{StartedAt: s.now(), Servers: len(ids)}
	type group struct {
		in  sbom.Server
		ids []string
	}
	groups := map[string]*group{}
	var order []string
	for _, id := range ids {
		in, err := s.serverSBOM(ctx, id)
		if errors.Is(err, domain.ErrNotFound) {
			sum.Skipped++
			continue
		}
		if err != nil {
			return sum, err
		}
		k := sbom.PackageSetKey(in)
		if g := groups[k]; g != nil {
			g.ids = append(g.ids, id)
			continue
		}
		groups[k] = &group{in: in, ids: []string{id}}
		order = append(order, k)
	}
	sum.Distinct = len(order)
	// Up to scanParallel sets are in flight at once (scanners share them
	// through the queue group); results are stored here, one at a time, as
	// they arrive, so only a few findings lists are held in memory.
	type result struct {
		g      *group
		fs     []vulndb.Finding
		engine string
		err    error
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make(chan result)
	sem := make(chan struct{}, scanParallel)
	go func() {
		defer safe.Recover("vulnerability scan fan-out")
		for _, k := range order {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			go func(k string) {
				g := groups[k]
				var r result
				if safe.Do("vulnerability scan", func() {
					fs, engine, err := s.scanner.Scan(ctx, k, sbom.Build(g.in, s.now()))
					r = result{g: g, fs: fs, engine: engine, err: err}
				}) {
					r = result{g: g, err: errors.New("internal error while scanning (logged with its stack)")}
				}
				select {
				case results <- r:
				case <-ctx.Done():
				}
				<-sem
			}(k)
		}
	}()
	// Results are stored in batches (store.ApplyScans: a few transactions
	// for the fleet instead of one per server), of up to storeServers
	// servers or storeFindings findings held in memory.
	var (
		changed  []string
		pending  []store.ScanOutcome
		buffered int
	)
	flush := func() error {
		if len(pending) == 0 {
			return nil
		}
		outs := pending
		pending, buffered = nil, 0
		var first error
		for i, err := range s.store.ApplyScans(ctx, outs, s.now()) {
			switch {
			case err == nil:
				sum.Scanned++
				sum.Findings += len(outs[i].Findings)
				changed = append(changed, outs[i].ServerID)
			case errors.Is(err, domain.ErrNotFound): // deleted meanwhile
			case first == nil:
				first = err
			}
		}
		return first
	}
	for range order {
		r := <-results
		if r.err != nil {
			var dis *scanner.ErrDisabled
			if errors.As(r.err, &dis) || errors.Is(r.err, scanner.ErrNoScanner) {
				if err := flush(); err != nil {
					return sum, err
				}
				sum.FinishedAt, sum.Error = s.now(), r.err.Error()
				return sum, domain.Unavailable("scanner_disabled", r.err.Error())
			}
			sum.Failed += len(r.g.ids)
			s.log.Warn("vulnerability scan failed", "servers", len(r.g.ids), "err", r.err)
			continue
		}
		rows := make([]store.VulnFinding, len(r.fs))
		for i, f := range r.fs {
			rows[i] = store.VulnFinding{Advisory: f.Advisory, Package: f.Package, Container: f.Container, Source: f.Source, Installed: f.Installed,
				Fixed: f.Fixed, Severity: f.Severity, CVEs: f.CVEs, CVSS: f.CVSS, Summary: f.Summary, Ecosystem: f.Ecosystem}
		}
		// The servers of one package set share rows (the store digests
		// them once).
		for _, id := range r.g.ids {
			pending = append(pending, store.ScanOutcome{ServerID: id, Engine: r.engine, Findings: rows})
		}
		if buffered += len(rows); len(pending) >= storeServers || buffered >= storeFindings {
			if err := flush(); err != nil {
				return sum, err
			}
		}
	}
	if err := flush(); err != nil {
		return sum, err
	}
	if err := s.status.RecomputeMany(ctx, changed); err != nil {
		return sum, err
	}
	sum.FinishedAt = s.now()
	return sum, nil
}

// ScanServer scans one server visible to p now.
func (s *Service) ScanServer(ctx context.Context, p *domain.Principal, id string) (RunSummary, error) {
	if err := s.store.ServerVisible(ctx, store.ScopeOf(p), id); err != nil {
		return RunSummary{}, err
	}
	if _, err := s.store.ServerFactsOf(ctx, store.SystemScope, id); err != nil {
		return RunSummary{}, domain.Conflict("not_refreshed", "the server has no package records yet: refresh it first")
	}
	return s.scan(ctx, []string{id})
}

// ScanAll scans every server (the daily schedule; system use).
func (s *Service) ScanAll(ctx context.Context) (int, error) {
	if !s.fleetRunning.CompareAndSwap(false, true) {
		return 0, domain.Conflict("scan_running", "a fleet scan is already running")
	}
	defer s.fleetRunning.Store(false)
	ids, err := s.store.ServerIDs(ctx, false)
	if err != nil {
		return 0, err
	}
	// Servers in maintenance mode are left out of the scheduled scan.
	paused, err := s.store.InMaintenance(ctx, ids, time.Now().UTC())
	if err != nil {
		return 0, err
	}
	if len(paused) > 0 {
		ids = slices.DeleteFunc(ids, func(id string) bool { return paused[id] })
	}
	sum, err := s.scan(ctx, ids)
	s.lastRun.Store(&sum)
	return sum.Scanned, err
}

// StartFleetScan scans the servers visible to p in the background (one
// fleet scan at a time).
func (s *Service) StartFleetScan(ctx context.Context, p *domain.Principal) error {
	ids, err := s.store.ServerIDs(ctx, false)
	if err != nil {
		return err
	}
	if _, ok := s.scanner.Status(ctx); !ok {
		return domain.Unavailable("scanner_unavailable", scanner.ErrNoScanner.Error())
	}
	visible, err := s.store.ServersByID(ctx, store.ScopeOf(p), ids)
	if err != nil {
		return err
	}
	if !s.fleetRunning.CompareAndSwap(false, true) {
		return domain.Conflict("scan_running", "a fleet scan is already running")
	}
	vis := make([]string, len(visible))
	for i, v := range visible {
		vis[i] = v.ID
	}
	go func() {
		defer s.fleetRunning.Store(false)
		defer safe.Recover("fleet vulnerability scan")
		sum, err := s.scan(context.WithoutCancel(ctx), vis)
		if err != nil {
			sum.Error = err.Error()
			s.log.Warn("fleet vulnerability scan failed", "err", err)
		}
		s.lastRun.Store(&sum)
	}()
	return nil
}

// Rescan scans servers after their packages changed (job finish hook);
// errors are logged, never fatal to the job.
func (s *Service) Rescan(ctx context.Context, ids []string) {
	s.rescanMu.Lock()
	defer s.rescanMu.Unlock()
	if st, ok := s.scanner.Status(ctx); !ok || !st.Enabled {
		return
	}
	if _, err := s.scan(ctx, ids); err != nil {
		s.log.Warn("rescan after package change failed", "servers", len(ids), "err", err)
	}
}

// Findings lists findings of servers visible to p.
func (s *Service) Findings(ctx context.Context, p *domain.Principal, f store.VulnFilter) ([]store.VulnFinding, int64, error) {
	if f.ServerID != "" {
		if err := s.store.ServerVisible(ctx, store.ScopeOf(p), f.ServerID); err != nil {
			return nil, 0, err
		}
	}
	return s.store.VulnFindings(ctx, store.ScopeOf(p), f)
}

// VulnerablePackages groups the open findings of visible servers by package.
func (s *Service) VulnerablePackages(ctx context.Context, p *domain.Principal, f store.VulnFilter) ([]store.VulnerablePackage, error) {
	return s.store.VulnerablePackages(ctx, store.ScopeOf(p), f)
}

// Acknowledge marks a finding acknowledged by p.
func (s *Service) Acknowledge(ctx context.Context, p *domain.Principal, id uint64) (store.VulnFinding, error) {
	by := ""
	if p != nil {
		by = p.Username
	}
	return s.store.AcknowledgeVuln(ctx, store.ScopeOf(p), id, by, s.now())
}

// Freshness tiers of the database (spec: < 48 h current, ≥ 48 h
// outdated, ≥ 7 d critical).
const (
	FreshCurrent  = "current"
	FreshOutdated = "outdated"
	FreshCritical = "critical"
)

// Freshness is the tier of a database whose newest record is newest.
func Freshness(newest, now time.Time) string {
	age := now.Sub(newest)
	switch {
	case age >= 7*24*time.Hour:
		return FreshCritical
	case age >= 48*time.Hour:
		return FreshOutdated
	}
	return FreshCurrent
}

// ScannerView is GET /security/scanner.
type ScannerView struct {
	Enabled    bool                   `json:"enabled"`
	Reason     string                 `json:"reason,omitempty"`
	Engine     string                 `json:"engine,omitempty"`
	Scanner    string                 `json:"scanner,omitempty"`
	Records    int                    `json:"records"`
	Newest     *time.Time             `json:"database_newest,omitempty"`
	AgeHours   *float64               `json:"database_age_hours,omitempty"`
	Freshness  string                 `json:"freshness,omitempty"`
	Ecosystems []bus.ScannerEcosystem `json:"ecosystems"`
	LastScanAt *time.Time             `json:"last_scan_at,omitempty"`
	FleetScan  bool                   `json:"fleet_scan_running"`
	LastRun    *RunSummary            `json:"last_run,omitempty"`
}

// Status reports the scanners' engine and database.
func (s *Service) Status(ctx context.Context) (ScannerView, error) {
	v := ScannerView{Ecosystems: []bus.ScannerEcosystem{}, FleetScan: s.fleetRunning.Load(), LastRun: s.lastRun.Load()}
	last, err := s.store.LastVulnScan(ctx)
	if err != nil {
		return v, err
	}
	v.LastScanAt = last
	st, ok := s.scanner.Status(ctx)
	if !ok {
		v.Reason = "no scanner answered: the in-process scanner is disabled (scanner.disabled) and no lcm-scanner is connected"
		return v, nil
	}
	v.Enabled, v.Reason, v.Engine, v.Scanner, v.Records, v.Ecosystems = st.Enabled, st.Reason, st.Engine, st.Scanner, st.Records, st.Ecosystems
	if st.Newest != nil && !st.Newest.IsZero() {
		v.Newest = st.Newest
		age := s.now().Sub(*st.Newest).Hours()
		v.AgeHours = &age
		v.Freshness = Freshness(*st.Newest, s.now())
	}
	return v, nil
}

// UploadDB imports one ecosystem's OSV export (all.zip).
func (s *Service) UploadDB(ctx context.Context, ecosystem string, zip io.ReaderAt, size int64) (int, error) {
	if !vulndb.KnownEcosystem(ecosystem) {
		return 0, domain.Invalid("invalid_ecosystem", "ecosystem must be one of Debian, Ubuntu, Alpine, Rocky Linux, AlmaLinux, Red Hat, SUSE, openSUSE")
	}
	if _, err := vulndb.CheckZip(zip, size); err != nil {
		return 0, domain.Invalid("invalid_osv_export", "not an OSV export: "+err.Error())
	}
	return s.scanner.Upload(ctx, ecosystem, zip, size)
}

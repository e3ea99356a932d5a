// Package inventory stores what refresh jobs learn about servers — facts,
// installed and outdated packages, storage samples — and serves the reads:
// hardware, packages, outdated packages, the fleet-wide package overview and
// the storage history with its "days until full" forecast. Every read is
// scoped to the caller's server groups; every ingest triggers a status
// recompute (see package status).
package inventory

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/lcmproject/lcm/internal/containers"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/facts"
	"github.com/lcmproject/lcm/internal/pkgmgr"
	"github.com/lcmproject/lcm/internal/store"
)

// Defaults of the storage history. Each says why.
const (
	// DefaultRetention keeps half a year of daily aggregates: enough for a
	// seasonal trend, small (one row per mount and day).
	DefaultRetention = 180 * 24 * time.Hour
	// KeepRawSamples keeps hourly samples two weeks for debugging a day's
	// curve; older ones live on as daily aggregates.
	KeepRawSamples = 14 * 24 * time.Hour
	// ForecastWindow is the span of daily points the regression fits: the
	// last 30 days follow the current trend, not last quarter's cleanup.
	ForecastWindow = 30
	// minForecastDays: fewer points make a slope of noise.
	minForecastDays = 3
)

// Service is the inventory service.
type Service struct {
	store      *store.Store
	onIngest   func(ctx context.Context, serverIDs []string) error
	containers atomic.Pointer[ContainersHook]
	log        *slog.Logger
	now        func() time.Time
	retention  time.Duration
}

// Options configure the service.
type Options struct {
	// OnIngest runs after every ingest with the servers whose inventory
	// was stored: the status recompute hook (wire
	// status.Service.RecomputeMany). May be nil (benchmarks).
	OnIngest  func(ctx context.Context, serverIDs []string) error
	Retention time.Duration // daily aggregates; 0 = DefaultRetention
	Log       *slog.Logger
	Now       func() time.Time
}

// New returns the service.
func New(st *store.Store, o Options) *Service {
	s := &Service{store: st, onIngest: o.OnIngest, log: o.Log, now: o.Now, retention: o.Retention}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = func() time.Time { return time.Now().UTC() }
	}
	if s.retention <= 0 {
		s.retention = DefaultRetention
	}
	return s
}

// ContainersHook stores the container inventories refresh jobs read
// (containersvc.Service.IngestRefreshes): one error per inventory.
type ContainersHook func(ctx context.Context, cs []containers.Collected) []error

// OnContainers sets the hook IngestJobs hands the refresh jobs' container
// inventories to (nil: they are dropped). The inventory service stores
// packages and facts; the containers are the containers service's.
func (s *Service) OnContainers(h ContainersHook) {
	if h == nil {
		s.containers.Store(nil)
		return
	}
	s.containers.Store(&h)
}

// Refresh is what one refresh of one server learned.
type Refresh struct {
	ServerID  string
	Facts     facts.Facts
	Inventory pkgmgr.Inventory
	// Unchanged: the worker found the packages equal to the stored ones,
	// named by Digest (Inventory is then empty).
	Unchanged bool
	Digest    string
}

// Ingest stores the result of a refresh: facts, the package inventory
// (replace-set), outdated packages, a storage sample of "/" and the opt-in
// volumes; then the status is recomputed.
func (s *Service) Ingest(ctx context.Context, serverID string, f facts.Facts, inv pkgmgr.Inventory) error {
	return s.IngestMany(ctx, []Refresh{{ServerID: serverID, Facts: f, Inventory: inv}})[0]
}

// IngestMany is Ingest for many refresh results at once, in few
// transactions (the jobs ingest hands over the refresh jobs that finished
// together). It returns one error per result, in order: a server deleted
// meanwhile fails alone with domain.ErrNotFound. The status of every
// server stored is recomputed; if that fails, the error is reported for
// each of them (the inventory is stored all the same).
func (s *Service) IngestMany(ctx context.Context, rs []Refresh) []error {
	errs := make([]error, len(rs))
	at := s.now()
	ids := make([]string, len(rs))
	for i, r := range rs {
		ids[i] = r.ServerID
	}
	vols, err := s.store.MonitoredVolumesOf(ctx, ids)
	if err != nil {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	ins := make([]store.InventoryIngest, 0, len(rs))
	idx := make([]int, 0, len(rs)) // ins[k] is rs[idx[k]]
	for i, r := range rs {
		in, err := ingestOf(r, at, vols[r.ServerID])
		if err != nil {
			errs[i] = err
			continue
		}
		ins = append(ins, in)
		idx = append(idx, i)
	}
	var stored []string
	for k, res := range s.store.IngestInventories(ctx, ins) {
		if errs[idx[k]] = res.Err; res.Err == nil {
			stored = append(stored, rs[idx[k]].ServerID)
		}
	}
	if err := s.recompute(ctx, stored); err != nil {
		for _, i := range idx {
			if errs[i] == nil {
				errs[i] = err
			}
		}
	}
	return errs
}

// ingestOf converts a refresh into what the store keeps; vols are the
// server's opt-in mounts besides "/".
func ingestOf(r Refresh, at time.Time, vols []string) (store.InventoryIngest, error) {
	f, inv := r.Facts, r.Inventory
	fj, err := json.Marshal(f)
	if err != nil {
		return store.InventoryIngest{}, fmt.Errorf("inventory: facts: %w", err)
	}
	sec := 0
	for _, u := range inv.Upgradable {
		if u.Security {
			sec++
		}
	}
	manager := inv.Manager
	if manager == "" {
		manager = f.PackageManager
	}
	rec := store.FactsRecord{ServerID: r.ServerID, FactsJSON: fj, PackageManager: manager, Packages: len(inv.Packages),
		Updates: len(inv.Upgradable), SecurityUpdates: sec, RebootRequired: f.Reboot.Required,
		RootUsedPercent: RootUsedPercent(f), CollectedAt: at}
	if r.Unchanged {
		rec.InventoryDigest = r.Digest
		return store.InventoryIngest{Facts: rec, Unchanged: true, Storage: storageSamples(f.Filesystems, vols, at)}, nil
	}
	rec.InventoryDigest = inv.Digest()
	in := store.InventoryIngest{Facts: rec, Packages: make([]store.PackageRecord, len(inv.Packages)),
		Outdated: make([]store.OutdatedRecord, len(inv.Upgradable)), Storage: storageSamples(f.Filesystems, vols, at)}
	for i, p := range inv.Packages {
		m := p.Manager
		if m == "" {
			m = manager
		}
		in.Packages[i] = store.PackageRecord{Name: p.Name, Version: p.Version, Arch: p.Arch, Source: p.Source, Manager: m}
	}
	for i, u := range inv.Upgradable {
		in.Outdated[i] = store.OutdatedRecord{Name: u.Name, Arch: u.Arch, Current: u.Current, Candidate: u.Candidate, Security: u.Security, Held: u.Held}
	}
	return in, nil
}

func (s *Service) recompute(ctx context.Context, serverIDs []string) error {
	if s.onIngest == nil || len(serverIDs) == 0 {
		return nil
	}
	return s.onIngest(ctx, serverIDs)
}

// RootUsedPercent is the used share of "/" as df reports it (used over
// used+available, so reserved blocks count as full), or -1 when unknown.
func RootUsedPercent(f facts.Facts) float64 {
	for _, fs := range f.Filesystems {
		if fs.MountPoint == "/" {
			if d := fs.UsedBytes + fs.AvailBytes; d > 0 {
				return float64(fs.UsedBytes) * 100 / float64(d)
			}
		}
	}
	return -1
}

// RecordStorage stores a sample of "/" and of the server's opt-in volumes
// (network filesystems are never sampled) and updates the root-filesystem
// share the traffic light reads. The status itself is recomputed by the
// finished-job hook that runs after this one (cmd/api registerInventoryHooks).
func (s *Service) RecordStorage(ctx context.Context, serverID string, fss []facts.Filesystem, at time.Time) error {
	vols, err := s.store.MonitoredVolumes(ctx, serverID)
	if err != nil {
		return err
	}
	root := RootUsedPercent(facts.Facts{Filesystems: fss})
	return s.store.RecordStorageSample(ctx, serverID, storageSamples(fss, vols, at), root)
}

// storageSamples picks the samples of "/" and of vols from fss: network
// filesystems never, the first line per mount (overmounts).
func storageSamples(fss []facts.Filesystem, vols []string, at time.Time) []store.StorageSample {
	want := map[string]bool{"/": true}
	for _, v := range vols {
		want[v] = true
	}
	var samples []store.StorageSample
	for _, fs := range fss {
		if !want[fs.MountPoint] || fs.Network || fs.SizeBytes == 0 {
			continue
		}
		want[fs.MountPoint] = false // first line per mount wins (overmounts)
		samples = append(samples, store.StorageSample{Mount: fs.MountPoint, TakenAt: at,
			UsedBytes: int64(fs.UsedBytes), TotalBytes: int64(fs.UsedBytes + fs.AvailBytes)})
	}
	return samples
}

// Aggregate folds raw samples into daily aggregates and applies retention
// (the daily storage task).
func (s *Service) Aggregate(ctx context.Context) (int, error) {
	return s.store.AggregateStorage(ctx, s.now(), KeepRawSamples, s.retention)
}

// Hardware is the last refresh of a server.
type Hardware struct {
	Facts           facts.Facts
	PackageManager  string
	Packages        int
	Updates         int
	SecurityUpdates int
	CollectedAt     time.Time
}

// Hardware returns the facts of a server visible to p.
func (s *Service) Hardware(ctx context.Context, p *domain.Principal, serverID string) (Hardware, error) {
	r, err := s.store.ServerFactsOf(ctx, store.ScopeOf(p), serverID)
	if err != nil {
		return Hardware{}, err
	}
	h := Hardware{PackageManager: r.PackageManager, Packages: r.Packages, Updates: r.Updates,
		SecurityUpdates: r.SecurityUpdates, CollectedAt: r.CollectedAt}
	if err := json.Unmarshal(r.FactsJSON, &h.Facts); err != nil {
		return Hardware{}, fmt.Errorf("inventory: stored facts: %w", err)
	}
	return h, nil
}

// Packages returns the installed packages of a server visible to p.
func (s *Service) Packages(ctx context.Context, p *domain.Principal, serverID string) ([]pkgmgr.Package, error) {
	rows, err := s.store.ServerPackages(ctx, store.ScopeOf(p), serverID)
	if err != nil {
		return nil, err
	}
	out := make([]pkgmgr.Package, len(rows))
	for i, r := range rows {
		out[i] = pkgmgr.Package{Name: r.Name, Version: r.Version, Arch: r.Arch, Source: r.Source, Manager: r.Manager}
	}
	return out, nil
}

// Outdated returns the outdated packages of a server visible to p.
func (s *Service) Outdated(ctx context.Context, p *domain.Principal, serverID string) ([]pkgmgr.Upgradable, error) {
	rows, err := s.store.ServerOutdated(ctx, store.ScopeOf(p), serverID)
	if err != nil {
		return nil, err
	}
	out := make([]pkgmgr.Upgradable, len(rows))
	for i, r := range rows {
		out[i] = pkgmgr.Upgradable{Name: r.Name, Arch: r.Arch, Current: r.Current, Candidate: r.Candidate, Security: r.Security, Held: r.Held}
	}
	return out, nil
}

// Overview page bounds: a page of package names with their servers.
const (
	defaultOverviewLimit = 100
	maxOverviewLimit     = 1000
)

// Overview lists which servers visible to p run which version of each
// package (paged by name; the total counts matching names).
func (s *Service) Overview(ctx context.Context, p *domain.Principal, f store.OverviewFilter) ([]store.PackageOverview, int64, error) {
	if f.Limit <= 0 {
		f.Limit = defaultOverviewLimit
	}
	if f.Limit > maxOverviewLimit {
		return nil, 0, domain.Invalid("invalid_limit", fmt.Sprintf("limit must be at most %d", maxOverviewLimit))
	}
	if f.Offset < 0 {
		f.Offset = 0
	}
	return s.store.PackageOverview(ctx, store.ScopeOf(p), f)
}

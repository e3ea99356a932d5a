// Package containersvc is the containers service (issue 15): it submits
// container jobs (refresh, start/stop/restart, pull, compose update, image
// removal, prune), stores what they read back, keeps the CVE-relevance
// marks, runs the newer-image check when a checker is configured, and
// answers the server and fleet views.
package containersvc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/containers"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/jobs"
	"github.com/lcmproject/lcm/internal/store"
)

// checkTimeout bounds one server's newer-image check: HEAD requests to
// registries answer in milliseconds; a minute means a registry hangs, and
// the inventory is already stored.
const checkTimeout = time.Minute

// Service is the containers service.
type Service struct {
	store   *store.Store
	jobs    *jobs.Service
	log     *slog.Logger
	checker atomic.Pointer[checkerBox]
	now     func() time.Time
	// checked runs after a newer-image check is stored (the status
	// recompute: image updates are a yellow insight).
	checked func(ctx context.Context, serverID string)
}

// OnUpdatesChecked sets the hook run after a server's newer-image check
// is stored. Set it before the service runs jobs.
func (s *Service) OnUpdatesChecked(fn func(ctx context.Context, serverID string)) { s.checked = fn }

type checkerBox struct{ c containers.UpdateChecker }

// New returns the service; jobs may be nil (reads only).
func New(st *store.Store, js *jobs.Service, log *slog.Logger) *Service {
	if log == nil {
		log = slog.Default()
	}
	return &Service{store: st, jobs: js, log: log, now: time.Now}
}

// SetUpdateChecker configures the newer-image check (nil: none, every
// update state stays "not_checked").
func (s *Service) SetUpdateChecker(c containers.UpdateChecker) {
	if c == nil {
		s.checker.Store(nil)
		return
	}
	s.checker.Store(&checkerBox{c: c})
}

func (s *Service) updateChecker() containers.UpdateChecker {
	if b := s.checker.Load(); b != nil {
		return b.c
	}
	return nil
}

// RegisterJobs registers the container job's finish hook.
func (s *Service) RegisterJobs() {
	if s.jobs != nil {
		s.jobs.OnFinish(domain.JobContainer, s.afterJob)
	}
}

// afterJob stores what a container job read back, then runs the
// newer-image check (when configured).
func (s *Service) afterJob(ctx context.Context, job domain.Job) error {
	if len(job.Data) == 0 {
		return nil
	}
	var d actions.ContainerData
	if err := json.Unmarshal(job.Data, &d); err != nil {
		return fmt.Errorf("containersvc: job data: %w", err)
	}
	outcome, err := json.Marshal(d.Outcome)
	if err != nil {
		return err
	}
	if d.Inventory == nil {
		return s.store.SetContainerOutcome(ctx, job.ServerID, job.ID, outcome)
	}
	at := s.now().UTC()
	if job.FinishedAt != nil {
		at = *job.FinishedAt
	}
	return s.storeInventory(ctx, containers.Collected{ServerID: job.ServerID, JobID: job.ID, At: at, Inventory: *d.Inventory}, outcome)
}

// storeInventory stores an inventory a job read, then runs the newer-image
// check (when configured): the one path for container jobs and refresh
// jobs. A nil outcome keeps the stored last action.
func (s *Service) storeInventory(ctx context.Context, c containers.Collected, outcome []byte) error {
	if err := s.keepPackages(ctx, &c); err != nil {
		return err
	}
	data, err := json.Marshal(c.Inventory)
	if err != nil {
		return err
	}
	if err := s.store.SetContainerInventory(ctx, store.ContainerInventory{ServerID: c.ServerID, Data: data, RefreshedAt: c.At, JobID: c.JobID, Outcome: outcome}); err != nil {
		return err
	}
	if ch := s.updateChecker(); ch != nil {
		if err := s.checkUpdates(ctx, ch, c.ServerID, c.Inventory); err != nil {
			s.log.Warn("newer-image check failed", "server_id", c.ServerID, "err", err)
		}
	}
	return nil
}

// keepPackages carries the packages of CVE-relevant containers over from
// the stored inventory when c did not read them (a regular refresh, or a
// container action) and the container still runs the same image.
func (s *Service) keepPackages(ctx context.Context, c *containers.Collected) error {
	if len(c.Inventory.Containers) == 0 {
		return nil
	}
	old, known, err := s.stored(ctx, c.ServerID)
	if err != nil || !known || len(old.CVEPackages) == 0 {
		return err
	}
	read := map[string]bool{}
	for _, ip := range c.Inventory.CVEPackages {
		read[string(ip.Engine)+" "+ip.Container] = true
	}
	for _, ip := range old.CVEPackages {
		if read[string(ip.Engine)+" "+ip.Container] {
			continue
		}
		if ct, ok := findContainer(c.Inventory, ip.Engine, ip.Container); ok && ct.ImageID == ip.ImageID {
			c.Inventory.CVEPackages = append(c.Inventory.CVEPackages, ip)
		}
	}
	return nil
}

func findContainer(inv containers.Inventory, e containers.Engine, name string) (containers.Container, bool) {
	for _, ct := range inv.Containers {
		if ct.Engine == e && ct.Name == name {
			return ct, true
		}
	}
	return containers.Container{}, false
}

// IngestRefreshes stores the container inventories regular refresh jobs
// read (the inventory service hands them over from its refresh ingest,
// see inventory.Service.OnContainers), exactly as a container refresh
// job's: the inventory, then the newer-image check. A server where the
// refresh found no engine is only written if it has a stored inventory
// (the engine was removed): a fleet without containers costs one query
// per batch. It returns one error per inventory, in order.
func (s *Service) IngestRefreshes(ctx context.Context, cs []containers.Collected) []error {
	errs := make([]error, len(cs))
	var none []string
	for _, c := range cs {
		if len(c.Inventory.Engines) == 0 {
			none = append(none, c.ServerID)
		}
	}
	had, err := s.store.ContainerInventoryServers(ctx, none)
	if err != nil {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	for i, c := range cs {
		if len(c.Inventory.Engines) == 0 && !had[c.ServerID] {
			continue
		}
		errs[i] = s.storeInventory(ctx, c, nil)
	}
	return errs
}

// checkUpdates asks the checker about the images in use and stores the
// answers (a failed check stores nothing: the states stay as they were).
func (s *Service) checkUpdates(ctx context.Context, c containers.UpdateChecker, serverID string, inv containers.Inventory) error {
	refs := inv.InUseRefs()
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	var ups []containers.ImageUpdate
	if len(refs) > 0 {
		var err error
		if ups, err = c.Check(ctx, refs); err != nil {
			return err
		}
	}
	b, err := json.Marshal(ups)
	if err != nil {
		return err
	}
	if err := s.store.SetContainerUpdates(ctx, serverID, b, s.now()); err != nil {
		return err
	}
	if s.checked != nil {
		s.checked(ctx, serverID)
	}
	return nil
}

// CheckUpdates runs the newer-image check for a server now (nil checker:
// unavailable).
func (s *Service) CheckUpdates(ctx context.Context, p *domain.Principal, serverID string) error {
	c := s.updateChecker()
	if c == nil {
		return domain.Unavailable("no_update_checker", "no newer-image check is configured")
	}
	v, err := s.Server(ctx, p, serverID)
	if err != nil {
		return err
	}
	return s.checkUpdates(ctx, c, serverID, v.Inventory)
}

// Submit validates the params against the stored inventory and submits a
// container job: removing an image in use is refused here (409
// image_in_use) and again on the server.
func (s *Service) Submit(ctx context.Context, p *domain.Principal, serverID string, params actions.ContainerParams) (domain.Job, error) {
	if s.jobs == nil {
		return domain.Job{}, domain.Unavailable("no_jobs", "container actions are not available")
	}
	if err := params.Validate(); err != nil {
		return domain.Job{}, domain.Invalid("invalid_params", err.Error())
	}
	srv, err := s.store.GetServer(ctx, store.ScopeOf(p), serverID)
	if err != nil {
		return domain.Job{}, err
	}
	inv, known, err := s.stored(ctx, serverID)
	if err != nil {
		return domain.Job{}, err
	}
	if known {
		if err := s.precheck(inv, &params); err != nil {
			return domain.Job{}, err
		}
	}
	if params.Op == actions.ContainerRefresh {
		// The refresh reads the packages of the CVE-relevant containers.
		marks, err := s.store.ContainerCVEMarks(ctx, store.SystemScope, serverID)
		if err != nil {
			return domain.Job{}, err
		}
		params.CVE = nil
		for _, m := range marks {
			params.CVE = append(params.CVE, actions.CVERef{Engine: containers.Engine(m.Engine), Container: m.Container})
		}
	}
	return s.jobs.SubmitServer(ctx, p, srv, domain.JobContainer, params)
}

// precheck refuses what the stored inventory already says is impossible,
// and completes a compose update with the project's directory and files.
func (s *Service) precheck(inv containers.Inventory, params *actions.ContainerParams) error {
	switch params.Op {
	case actions.ContainerRemoveImage:
		for _, im := range inv.FindImage(containers.NormalizeRef(params.Image)) {
			if (params.Engine == "" || im.Engine == params.Engine) && im.InUse {
				var users []string
				for _, c := range inv.Containers {
					if c.Engine == im.Engine && c.ImageID == im.ID {
						users = append(users, c.Name)
					}
				}
				return domain.Conflict("image_in_use", fmt.Sprintf("image %s is used by %s; remove or update those containers first", params.Image, strings.Join(users, ", ")))
			}
		}
	case actions.ContainerComposeUpdate:
		for _, pr := range inv.Compose {
			if pr.Name == params.Project && (params.Engine == "" || pr.Engine == params.Engine) {
				if params.Engine == "" {
					params.Engine = pr.Engine
				}
				if params.WorkingDir == "" {
					params.WorkingDir = pr.WorkingDir
				}
				if len(params.ConfigFiles) == 0 {
					params.ConfigFiles = pr.ConfigFiles
				}
				return nil
			}
		}
		return domain.NotFound("compose project")
	}
	return nil
}

// stored reads a server's stored inventory; known is false if none.
func (s *Service) stored(ctx context.Context, serverID string) (containers.Inventory, bool, error) {
	row, err := s.store.GetContainerInventory(ctx, serverID)
	if errors.Is(err, domain.ErrNotFound) {
		return containers.Inventory{}, false, nil
	}
	if err != nil {
		return containers.Inventory{}, false, err
	}
	var inv containers.Inventory
	if err := json.Unmarshal(row.Data, &inv); err != nil || inv.Engines == nil {
		return containers.Inventory{}, false, nil
	}
	return inv, true, nil
}

// SetCVERelevance marks or unmarks a container CVE-relevant. The container
// must be in the stored inventory.
func (s *Service) SetCVERelevance(ctx context.Context, p *domain.Principal, serverID string, engine containers.Engine, name string, relevant bool) error {
	if !containers.ValidName(name) {
		return domain.Invalid("invalid_container", "container must be a container name")
	}
	if engine != "" && !engine.Valid() {
		return domain.Invalid("invalid_engine", "engine must be docker or podman")
	}
	if _, err := s.store.GetServer(ctx, store.ScopeOf(p), serverID); err != nil {
		return err
	}
	inv, _, err := s.stored(ctx, serverID)
	if err != nil {
		return err
	}
	found := false
	for _, c := range inv.Containers {
		if c.Name == name && (engine == "" || c.Engine == engine) {
			engine, found = c.Engine, true
			break
		}
	}
	if !found {
		return domain.NotFound("container")
	}
	by := ""
	if p != nil {
		by = p.UserID
	}
	return s.store.SetContainerCVERelevance(ctx, store.ContainerCVEMark{ServerID: serverID, Engine: string(engine), Container: name, MarkedBy: by, MarkedAt: s.now()}, relevant)
}

// ServerView is a server's Containers tab.
type ServerView struct {
	ServerID         string                    `json:"server_id"`
	ServerName       string                    `json:"server_name"`
	Collected        bool                      `json:"collected"`
	RefreshedAt      *time.Time                `json:"refreshed_at"`
	JobID            string                    `json:"job_id,omitempty"`
	UpdateCheck      bool                      `json:"update_check"`
	UpdatesCheckedAt *time.Time                `json:"updates_checked_at"`
	LastAction       *actions.ContainerOutcome `json:"last_action"`
	containers.Inventory
}

// Server returns a server's Containers tab: the stored inventory with the
// CVE marks and the newer-image answers merged in.
func (s *Service) Server(ctx context.Context, p *domain.Principal, serverID string) (ServerView, error) {
	srv, err := s.store.GetServer(ctx, store.ScopeOf(p), serverID)
	if err != nil {
		return ServerView{}, err
	}
	v := ServerView{ServerID: srv.ID, ServerName: srv.Name, UpdateCheck: s.updateChecker() != nil, Inventory: emptyInventory()}
	row, err := s.store.GetContainerInventory(ctx, serverID)
	if errors.Is(err, domain.ErrNotFound) {
		return v, nil
	}
	if err != nil {
		return ServerView{}, err
	}
	marks, err := s.store.ContainerCVEMarks(ctx, store.ScopeOf(p), serverID)
	if err != nil {
		return ServerView{}, err
	}
	s.fill(&v, row, marks)
	return v, nil
}

func emptyInventory() containers.Inventory {
	return containers.Inventory{Engines: []containers.EngineInfo{}, Containers: []containers.Container{}, Images: []containers.Image{}, Compose: []containers.ComposeProject{}}
}

func (s *Service) fill(v *ServerView, row store.ContainerInventory, marks []store.ContainerCVEMark) {
	v.JobID = row.JobID
	if len(row.Outcome) > 0 {
		var o actions.ContainerOutcome
		if json.Unmarshal(row.Outcome, &o) == nil {
			v.LastAction = &o
		}
	}
	var inv containers.Inventory
	if json.Unmarshal(row.Data, &inv) == nil && inv.Engines != nil {
		v.Collected = true
		at := row.RefreshedAt
		v.RefreshedAt = &at
		v.Inventory = inv
		if v.Containers == nil {
			v.Containers = []containers.Container{}
		}
		if v.Images == nil {
			v.Images = []containers.Image{}
		}
		if v.Compose == nil {
			v.Compose = []containers.ComposeProject{}
		}
	}
	var ups []containers.ImageUpdate
	if len(row.Updates) > 0 && row.UpdatesCheckedAt != nil {
		_ = json.Unmarshal(row.Updates, &ups)
		v.UpdatesCheckedAt = row.UpdatesCheckedAt
		v.Inventory.ApplyUpdates(ups)
	} else {
		v.Inventory.ApplyUpdates(nil) // never checked: not_checked everywhere
	}
	for i := range v.Containers {
		c := &v.Containers[i]
		for _, m := range marks {
			if m.ServerID == row.ServerID && m.Engine == string(c.Engine) && m.Container == c.Name {
				c.CVERelevant = true
			}
		}
	}
}

// FleetFilter narrows the fleet lists.
type FleetFilter struct {
	State  string // a container state, or for projects running/partial/stopped
	Image  string // substring of the image reference
	Update string // one of the containers.Update* states
}

// Validate checks the filter values.
func (f FleetFilter) Validate() error {
	if len(f.State) > 32 || len(f.Image) > 255 {
		return domain.Invalid("invalid_filter", "filter value too long")
	}
	switch f.Update {
	case "", containers.UpdateAvailable, containers.UpdateNotChecked, containers.UpdateUpToDate, containers.UpdateCheckError:
		return nil
	}
	return domain.Invalid("invalid_filter", "update must be update_available, up_to_date, not_checked or check_failed")
}

// FleetContainer is a container with its server.
type FleetContainer struct {
	ServerID   string `json:"server_id"`
	ServerName string `json:"server_name"`
	containers.Container
}

// FleetProject is a compose project with its server.
type FleetProject struct {
	ServerID   string `json:"server_id"`
	ServerName string `json:"server_name"`
	containers.ComposeProject
}

// ServerSummary is one server's line in the overview.
type ServerSummary struct {
	ServerID         string     `json:"server_id"`
	ServerName       string     `json:"server_name"`
	Engines          []string   `json:"engines"`
	Containers       int        `json:"containers"`
	Running          int        `json:"running"`
	Images           int        `json:"images"`
	Compose          int        `json:"compose"`
	UpdatesAvailable int        `json:"updates_available"`
	RefreshedAt      *time.Time `json:"refreshed_at"`
}

// Overview is the fleet's container summary.
type Overview struct {
	Servers          int             `json:"servers"`
	Containers       int             `json:"containers"`
	Running          int             `json:"running"`
	Images           int             `json:"images"`
	Compose          int             `json:"compose"`
	UpdatesAvailable int             `json:"updates_available"`
	NotChecked       int             `json:"not_checked"`
	CVERelevant      int             `json:"cve_relevant"`
	UpdateCheck      bool            `json:"update_check"`
	PerServer        []ServerSummary `json:"per_server"`
}

// views returns the server views of every server visible to p that has
// an inventory.
func (s *Service) views(ctx context.Context, p *domain.Principal) ([]ServerView, error) {
	sc := store.ScopeOf(p)
	rows, err := s.store.ListContainerInventories(ctx, sc)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.ServerID
	}
	srvs, err := s.store.ServersByID(ctx, sc, ids)
	if err != nil {
		return nil, err
	}
	names := map[string]string{}
	for _, sv := range srvs {
		names[sv.ID] = sv.Name
	}
	marks, err := s.store.ContainerCVEMarks(ctx, sc, "")
	if err != nil {
		return nil, err
	}
	out := make([]ServerView, 0, len(rows))
	for _, r := range rows {
		name, ok := names[r.ServerID]
		if !ok {
			continue
		}
		v := ServerView{ServerID: r.ServerID, ServerName: name, Inventory: emptyInventory()}
		s.fill(&v, r, marks)
		if v.Collected {
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ServerName < out[j].ServerName })
	return out, nil
}

// Overview summarises the containers of the servers visible to p.
func (s *Service) Overview(ctx context.Context, p *domain.Principal) (Overview, error) {
	vs, err := s.views(ctx, p)
	if err != nil {
		return Overview{}, err
	}
	o := Overview{PerServer: []ServerSummary{}, UpdateCheck: s.updateChecker() != nil}
	for _, v := range vs {
		sum := ServerSummary{ServerID: v.ServerID, ServerName: v.ServerName, Engines: []string{}, Containers: len(v.Containers),
			Images: len(v.Images), Compose: len(v.Compose), RefreshedAt: v.RefreshedAt}
		for _, e := range v.Engines {
			sum.Engines = append(sum.Engines, string(e.Engine))
		}
		for _, c := range v.Containers {
			if c.State == "running" {
				sum.Running++
			}
			switch c.Update {
			case containers.UpdateAvailable:
				sum.UpdatesAvailable++
			case containers.UpdateNotChecked:
				o.NotChecked++
			}
			if c.CVERelevant {
				o.CVERelevant++
			}
		}
		o.Servers++
		o.Containers += sum.Containers
		o.Running += sum.Running
		o.Images += sum.Images
		o.Compose += sum.Compose
		o.UpdatesAvailable += sum.UpdatesAvailable
		o.PerServer = append(o.PerServer, sum)
	}
	return o, nil
}

// Containers lists the containers of the servers visible to p.
func (s *Service) Containers(ctx context.Context, p *domain.Principal, f FleetFilter) ([]FleetContainer, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	vs, err := s.views(ctx, p)
	if err != nil {
		return nil, err
	}
	out := []FleetContainer{}
	for _, v := range vs {
		for _, c := range v.Containers {
			if (f.State == "" || c.State == f.State) && (f.Image == "" || strings.Contains(c.Image, f.Image)) && (f.Update == "" || c.Update == f.Update) {
				out = append(out, FleetContainer{ServerID: v.ServerID, ServerName: v.ServerName, Container: c})
			}
		}
	}
	return out, nil
}

// Compose lists the compose projects of the servers visible to p.
func (s *Service) Compose(ctx context.Context, p *domain.Principal, f FleetFilter) ([]FleetProject, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	vs, err := s.views(ctx, p)
	if err != nil {
		return nil, err
	}
	out := []FleetProject{}
	for _, v := range vs {
		for _, pr := range v.Compose {
			if f.State != "" && pr.State != f.State {
				continue
			}
			if f.Update != "" && pr.Update != f.Update {
				continue
			}
			if f.Image != "" && !projectUses(pr, f.Image) {
				continue
			}
			out = append(out, FleetProject{ServerID: v.ServerID, ServerName: v.ServerName, ComposeProject: pr})
		}
	}
	return out, nil
}

func projectUses(p containers.ComposeProject, image string) bool {
	for _, s := range p.Services {
		for _, im := range s.Images {
			if strings.Contains(im, image) {
				return true
			}
		}
	}
	return false
}

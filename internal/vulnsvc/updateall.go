package vulnsvc

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/store"
)

// Upgrader submits the security upgrade of one server (fleet.Service).
type Upgrader interface {
	UpgradeSecurity(ctx context.Context, p *domain.Principal, id string) (domain.Job, error)
}

// BulkItem is one server of an "update all affected" run.
type BulkItem struct {
	ServerID   string `json:"server_id"`
	ServerName string `json:"server_name"`
	JobID      string `json:"job_id,omitempty"`
	Status     string `json:"status"` // the job's status, or "blocked" / "refused"
	Error      string `json:"error,omitempty"`
}

// BulkRun is the state of the last "update all affected" run.
type BulkRun struct {
	StartedAt time.Time  `json:"started_at"`
	StartedBy string     `json:"started_by"`
	Running   bool       `json:"running"`
	Items     []BulkItem `json:"items"`
}

type bulkState struct {
	mu  sync.Mutex
	run *BulkRun
}

// SetUpgrader connects the security upgrade (wired after the fleet service).
func (s *Service) SetUpgrader(u Upgrader) { s.upgrader = u }

// refresh updates the job states of the last run; the run is over when
// none of its jobs is still pending or running.
func (s *Service) refreshBulk(ctx context.Context) (*BulkRun, error) {
	r := s.bulk.run
	if r == nil {
		return nil, nil
	}
	running := false
	for i := range r.Items {
		it := &r.Items[i]
		if it.JobID == "" || !domain.JobStatus(it.Status).Active() {
			continue
		}
		j, err := s.store.GetJob(ctx, store.SystemScope, it.JobID)
		if err != nil && !errors.Is(err, domain.ErrNotFound) {
			return nil, err
		}
		if err == nil {
			it.Status = string(j.Status)
		} else {
			it.Status = "gone" // the job went with its server
		}
		if domain.JobStatus(it.Status).Active() {
			running = true
		}
	}
	r.Running = running
	return r, nil
}

// UpdateAllStatus reports the last run (nil: none yet), limited to the
// servers visible to p.
func (s *Service) UpdateAllStatus(ctx context.Context, p *domain.Principal) (*BulkRun, error) {
	s.bulk.mu.Lock()
	defer s.bulk.mu.Unlock()
	r, err := s.refreshBulk(ctx)
	if err != nil || r == nil {
		return nil, err
	}
	ids := make([]string, len(r.Items))
	for i, it := range r.Items {
		ids[i] = it.ServerID
	}
	vis, err := s.store.ServersByID(ctx, store.ScopeOf(p), ids)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, v := range vis {
		seen[v.ID] = true
	}
	out := *r
	out.Items = nil
	for _, it := range r.Items {
		if seen[it.ServerID] {
			out.Items = append(out.Items, it)
		}
	}
	if out.Items == nil {
		out.Items = []BulkItem{}
	}
	return &out, nil
}

// UpdateAll runs the security upgrade on every server visible to p with an
// open finding that has a fix (one bulk run at a time: 409 while the jobs
// of the last run are still pending or running). Findings in containers
// do not count: the host's upgrade does not change a container's image.
func (s *Service) UpdateAll(ctx context.Context, p *domain.Principal) (*BulkRun, error) {
	if s.upgrader == nil {
		return nil, domain.Unavailable("no_upgrader", "security upgrades are not available")
	}
	s.bulk.mu.Lock()
	defer s.bulk.mu.Unlock()
	if r, err := s.refreshBulk(ctx); err != nil {
		return nil, err
	} else if r != nil && r.Running {
		return nil, domain.Conflict("bulk_running", "an \"update all affected\" run is still in progress")
	}
	list, _, err := s.store.VulnFindings(ctx, store.ScopeOf(p), store.VulnFilter{FixOnly: true,
		States: []string{store.VulnNew, store.VulnAcknowledged}, Limit: 1 << 30})
	if err != nil {
		return nil, err
	}
	names := map[string]string{}
	for _, f := range list {
		if f.Container != "" {
			continue
		}
		names[f.ServerID] = f.ServerName
	}
	ids := make([]string, 0, len(names))
	for id := range names {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return names[ids[i]] < names[ids[j]] })
	run := &BulkRun{StartedAt: s.now(), Items: []BulkItem{}}
	if p != nil {
		run.StartedBy = p.Username
	}
	for _, id := range ids {
		it := BulkItem{ServerID: id, ServerName: names[id]}
		j, err := s.upgrader.UpgradeSecurity(ctx, p, id)
		switch {
		case err == nil:
			it.JobID, it.Status = j.ID, string(j.Status)
			run.Running = true
		case errors.Is(err, domain.ErrConflict):
			it.Status, it.Error = "blocked", err.Error()
		default:
			var de *domain.Error
			if !errors.As(err, &de) {
				return nil, err
			}
			it.Status, it.Error = "refused", de.Message
		}
		run.Items = append(run.Items, it)
	}
	s.bulk.run = run
	return run, nil
}

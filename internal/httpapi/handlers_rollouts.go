package httpapi

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/lcmproject/lcm/internal/audit"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/rollout"
)

type rolloutRequest struct {
	Action                  string   `json:"action"`
	ServerIDs               []string `json:"server_ids"`
	GroupID                 string   `json:"group_id"`
	All                     bool     `json:"all"`
	CanarySize              int      `json:"canary_size"`
	BatchSize               int      `json:"batch_size"`
	BatchPercent            int      `json:"batch_percent"`
	FailureThreshold        int      `json:"failure_threshold"`
	FailureThresholdPercent int      `json:"failure_threshold_percent"`
	PauseSeconds            int      `json:"pause_seconds"`
	Concurrency             int      `json:"concurrency"`
	RequireApproval         bool     `json:"require_approval"`
	DryRun                  bool     `json:"dry_run"`
}

type rolloutItemDTO struct {
	ServerID     string  `json:"server_id"`
	ServerName   string  `json:"server_name"`
	Batch        int     `json:"batch"`
	State        string  `json:"state"`
	JobID        *string `json:"job_id"`
	JobStatus    *string `json:"job_status"`
	RefreshJobID *string `json:"refresh_job_id"`
	Reason       string  `json:"reason"`
}

type rolloutBatchDTO struct {
	Index  int              `json:"index"`
	Canary bool             `json:"canary"`
	State  string           `json:"state"` // pending, running, done
	Counts map[string]int   `json:"counts"`
	Items  []rolloutItemDTO `json:"items"`
}

type rolloutDTO struct {
	ID                      string            `json:"id"`
	Action                  string            `json:"action"`
	Target                  string            `json:"target"`
	GroupID                 *string           `json:"group_id"`
	Status                  string            `json:"status"`
	Reason                  string            `json:"reason"`
	CanarySize              int               `json:"canary_size"`
	BatchSize               int               `json:"batch_size"`
	BatchPercent            int               `json:"batch_percent"`
	FailureThreshold        int               `json:"failure_threshold"`
	FailureThresholdPercent int               `json:"failure_threshold_percent"`
	PauseSeconds            int               `json:"pause_seconds"`
	Concurrency             int               `json:"concurrency"`
	Batches                 int               `json:"batches"`
	CurrentBatch            int               `json:"current_batch"`
	NextBatchAt             *time.Time        `json:"next_batch_at"`
	ApprovalID              *string           `json:"approval_id"`
	CreatedBy               string            `json:"created_by"`
	CreatedAt               time.Time         `json:"created_at"`
	FinishedAt              *time.Time        `json:"finished_at"`
	Servers                 int               `json:"servers"`
	Failures                int               `json:"failures"`
	Counts                  map[string]int    `json:"counts"`
	BatchList               []rolloutBatchDTO `json:"batch_list,omitempty"`
}

func optStr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func toRolloutDTO(r domain.Rollout, counts map[string]int, withItems bool) rolloutDTO {
	d := rolloutDTO{ID: r.ID, Action: r.Action, Target: r.Target, GroupID: optStr(r.GroupID), Status: r.Status, Reason: r.Reason,
		CanarySize: r.CanarySize, BatchSize: r.BatchSize, BatchPercent: r.BatchPercent, FailureThreshold: r.MaxFailures,
		FailureThresholdPercent: r.MaxFailurePercent, PauseSeconds: r.PauseSeconds, Concurrency: r.Concurrency,
		Batches: r.Batches, CurrentBatch: r.CurrentBatch, ApprovalID: optStr(r.ApprovalID), CreatedBy: r.CreatedBy,
		CreatedAt: r.CreatedAt.UTC(), FinishedAt: r.FinishedAt, Counts: counts}
	if !r.NextAt.IsZero() && r.Status == domain.RolloutRunning && r.NextAt.After(time.Now()) {
		t := r.NextAt.UTC()
		d.NextBatchAt = &t
	}
	if d.Counts == nil {
		d.Counts = r.Counts()
	}
	for st, n := range d.Counts {
		d.Servers += n
		if domain.RolloutItemFailed(st) {
			d.Failures += n
		}
	}
	if !withItems {
		return d
	}
	d.BatchList = make([]rolloutBatchDTO, r.Batches)
	for i := range d.BatchList {
		d.BatchList[i] = rolloutBatchDTO{Index: i, Canary: r.CanarySize > 0 && i == 0, Counts: map[string]int{}, Items: []rolloutItemDTO{}}
	}
	for _, it := range r.Items {
		if it.Batch < 0 || it.Batch >= len(d.BatchList) {
			continue
		}
		b := &d.BatchList[it.Batch]
		item := rolloutItemDTO{ServerID: it.ServerID, ServerName: it.ServerName, Batch: it.Batch, State: it.State,
			JobID: optStr(it.JobID), RefreshJobID: optStr(it.RefreshJobID), Reason: it.Reason}
		if it.JobStatus != "" {
			st := string(it.JobStatus)
			item.JobStatus = &st
		}
		b.Items = append(b.Items, item)
		b.Counts[it.State]++
	}
	for i := range d.BatchList {
		b := &d.BatchList[i]
		final := 0
		for st, n := range b.Counts {
			if domain.RolloutItemFinal(st) {
				final += n
			}
		}
		switch {
		case final == len(b.Items):
			b.State = "done"
		case b.Counts[domain.ItemPending] == len(b.Items):
			b.State = "pending"
		default:
			b.State = "running"
		}
	}
	return d
}

type planPackageDTO struct {
	Name      string `json:"name"`
	Arch      string `json:"arch"`
	Current   string `json:"current"`
	Candidate string `json:"candidate"`
	Security  bool   `json:"security"`
}

type planItemDTO struct {
	ServerID   string           `json:"server_id"`
	ServerName string           `json:"server_name"`
	Batch      int              `json:"batch"`
	Skip       *string          `json:"skip"`
	Reboot     bool             `json:"reboot"`
	Packages   []planPackageDTO `json:"packages"`
}

type planDTO struct {
	DryRun  bool          `json:"dry_run"`
	Action  string        `json:"action"`
	Batches int           `json:"batches"`
	Servers int           `json:"servers"`
	Items   []planItemDTO `json:"items"`
}

func (s *Server) createRollout(c *gin.Context) {
	var req rolloutRequest
	if !bindJSON(c, &req) {
		return
	}
	r := rollout.Request{Action: req.Action, ServerIDs: req.ServerIDs, GroupID: req.GroupID, All: req.All,
		CanarySize: req.CanarySize, BatchSize: req.BatchSize, BatchPercent: req.BatchPercent,
		FailureThreshold: req.FailureThreshold, FailureThresholdPercent: req.FailureThresholdPercent,
		PauseSeconds: req.PauseSeconds, Concurrency: req.Concurrency, RequireApproval: req.RequireApproval}
	ctx := c.Request.Context()
	svc := s.deps.Services.Rollouts
	if req.DryRun {
		plan, err := svc.DryRun(ctx, principal(c), r)
		if err != nil {
			s.respondError(c, err)
			return
		}
		d := planDTO{DryRun: true, Action: plan.Rollout.Action, Batches: plan.Rollout.Batches, Servers: len(plan.Items), Items: make([]planItemDTO, len(plan.Items))}
		for i, it := range plan.Items {
			pi := planItemDTO{ServerID: it.ServerID, ServerName: it.ServerName, Batch: it.Batch, Skip: optStr(it.Skip), Reboot: it.Reboot,
				Packages: make([]planPackageDTO, len(it.Packages))}
			for k, p := range it.Packages {
				pi.Packages[k] = planPackageDTO{Name: p.Name, Arch: p.Arch, Current: p.Current, Candidate: p.Candidate, Security: p.Security}
			}
			d.Items[i] = pi
		}
		c.JSON(http.StatusOK, d)
		return
	}
	ro, err := svc.Create(ctx, principal(c), r)
	if err != nil {
		s.respondError(c, err)
		return
	}
	s.note(c, "rollouts.create", audit.Target("rollout", ro.ID), map[string]any{"action": ro.Action, "target": ro.Target,
		"group_id": ro.GroupID, "servers": len(ro.Items), "batches": ro.Batches, "status": ro.Status, "approval_id": ro.ApprovalID})
	c.JSON(http.StatusCreated, toRolloutDTO(ro, nil, true))
}

func (s *Server) listRollouts(c *gin.Context) {
	list, err := s.deps.Services.Rollouts.List(c.Request.Context(), principal(c), c.Query("status"))
	if err != nil {
		s.respondError(c, err)
		return
	}
	out := make([]rolloutDTO, len(list))
	for i, r := range list {
		out[i] = toRolloutDTO(r.Rollout, r.Counts, false)
	}
	c.JSON(http.StatusOK, gin.H{"rollouts": out})
}

type rolloutActionDTO struct {
	Name             string `json:"name"`
	Label            string `json:"label"`
	Reboots          bool   `json:"reboots"`
	RequiresApproval bool   `json:"requires_approval"`
}

func (s *Server) listRolloutActions(c *gin.Context) {
	acts, err := s.deps.Services.Rollouts.Actions(c.Request.Context())
	if err != nil {
		s.respondError(c, err)
		return
	}
	out := make([]rolloutActionDTO, len(acts))
	for i, a := range acts {
		out[i] = rolloutActionDTO{Name: a.Name, Label: a.Label, Reboots: a.Reboots, RequiresApproval: a.RequiresApproval}
	}
	c.JSON(http.StatusOK, gin.H{"actions": out})
}

func (s *Server) getRollout(c *gin.Context) {
	ro, err := s.deps.Services.Rollouts.Get(c.Request.Context(), principal(c), c.Param("id"))
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, toRolloutDTO(ro, nil, true))
}

func (s *Server) pauseRollout(c *gin.Context) {
	s.controlRollout(c, "rollouts.pause", func() (domain.Rollout, error) {
		return s.deps.Services.Rollouts.Pause(c.Request.Context(), principal(c), c.Param("id"))
	}, nil)
}

func (s *Server) resumeRollout(c *gin.Context) {
	s.controlRollout(c, "rollouts.resume", func() (domain.Rollout, error) {
		return s.deps.Services.Rollouts.Resume(c.Request.Context(), principal(c), c.Param("id"))
	}, nil)
}

type abortRolloutRequest struct {
	AbortRunning bool `json:"abort_running"`
}

func (s *Server) abortRollout(c *gin.Context) {
	var req abortRolloutRequest
	if c.Request.ContentLength != 0 && !bindJSON(c, &req) {
		return
	}
	s.controlRollout(c, "rollouts.abort", func() (domain.Rollout, error) {
		return s.deps.Services.Rollouts.Abort(c.Request.Context(), principal(c), c.Param("id"), req.AbortRunning)
	}, map[string]any{"abort_running": req.AbortRunning})
}

func (s *Server) controlRollout(c *gin.Context, action string, do func() (domain.Rollout, error), details map[string]any) {
	ro, err := do()
	if err != nil {
		s.respondError(c, err)
		return
	}
	s.note(c, action, audit.Target("rollout", ro.ID), details)
	full, err := s.deps.Services.Rollouts.Get(c.Request.Context(), principal(c), ro.ID)
	if err != nil {
		full = ro
	}
	c.JSON(http.StatusOK, toRolloutDTO(full, nil, true))
}

type approvalDTO struct {
	ID            string          `json:"id"`
	Kind          string          `json:"kind"`
	RefID         string          `json:"ref_id"`
	Summary       string          `json:"summary"`
	Payload       json.RawMessage `json:"payload"`
	Permission    string          `json:"permission"`
	Status        string          `json:"status"`
	RequestedBy   string          `json:"requested_by"`
	RequesterName string          `json:"requester_name"`
	DecidedBy     *string         `json:"decided_by"`
	DeciderName   *string         `json:"decider_name"`
	Comment       string          `json:"comment"`
	CreatedAt     time.Time       `json:"created_at"`
	ExpiresAt     time.Time       `json:"expires_at"`
	DecidedAt     *time.Time      `json:"decided_at"`
	Mine          bool            `json:"mine"`
}

func toApprovalDTO(a domain.Approval, me string) approvalDTO {
	payload := a.Payload
	if len(payload) == 0 {
		payload = json.RawMessage("{}")
	}
	return approvalDTO{ID: a.ID, Kind: a.Kind, RefID: a.RefID, Summary: a.Summary, Payload: payload, Permission: a.Permission,
		Status: a.Status, RequestedBy: a.RequestedBy, RequesterName: a.RequesterName, DecidedBy: optStr(a.DecidedBy),
		DeciderName: optStr(a.DeciderName), Comment: a.Comment, CreatedAt: a.CreatedAt.UTC(), ExpiresAt: a.ExpiresAt.UTC(),
		DecidedAt: a.DecidedAt, Mine: a.RequestedBy == me}
}

func (s *Server) listApprovals(c *gin.Context) {
	p := principal(c)
	list, err := s.deps.Services.Approvals.List(c.Request.Context(), p, c.Query("status"))
	if err != nil {
		s.respondError(c, err)
		return
	}
	out := make([]approvalDTO, len(list))
	for i, a := range list {
		out[i] = toApprovalDTO(a, p.UserID)
	}
	c.JSON(http.StatusOK, gin.H{"approvals": out})
}

type decideRequest struct {
	Comment string `json:"comment"`
}

func (s *Server) approveApproval(c *gin.Context) { s.decideApproval(c, true) }
func (s *Server) rejectApproval(c *gin.Context)  { s.decideApproval(c, false) }

func (s *Server) decideApproval(c *gin.Context, approve bool) {
	var req decideRequest
	if c.Request.ContentLength != 0 && !bindJSON(c, &req) {
		return
	}
	p := principal(c)
	a, err := s.deps.Services.Approvals.Decide(c.Request.Context(), p, c.Param("id"), approve, req.Comment)
	if err != nil {
		s.respondError(c, err)
		return
	}
	action := "approvals.reject"
	if approve {
		action = "approvals.approve"
	}
	s.note(c, action, audit.Target("approval", a.ID), map[string]any{"kind": a.Kind, "ref_id": a.RefID, "comment": a.Comment})
	c.JSON(http.StatusOK, toApprovalDTO(a, p.UserID))
}

// rolloutSettingsDTO is the approval policy of rollouts.
type rolloutSettingsDTO struct {
	RequireApproval *bool `json:"require_approval"`
}

func (s *Server) getRolloutSettings(c *gin.Context) {
	on, err := s.deps.Services.Rollouts.RequireApproval(c.Request.Context())
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, rolloutSettingsDTO{RequireApproval: &on})
}

func (s *Server) putRolloutSettings(c *gin.Context) {
	var req rolloutSettingsDTO
	if !bindJSON(c, &req) {
		return
	}
	if req.RequireApproval == nil {
		s.respondError(c, domain.Invalid("invalid_rollout_settings", `send {"require_approval": true} or {"require_approval": false}`))
		return
	}
	was, err := s.deps.Services.Rollouts.SetRequireApproval(c.Request.Context(), *req.RequireApproval)
	if err != nil {
		s.respondError(c, err)
		return
	}
	s.note(c, "settings.rollouts_updated", "settings:rollouts", map[string]any{"require_approval": *req.RequireApproval, "was": was})
	c.JSON(http.StatusOK, req)
}

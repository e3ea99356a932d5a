package httpapi

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/lcmproject/lcm/internal/audit"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/fleet"
	"github.com/lcmproject/lcm/internal/rollout"
)

// bulkRequest is POST /jobs/bulk: an action and exactly one target.
type bulkRequest struct {
	Action    string   `json:"action"`
	ServerIDs []string `json:"server_ids"`
	GroupID   string   `json:"group_id"`
	All       bool     `json:"all"`
}

type bulkProgressDTO struct {
	Total   int            `json:"total"`
	Jobs    int            `json:"jobs"`
	Refused int            `json:"refused"`
	Done    bool           `json:"done"`
	Counts  map[string]int `json:"counts"`
}

type bulkRefusalDTO struct {
	Code   string `json:"code"`
	Reason string `json:"reason"`
}

type bulkItemDTO struct {
	ServerID   string          `json:"server_id"`
	ServerName string          `json:"server_name"`
	JobID      *string         `json:"job_id"`
	Status     *string         `json:"status"`
	Refused    *bulkRefusalDTO `json:"refused"`
}

type bulkRunDTO struct {
	BulkID    string          `json:"bulk_id"`
	Action    string          `json:"action"`
	Kind      string          `json:"kind"`
	Target    string          `json:"target"`
	GroupID   *string         `json:"group_id"`
	CreatedAt time.Time       `json:"created_at"`
	Progress  bulkProgressDTO `json:"progress"`
	Items     []bulkItemDTO   `json:"items"`
}

func toBulkRunDTO(r domain.BulkRun) bulkRunDTO {
	p := r.Progress()
	d := bulkRunDTO{BulkID: r.ID, Action: r.Action, Kind: string(r.Kind), Target: r.Target, CreatedAt: r.CreatedAt.UTC(),
		Progress: bulkProgressDTO{Total: p.Total, Jobs: p.Jobs, Refused: p.Refused, Done: p.Done, Counts: map[string]int{}},
		Items:    make([]bulkItemDTO, len(r.Items))}
	for st, n := range p.Counts {
		d.Progress.Counts[string(st)] = n
	}
	if r.GroupID != "" {
		g := r.GroupID
		d.GroupID = &g
	}
	for i, it := range r.Items {
		item := bulkItemDTO{ServerID: it.ServerID, ServerName: it.ServerName}
		if it.JobID != "" {
			id, st := it.JobID, string(it.Status)
			item.JobID, item.Status = &id, &st
		} else {
			item.Refused = &bulkRefusalDTO{Code: it.Refused, Reason: it.Reason}
		}
		d.Items[i] = item
	}
	return d
}

// noteBulk audits a bulk submission: jobs.bulk on the run with the action,
// the target and the counts of started and refused servers.
func (s *Server) noteBulk(c *gin.Context, action string, run domain.BulkRun, target map[string]any) {
	d := map[string]any{"action": action}
	for k, v := range target {
		d[k] = v
	}
	if run.ID != "" {
		p := run.Progress()
		d["servers"], d["started"], d["refused"] = p.Total, p.Jobs, p.Refused
	}
	s.note(c, "jobs.bulk", audit.Target("bulk", run.ID), d)
}

func (s *Server) submitBulk(c *gin.Context) {
	var req bulkRequest
	if !bindJSON(c, &req) {
		return
	}
	run, err := s.deps.Services.Fleet.Bulk(c.Request.Context(), principal(c),
		fleet.BulkRequest{Action: req.Action, ServerIDs: req.ServerIDs, GroupID: req.GroupID, All: req.All})
	target := map[string]any{"all": req.All}
	if req.GroupID != "" {
		target["group_id"] = req.GroupID
	}
	if len(req.ServerIDs) > 0 {
		target["server_ids"] = len(req.ServerIDs)
	}
	s.noteBulk(c, req.Action, run, target)
	if err != nil && run.ID == "" {
		s.respondError(c, err)
		return
	}
	if err != nil {
		// Some batches started before a store error: report what runs.
		s.deps.Log.Error("bulk run stopped early", "bulk_id", run.ID, "err", err)
	}
	c.JSON(http.StatusAccepted, toBulkRunDTO(run))
}

func (s *Server) getBulk(c *gin.Context) {
	run, err := s.deps.Services.Fleet.GetBulk(c.Request.Context(), principal(c), c.Param("id"))
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, toBulkRunDTO(run))
}

func (s *Server) getUpdateAll(c *gin.Context) {
	run, err := s.deps.Services.Fleet.LatestUpdateAll(c.Request.Context(), principal(c))
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, toBulkRunDTO(run))
}

// updateAllRolloutDTO answers an update-all that the approval policy
// (rollouts.require_approval) turned into a rollout awaiting approval.
type updateAllRolloutDTO struct {
	RolloutID  string `json:"rollout_id"`
	Status     string `json:"status"`
	ApprovalID string `json:"approval_id"`
}

func (s *Server) startUpdateAll(c *gin.Context) {
	if ro := s.deps.Services.Rollouts; ro != nil {
		need, err := ro.RequireApproval(c.Request.Context())
		if err != nil {
			s.respondError(c, err)
			return
		}
		if need {
			// Four eyes on every path: "update all" becomes the same
			// fleet action as a rollout (one batch), waiting for a second
			// person's approval.
			r, err := ro.Create(c.Request.Context(), principal(c), rollout.Request{Action: rollout.ActionSecurityUpdates, All: true, RequireApproval: true})
			if err != nil {
				s.respondError(c, err)
				return
			}
			s.note(c, "jobs.update_all_rollout", audit.Target("rollout", r.ID), map[string]any{"action": fleet.UpdateAllAction,
				"all": true, "servers": len(r.Items), "approval_id": r.ApprovalID})
			c.JSON(http.StatusAccepted, updateAllRolloutDTO{RolloutID: r.ID, Status: r.Status, ApprovalID: r.ApprovalID})
			return
		}
	}
	run, err := s.deps.Services.Fleet.UpdateAll(c.Request.Context(), principal(c))
	s.noteBulk(c, fleet.UpdateAllAction, run, map[string]any{"all": true})
	if err != nil && run.ID == "" {
		s.respondError(c, err)
		return
	}
	if err != nil {
		s.deps.Log.Error("update-all run stopped early", "bulk_id", run.ID, "err", err)
	}
	c.JSON(http.StatusAccepted, toBulkRunDTO(run))
}

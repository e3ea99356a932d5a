package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/lcmproject/lcm/internal/audit"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/jobs"
)

func (s *Server) listJobHistory(c *gin.Context) {
	f := domain.JobFilter{ServerID: c.Query("server_id"), Status: domain.JobStatus(c.Query("status")),
		Kind: domain.JobKind(c.Query("job_name"))}
	var ok bool
	if f.Limit, ok = queryInt(c, "limit", jobs.DefaultHistoryLimit); !ok {
		return
	}
	if f.Limit == 0 || f.Limit > jobs.HistoryMaxLimit {
		writeError(c, http.StatusBadRequest, "limit_out_of_range",
			fmt.Sprintf("query parameter limit must be between 1 and %d (got %d); page with offset", jobs.HistoryMaxLimit, f.Limit))
		return
	}
	if f.Offset, ok = queryInt(c, "offset", 0); !ok {
		return
	}
	list, total, err := s.deps.Services.Jobs.History(c.Request.Context(), principal(c), f)
	if err != nil {
		s.respondError(c, err)
		return
	}
	out := jobPageDTO{Items: make([]jobDTO, len(list)), Total: total}
	for i, j := range list {
		out.Items[i] = toJobDTO(j)
	}
	c.JSON(http.StatusOK, out)
}

// queryInt reads a non-negative integer query parameter; it answers 400
// itself and reports false when the value is malformed.
func queryInt(c *gin.Context, name string, def int) (int, bool) {
	v := c.Query(name)
	if v == "" {
		return def, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		writeError(c, http.StatusBadRequest, "invalid_request", fmt.Sprintf("query parameter %s must be a non-negative integer", name))
		return 0, false
	}
	return n, true
}

func (s *Server) getJobFilterOptions(c *gin.Context) {
	st, names, err := s.deps.Services.Jobs.FilterOptions(c.Request.Context(), principal(c))
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, jobFilterOptionsDTO{Statuses: st, JobNames: names})
}

func (s *Server) getJob(c *gin.Context) {
	j, err := s.deps.Services.Jobs.Get(c.Request.Context(), principal(c), c.Param("id"))
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, toJobDTO(j))
}

func (s *Server) getJobSSHOutput(c *gin.Context) {
	var off int64
	if v := c.Query("offset"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			writeError(c, http.StatusBadRequest, "invalid_request", "query parameter offset must be a non-negative byte offset")
			return
		}
		off = n
	}
	o, err := s.deps.Services.Jobs.Output(c.Request.Context(), principal(c), c.Param("id"), off)
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, toSSHOutputDTO(o))
}

func (s *Server) abortJob(c *gin.Context) {
	j, err := s.deps.Services.Jobs.Abort(c.Request.Context(), principal(c), c.Param("id"))
	s.note(c, "job.abort", audit.Target("job", c.Param("id")), map[string]any{"server_id": j.ServerID, "kind": string(j.Kind)})
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, toJobDTO(j))
}

// sseKeepalive keeps idle live streams open through proxies that drop
// silent connections after 30–60 s.
const sseKeepalive = 15 * time.Second

// streamJob is Server-Sent Events: stored output first, then live, event
// "output" {seq, offset, data} and event "state" (a Job); it ends after
// the final state.
func (s *Server) streamJob(c *gin.Context) {
	events, err := s.deps.Services.Jobs.Follow(c.Request.Context(), principal(c), c.Param("id"))
	if err != nil {
		s.respondError(c, err)
		return
	}
	h := c.Writer.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	c.Status(http.StatusOK)
	c.Writer.Flush()
	keep := time.NewTicker(sseKeepalive)
	defer keep.Stop()
	for {
		select {
		case <-c.Request.Context().Done():
			return
		case <-keep.C:
			_, _ = c.Writer.WriteString(": keepalive\n\n")
			c.Writer.Flush()
		case ev, ok := <-events:
			if !ok {
				return
			}
			var name string
			var data []byte
			if ev.Output != nil {
				name = "output"
				data, _ = json.Marshal(outputEventDTO{Seq: ev.Output.Seq, Offset: ev.Output.Offset, Data: string(ev.Output.Data)})
			} else {
				name = "state"
				data, _ = json.Marshal(toJobDTO(*ev.State))
			}
			if _, err := fmt.Fprintf(c.Writer, "event: %s\ndata: %s\n\n", name, data); err != nil {
				return
			}
			c.Writer.Flush()
		}
	}
}

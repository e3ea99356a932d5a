package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/gin-gonic/gin"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/fleet"
	"github.com/lcmproject/lcm/internal/store"
)

// The unfiltered server list of a caller who sees the whole fleet (an
// admin) is served from rendered JSON: with 10,000 servers, reading,
// decrypting and encoding every server costs hundreds of milliseconds,
// while the fleet changes far less often than it is listed. The cache
// knows the fleet version it was built from (fleet.Service.Version: the
// store records every committed change to servers, status and group links
// after its commit, on every replica). Servers changed since are read and
// rendered again, the rest is kept; a change that may touch any server (a
// group deleted, raw SQL, a NATS reconnect) rebuilds everything. Active
// jobs change all the time and are read per request and spliced in.
// Scoped listings (managers) and filtered ones are small and take the
// direct path.
type serverListCache struct {
	mu    sync.Mutex // one update at a time; waiters then use its result
	valid bool
	ver   store.FleetVersion
	items []listedServer // by name
}

// listedServer is one server's JSON object up to and including
// `"active_job_id":` (the DTO's last field), which the request completes.
type listedServer struct {
	id, name string
	head     []byte
}

// activeJobTail is how json.Marshal ends a serverDTO without an active job.
var activeJobTail = []byte(`"active_job_id":null}`)

// listWholeFleet answers GET /servers for a caller who sees every server.
func (s *Server) listWholeFleet(c *gin.Context) {
	ctx, p := c.Request.Context(), principal(c)
	items, err := s.wholeFleetItems(c, p)
	if err != nil {
		s.respondError(c, err)
		return
	}
	active, err := s.deps.Services.Fleet.ActiveJobs(ctx, p)
	if err != nil {
		s.respondError(c, err)
		return
	}
	// Stream the listing in pieces instead of assembling ~7 MB per request
	// (10,000 servers): the copy and the garbage it leaves were the tail
	// of the latency. The exact length is known up front.
	tails := make(map[string][]byte, len(active))
	for sid, jid := range active {
		tails[sid] = append(appendJSONString(nil, jid), '}')
	}
	nullTail := []byte("null}")
	tailOf := func(id string) []byte {
		if t, ok := tails[id]; ok {
			return t
		}
		return nullTail
	}
	size := 2 + max(len(items)-1, 0)
	for _, it := range items {
		size += len(it.head) + len(tailOf(it.id))
	}
	w := c.Writer
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(size))
	w.WriteHeader(http.StatusOK)
	buf := listChunks.Get().(*[]byte)
	defer listChunks.Put(buf)
	b := append((*buf)[:0], '[')
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, it.head...)
		b = append(b, tailOf(it.id)...)
		if len(b) >= listChunkSize {
			if _, err := w.Write(b); err != nil {
				return // the client went away
			}
			b = b[:0]
		}
	}
	b = append(b, ']')
	_, _ = w.Write(b)
	*buf = b[:0]
}

// listChunkSize is the size of the pieces the whole-fleet listing is
// written in; listChunks pools their buffers.
const listChunkSize = 64 << 10

var listChunks = sync.Pool{New: func() any { b := make([]byte, 0, 2*listChunkSize); return &b }}

// wholeFleetItems returns the listing, brought up to date: unchanged, patched for
// the servers changed since it was built, or rebuilt.
func (s *Server) wholeFleetItems(c *gin.Context, p *domain.Principal) ([]listedServer, error) {
	fl := s.deps.Services.Fleet
	sc := &s.serverList
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.valid {
		cur, ids, ok := fl.ChangesSince(sc.ver)
		switch {
		case ok && len(ids) == 0:
			return sc.items, nil
		case ok && len(ids) <= fleet.MaxByID:
			items, err := s.patchFleet(c, p, sc.items, ids)
			if err != nil {
				return nil, err
			}
			sc.ver, sc.items = cur, items
			return items, nil
		}
	}
	ver := fl.Version() // before the reads: a change during them is seen next time
	list, err := fl.List(c.Request.Context(), p, store.ServerFilter{})
	if err != nil {
		return nil, err
	}
	items, err := s.renderServers(c, list)
	if err != nil {
		return nil, err
	}
	sc.valid, sc.ver, sc.items = true, ver, items
	return items, nil
}

// patchFleet returns a new listing with the servers ids read and rendered
// again (or dropped when gone); the old slice is left as it was, since
// earlier responses may still be writing it.
func (s *Server) patchFleet(c *gin.Context, p *domain.Principal, old []listedServer, ids []string) ([]listedServer, error) {
	list, err := s.deps.Services.Fleet.ByID(c.Request.Context(), p, ids)
	if err != nil {
		return nil, err
	}
	fresh, err := s.renderServers(c, list)
	if err != nil {
		return nil, err
	}
	changed := make(map[string]bool, len(ids))
	for _, id := range ids {
		changed[id] = true
	}
	items := make([]listedServer, 0, len(old)+len(fresh))
	for _, it := range old {
		if !changed[it.id] {
			items = append(items, it)
		}
	}
	items = append(items, fresh...)
	slices.SortFunc(items, func(a, b listedServer) int { return strings.Compare(a.name, b.name) })
	return items, nil
}

// renderServers renders servers (with their status) for the listing.
func (s *Server) renderServers(c *gin.Context, list []domain.Server) ([]listedServer, error) {
	dtos := make([]serverDTO, len(list))
	for i, srv := range list {
		srv.ActiveJobID = ""
		dtos[i] = toServerDTO(srv)
	}
	if err := s.fillStatus(c, dtos); err != nil {
		return nil, err
	}
	items := make([]listedServer, len(dtos))
	for i := range dtos {
		b, err := json.Marshal(&dtos[i])
		if err != nil {
			return nil, err
		}
		if !bytes.HasSuffix(b, activeJobTail) {
			return nil, fmt.Errorf("httpapi: server JSON does not end with active_job_id")
		}
		items[i] = listedServer{id: dtos[i].ID, name: dtos[i].Name, head: b[:len(b)-len("null}")]}
	}
	return items, nil
}

// appendJSONString appends s as a JSON string, escaped as encoding/json
// escapes it (job ids are UUIDs; this is for safety, not speed).
func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s)
	return append(b, q...)
}

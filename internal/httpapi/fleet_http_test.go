package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/fleetsim"
	"github.com/lcmproject/lcm/internal/status"
	"github.com/lcmproject/lcm/internal/testutil/plane"
	"github.com/lcmproject/lcm/internal/version"
)

// fleetHTTP serves the real router over a real control plane. Until the
// identity area's sign-in is used here, a test-only middleware puts the
// principal named by the X-Test-User header into the request, exactly where
// the authenticate middleware puts it.
type fleetHTTP struct {
	server *Server
	p      *plane.Plane
	ts     *httptest.Server
	users  map[string]*domain.Principal
}

func newFleetHTTP(t *testing.T) *fleetHTTP {
	t.Helper()
	return newFleetHTTPOn(t, "")
}

// newFleetHTTPOn is newFleetHTTP on a database ("" = SQLite).
func newFleetHTTPOn(t *testing.T, dbURL string) *fleetHTTP {
	t.Helper()
	p := plane.Start(t, plane.Options{DatabaseURL: dbURL})
	h := &fleetHTTP{p: p, users: map[string]*domain.Principal{"admin": p.Admin}}
	s := &Server{deps: Deps{Store: p.Store, Bus: p.Bus, Log: slog.Default(), ClientAddr: remoteAddr,
		Services: Services{Fleet: p.Fleet, Jobs: p.Jobs, Status: status.New(p.Store, slog.Default())}}, engine: gin.New(), info: version.Get()}
	s.engine.Use(s.recoverPanics(), func(c *gin.Context) {
		if pr := h.users[c.GetHeader("X-Test-User")]; pr != nil {
			c.Set(ctxPrincipal, pr)
		}
		c.Next()
	})
	s.registerRoutes()
	h.server = s
	h.ts = httptest.NewServer(s.engine)
	t.Cleanup(h.ts.Close)
	return h
}

func (h *fleetHTTP) do(t *testing.T, user, method, path, body string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, h.ts.URL+path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if user != "" {
		req.Header.Set("X-Test-User", user)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

func decode[T any](t *testing.T, b []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return v
}

func simFleet(t *testing.T, n int, out string, latency time.Duration) *fleetsim.Fleet {
	t.Helper()
	table := fleetsim.DefaultTable()
	table.HandleFunc(func(cmd string) bool { return strings.Contains(cmd, "apt-get") }, func(ctx context.Context, r *fleetsim.Request) int {
		select {
		case <-time.After(latency):
		case <-ctx.Done():
			return 137
		}
		_, _ = io.WriteString(r.Stdout, out)
		return 0
	})
	f, err := fleetsim.Start(fleetsim.Config{N: n, Responders: table})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func (h *fleetHTTP) simServer(t *testing.T, inst *fleetsim.Instance, name string, groups ...string) domain.Server {
	t.Helper()
	key, _ := actions.NewManagementKey("t")
	return h.p.AddServer(t, name, inst.Addr, inst.AuthorizedHostKey(), key, groups...)
}

type sseEvent struct{ name, data string }

func readSSE(t *testing.T, url, user string) []sseEvent {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("X-Test-User", user)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	var evs []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			cur.name = line[7:]
		case strings.HasPrefix(line, "data: "):
			cur.data = line[6:]
		case line == "" && cur.name != "":
			evs = append(evs, cur)
			cur = sseEvent{}
		}
	}
	return evs
}

func TestServersAndJobsOverHTTP(t *testing.T) {
	out := strings.Repeat("Setting up libfoo (1.2.3) ...\n", 2000)
	f := simFleet(t, 1, out, 300*time.Millisecond)
	h := newFleetHTTP(t)
	srv := h.simServer(t, f.Instances[0], "Web-01")

	if code, _ := h.do(t, "", http.MethodGet, "/api/v1/servers", ""); code != http.StatusUnauthorized {
		t.Fatalf("anonymous list: %d", code)
	}
	code, body := h.do(t, "admin", http.MethodGet, "/api/v1/servers", "")
	list := decode[[]map[string]any](t, body)
	if code != 200 || len(list) != 1 || list[0]["name"] != "Web-01" || list[0]["transport"] != "ssh" {
		t.Fatalf("list: %d %s", code, body)
	}
	if _, body = h.do(t, "admin", http.MethodGet, "/api/v1/servers?q=%20web-01%20", ""); len(decode[[]any](t, body)) != 1 {
		t.Fatalf("q by name (blind index): %s", body)
	}
	if _, body = h.do(t, "admin", http.MethodGet, "/api/v1/servers?q=web", ""); len(decode[[]any](t, body)) != 0 {
		t.Fatalf("q matches whole names only: %s", body)
	}

	code, body = h.do(t, "admin", http.MethodPost, "/api/v1/servers/"+srv.ID+"/packages/upgrade-security", "")
	started := decode[map[string]string](t, body)
	if code != http.StatusAccepted || started["status"] != "started" || started["job_name"] != "Install security updates" || started["kind"] != "upgrade-security" || started["job_id"] == "" {
		t.Fatalf("upgrade-security: %d %s", code, body)
	}
	id := started["job_id"]
	code, body = h.do(t, "admin", http.MethodPost, "/api/v1/servers/"+srv.ID+"/packages/upgrade-security", "")
	blocked := decode[map[string]string](t, body)
	if code != http.StatusConflict || blocked["status"] != "blocked" || blocked["code"] != "server_busy" || blocked["job_id"] != id {
		t.Fatalf("busy server: %d %s", code, body)
	}
	if code, body = h.do(t, "admin", http.MethodGet, "/api/v1/servers/"+srv.ID+"/active-job", ""); code != 200 || decode[map[string]any](t, body)["job_id"] != id {
		t.Fatalf("active job: %d %s", code, body)
	}

	// Live stream: output in order, then the final state.
	evs := readSSE(t, h.ts.URL+"/api/v1/jobs/"+id+"/stream", "admin")
	var streamed strings.Builder
	for _, ev := range evs {
		if ev.name == "output" {
			o := decode[outputEventDTO](t, []byte(ev.data))
			if o.Offset != int64(streamed.Len()) {
				t.Fatalf("stream offset %d after %d bytes", o.Offset, streamed.Len())
			}
			streamed.WriteString(o.Data)
		}
	}
	last := evs[len(evs)-1]
	if last.name != "state" || decode[jobDTO](t, []byte(last.data)).Status != "success" || !strings.Contains(streamed.String(), out) {
		t.Fatalf("stream ended with %s %s after %d bytes", last.name, last.data, streamed.Len())
	}

	// Polling ssh-output with offsets returns the same bytes.
	var polled strings.Builder
	off := int64(0)
	for i := 0; i < 100; i++ {
		code, body = h.do(t, "admin", http.MethodGet, "/api/v1/jobs/"+id+"/ssh-output?offset="+itoa(off), "")
		o := decode[sshOutputDTO](t, body)
		if code != 200 || o.JobID != id {
			t.Fatalf("ssh-output: %d %s", code, body)
		}
		polled.WriteString(o.Output)
		off = o.Offset
		if o.Complete {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if polled.String() != streamed.String() {
		t.Fatalf("polled %d bytes, streamed %d", polled.Len(), streamed.Len())
	}
	code, body = h.do(t, "admin", http.MethodGet, "/api/v1/jobs/history?server_id="+srv.ID+"&limit=10", "")
	page := decode[jobPageDTO](t, body)
	if code != 200 || page.Total != 1 || page.Items[0].JobID != id || page.Items[0].ServerName != "Web-01" || page.Items[0].OutputBytes != int64(polled.Len()) {
		t.Fatalf("history: %d %s", code, body)
	}
	for _, q := range []string{"limit=x", "limit=0", "limit=501", "limit=100000", "limit=-1"} {
		code, body = h.do(t, "admin", http.MethodGet, "/api/v1/jobs/history?"+q, "")
		if code != 400 || !strings.Contains(string(body), `"code"`) || !strings.Contains(string(body), `"error"`) {
			t.Fatalf("bad %s: %d %s", q, code, body)
		}
		if q != "limit=x" && q != "limit=-1" && !strings.Contains(string(body), "limit_out_of_range") {
			t.Fatalf("bad %s: %s", q, body)
		}
	}
	if code, body = h.do(t, "admin", http.MethodGet, "/api/v1/jobs/history?limit=500", ""); code != 200 {
		t.Fatalf("limit at its maximum: %d %s", code, body)
	}
	if code, body = h.do(t, "admin", http.MethodGet, "/api/v1/jobs/filter-options", ""); code != 200 || !strings.Contains(string(body), "upgrade-security") {
		t.Fatalf("filter options: %d %s", code, body)
	}
	if code, _ = h.do(t, "admin", http.MethodGet, "/api/v1/servers/"+srv.ID+"/active-job", ""); code != 404 {
		t.Fatalf("active job after the end: %d", code)
	}
	if code, body = h.do(t, "admin", http.MethodPatch, "/api/v1/servers/"+srv.ID+"/settings", `{"name":"web-02","port":2222}`); code != 200 || !strings.Contains(string(body), `"port":2222`) {
		t.Fatalf("settings: %d %s", code, body)
	}
	if code, _ = h.do(t, "admin", http.MethodPatch, "/api/v1/servers/"+srv.ID+"/settings", `{"segment":"a.b"}`); code != 400 {
		t.Fatalf("bad segment: %d", code)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestManagerScopeOverHTTP(t *testing.T) {
	f := simFleet(t, 2, "ok\n", 2*time.Second)
	h := newFleetHTTP(t)
	code, body := h.do(t, "admin", http.MethodPost, "/api/v1/server-groups/create", `{"name":"team-a","segment":"default"}`)
	ga := decode[groupDTO](t, body)
	if code != 200 || ga.Name != "team-a" {
		t.Fatalf("create group: %d %s", code, body)
	}
	_, body = h.do(t, "admin", http.MethodPost, "/api/v1/server-groups/create", `{"name":"team-b"}`)
	gb := decode[groupDTO](t, body)
	mine := h.simServer(t, f.Instances[0], "mine")
	other := h.simServer(t, f.Instances[1], "other", gb.ID)
	m := h.p.Manager(t, "mgr")
	h.users["mgr"] = m
	if code, body = h.do(t, "admin", http.MethodPost, "/api/v1/server-groups/"+ga.ID+"/assign-server", `{"server_id":"`+mine.ID+`"}`); code != 200 {
		t.Fatalf("assign server: %d %s", code, body)
	}
	if code, body = h.do(t, "admin", http.MethodPost, "/api/v1/server-groups/"+ga.ID+"/assign-manager", `{"user_id":"`+m.UserID+`"}`); code != 200 ||
		!strings.Contains(string(body), m.UserID) {
		t.Fatalf("assign manager: %d %s", code, body)
	}
	_, body = h.do(t, "admin", http.MethodPost, "/api/v1/servers/"+other.ID+"/packages/upgrade-security", "")
	otherJob := decode[map[string]string](t, body)["job_id"]

	_, body = h.do(t, "mgr", http.MethodGet, "/api/v1/servers", "")
	if l := decode[[]serverDTO](t, body); len(l) != 1 || l[0].ID != mine.ID {
		t.Fatalf("manager sees %s", body)
	}
	for _, c := range []struct{ method, path string }{
		{http.MethodGet, "/api/v1/servers/" + other.ID},
		{http.MethodPost, "/api/v1/servers/" + other.ID + "/packages/upgrade-security"},
		{http.MethodPost, "/api/v1/servers/" + other.ID + "/reconnect"},
		{http.MethodPost, "/api/v1/servers/" + other.ID + "/connectivity-check"},
		{http.MethodPost, "/api/v1/servers/" + other.ID + "/rotate-key"},
		{http.MethodPost, "/api/v1/servers/" + other.ID + "/decommission"},
		{http.MethodGet, "/api/v1/servers/" + other.ID + "/active-job"},
		{http.MethodGet, "/api/v1/jobs/" + otherJob},
		{http.MethodGet, "/api/v1/jobs/" + otherJob + "/ssh-output"},
		{http.MethodGet, "/api/v1/jobs/" + otherJob + "/stream"},
		{http.MethodPost, "/api/v1/jobs/" + otherJob + "/abort"},
		{http.MethodGet, "/api/v1/server-groups/" + gb.ID},
	} {
		if code, body := h.do(t, "mgr", c.method, c.path, ""); code != http.StatusNotFound {
			t.Errorf("%s %s as manager: %d %s", c.method, c.path, code, body)
		}
	}
	if _, body = h.do(t, "mgr", http.MethodGet, "/api/v1/jobs/history?server_id="+other.ID, ""); decode[jobPageDTO](t, body).Total != 0 {
		t.Fatalf("manager history leaks: %s", body)
	}
	if code, _ = h.do(t, "mgr", http.MethodPost, "/api/v1/server-groups/create", `{"name":"x"}`); code != http.StatusForbidden {
		t.Fatalf("manager without groups:write: %d", code)
	}
	code, body = h.do(t, "mgr", http.MethodPost, "/api/v1/servers/"+mine.ID+"/packages/upgrade-security", "")
	if code != http.StatusAccepted {
		t.Fatalf("manager on its own server: %d %s", code, body)
	}
	id := decode[map[string]string](t, body)["job_id"]
	if code, body = h.do(t, "mgr", http.MethodPost, "/api/v1/jobs/"+id+"/abort", ""); code != 200 || decode[jobDTO](t, body).Status != "aborted" {
		t.Fatalf("abort own job: %d %s", code, body)
	}
	if code, _ = h.do(t, "admin", http.MethodPost, "/api/v1/server-groups/"+gb.ID+"/disband", ""); code != http.StatusNoContent {
		t.Fatalf("disband: %d", code)
	}
}

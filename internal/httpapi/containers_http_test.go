package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/lcmproject/lcm/internal/containersvc"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/status"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil/plane"
	"github.com/lcmproject/lcm/internal/version"
)

// newContainersHTTP is newFleetHTTP with the containers service.
func newContainersHTTP(t *testing.T) *fleetHTTP {
	t.Helper()
	p := plane.Start(t, plane.Options{})
	h := &fleetHTTP{p: p, users: map[string]*domain.Principal{"admin": p.Admin}}
	svc := containersvc.New(p.Store, p.Jobs, slog.Default())
	svc.RegisterJobs()
	s := &Server{deps: Deps{Store: p.Store, Bus: p.Bus, Log: slog.Default(), ClientAddr: remoteAddr,
		Services: Services{Fleet: p.Fleet, Jobs: p.Jobs, Status: status.New(p.Store, slog.Default()), Containers: svc}}, engine: gin.New(), info: version.Get()}
	s.engine.Use(s.recoverPanics(), func(c *gin.Context) {
		if pr := h.users[c.GetHeader("X-Test-User")]; pr != nil {
			c.Set(ctxPrincipal, pr)
		}
		c.Next()
	})
	s.registerRoutes()
	h.ts = httptest.NewServer(s.engine)
	t.Cleanup(h.ts.Close)
	return h
}

// TestContainersRoutesOverHTTP: validation, image_in_use before a job,
// group scoping of the server and fleet routes, filters. The jobs run
// against a real Podman in internal/containersvc (test host 14).
func TestContainersRoutesOverHTTP(t *testing.T) {
	ctx := context.Background()
	f := simFleet(t, 2, "ok\n", 0)
	h := newContainersHTTP(t)
	mine := h.simServer(t, f.Instances[0], "mine")
	other := h.simServer(t, f.Instances[1], "other")
	inv := `{"engines":[{"engine":"podman","version":"4.3.1","compose_tools":["podman-compose"]}],
"containers":[{"engine":"podman","id":"c1","name":"web","image":"localhost/shop:1","image_id":"i1","state":"running","compose_project":"shop","compose_service":"web","ports":[]},
{"engine":"podman","id":"c2","name":"job","image":"localhost/shop:1","image_id":"i1","state":"exited","ports":[]}],
"images":[{"engine":"podman","id":"i1","repository":"localhost/shop","tag":"1","in_use":true,"containers":2,"size":10},
{"engine":"podman","id":"i2","repository":"localhost/old","tag":"1","size":5}],
"compose":[{"engine":"podman","name":"shop","working_dir":"/srv/shop","config_files":["/srv/shop/compose.yaml"],"services":[{"name":"web","state":"running","containers":["web"],"images":["localhost/shop:1"]}],"state":"running"}]}`
	for _, s := range []domain.Server{mine, other} {
		if err := h.p.Store.SetContainerInventory(ctx, store.ContainerInventory{ServerID: s.ID, Data: []byte(inv), RefreshedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	m := h.p.Manager(t, "mgr")
	h.users["mgr"] = m
	code, body := h.do(t, "admin", http.MethodPost, "/api/v1/server-groups/create", `{"name":"ctr"}`)
	if code != 200 {
		t.Fatalf("group: %d %s", code, body)
	}
	gid := decode[map[string]any](t, body)["id"].(string)
	h.do(t, "admin", http.MethodPost, "/api/v1/server-groups/"+gid+"/assign-server", `{"server_id":"`+mine.ID+`"}`)
	h.do(t, "admin", http.MethodPost, "/api/v1/server-groups/"+gid+"/assign-manager", `{"user_id":"`+m.UserID+`"}`)

	base := "/api/v1/servers/" + mine.ID + "/docker"
	for _, c := range []struct {
		path, body string
		code       int
		errCode    string
	}{
		{"/pull", `{}`, 400, "invalid_params"},
		{"/pull", `{"image":"nginx; rm -rf /"}`, 400, "invalid_params"},
		{"/pull", `{"image":"nginx","engine":"lxc"}`, 400, "invalid_params"},
		{"/remove-image", `{"image":"localhost/shop:1"}`, 409, "image_in_use"},
		{"/compose-update", `{"project":"nope"}`, 404, "not_found"},
		{"/compose-update", `{"project":"shop","tool":"helm"}`, 400, "invalid_params"},
		{"/prune", `{}`, 400, "invalid_params"},
		{"/cve-relevance", `{"container":"web"}`, 400, "invalid_request"},
		{"/cve-relevance", `{"container":"ghost","relevant":true}`, 404, "not_found"},
		{"/containers/a%20b/stop", ``, 400, "invalid_params"},
	} {
		code, body := h.do(t, "admin", http.MethodPost, base+c.path, c.body)
		if code != c.code || !strings.Contains(string(body), `"code":"`+c.errCode) {
			t.Errorf("%s %s: %d %s", c.path, c.body, code, body)
		}
	}
	if code, body := h.do(t, "mgr", http.MethodPost, base+"/cve-relevance", `{"container":"web","relevant":true}`); code != 200 {
		t.Fatalf("mark: %d %s", code, body)
	}
	// A manager sees only the servers of their groups.
	if code, _ := h.do(t, "mgr", http.MethodGet, "/api/v1/servers/"+other.ID+"/docker", ""); code != 404 {
		t.Errorf("other server's containers: %d", code)
	}
	if code, _ := h.do(t, "mgr", http.MethodPost, "/api/v1/servers/"+other.ID+"/docker/refresh", ""); code != 404 {
		t.Errorf("other server's refresh: %d", code)
	}
	code, body = h.do(t, "mgr", http.MethodGet, "/api/v1/docker/containers?state=running", "")
	list := decode[struct {
		Items []containersvc.FleetContainer `json:"items"`
	}](t, body)
	if code != 200 || len(list.Items) != 1 || list.Items[0].ServerID != mine.ID || !list.Items[0].CVERelevant || list.Items[0].Update != "not_checked" {
		t.Fatalf("fleet containers: %d %s", code, body)
	}
	code, body = h.do(t, "admin", http.MethodGet, "/api/v1/docker/overview", "")
	ov := decode[containersvc.Overview](t, body)
	if code != 200 || ov.Servers != 2 || ov.Containers != 4 || ov.Running != 2 || ov.UpdateCheck || ov.UpdatesAvailable != 0 {
		t.Fatalf("overview: %d %s", code, body)
	}
	if code, body = h.do(t, "admin", http.MethodGet, "/api/v1/docker/compose?update=maybe", ""); code != 400 {
		t.Fatalf("bad filter: %d %s", code, body)
	}
	code, body = h.do(t, "admin", http.MethodGet, "/api/v1/docker/compose?image=shop", "")
	if code != 200 || !strings.Contains(string(body), `"total":2`) {
		t.Fatalf("fleet compose: %d %s", code, body)
	}
	// A valid action is a job.
	code, body = h.do(t, "admin", http.MethodPost, base+"/containers/web/restart", "")
	if st := decode[map[string]string](t, body); code != 202 || st["job_name"] != "Restart container web" || st["kind"] != "container-action" {
		t.Fatalf("restart: %d %s", code, body)
	}
	h.p.WaitJob(t, decode[map[string]string](t, body)["job_id"], time.Minute)
}

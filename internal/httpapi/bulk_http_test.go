package httpapi

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
)

// TestBulkRunsOverHTTP: one request starts a job per server of a
// selection, a group or the whole fleet, with refusals per server (not
// joined, busy, unsupported), progress counts that reach done, the
// manager's scope (a selection with a foreign server is refused as a
// whole; "all" means its own servers), update-all one at a time, and
// input errors as 4xx {"error","code"}.
func TestBulkRunsOverHTTP(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) { testBulkRunsOverHTTP(t, db.URL) })
	}
}

func testBulkRunsOverHTTP(t *testing.T, dbURL string) {
	f := simFleet(t, 6, "ok\n", 300*time.Millisecond)
	h := newFleetHTTPOn(t, dbURL)
	_, body := h.do(t, "admin", http.MethodPost, "/api/v1/server-groups/create", `{"name":"team-a"}`)
	ga := decode[groupDTO](t, body)
	a1 := h.simServer(t, f.Instances[0], "a1", ga.ID)
	a2 := h.simServer(t, f.Instances[1], "a2", ga.ID)
	b1 := h.simServer(t, f.Instances[2], "b1")
	b2 := h.simServer(t, f.Instances[3], "b2")
	// An Arch server has no security channel; a server that never joined.
	if _, err := h.p.Store.CreateServer(context.Background(), store.NewServer{Server: domain.Server{Name: "arch", Host: "127.0.0.1", Port: 22,
		Transport: domain.TransportSSH, Status: domain.ServerGreen, Joined: true, PackageFamily: "pacman", AuthMethod: domain.AuthKey,
		HostKey: f.Instances[4].AuthorizedHostKey()}}); err != nil {
		t.Fatal(err)
	}
	fresh, err := h.p.Store.CreateServer(context.Background(), store.NewServer{Server: domain.Server{Name: "fresh", Host: "127.0.0.1", Port: 22,
		Transport: domain.TransportSSH, Status: domain.ServerUnknown, AuthMethod: domain.AuthPassword, HostKey: f.Instances[5].AuthorizedHostKey()}})
	if err != nil {
		t.Fatal(err)
	}
	m := h.p.Manager(t, "mgr")
	h.users["mgr"] = m
	h.do(t, "admin", http.MethodPost, "/api/v1/server-groups/"+ga.ID+"/assign-manager", `{"user_id":"`+m.UserID+`"}`)

	for _, c := range []struct {
		user, body string
		code       int
		errCode    string
	}{
		{"admin", `{"action":"format-disks","all":true}`, 400, "unknown_action"},
		{"admin", `{"action":"refresh"}`, 400, "invalid_target"},
		{"admin", `{"action":"refresh","all":true,"group_id":"` + ga.ID + `"}`, 400, "invalid_target"},
		{"admin", `{"action":"refresh","server_ids":[""]}`, 400, "invalid_server_id"},
		{"admin", `{"action":"refresh","bogus":1}`, 400, ""},
		{"admin", `{"action":"refresh","group_id":"no-such-group"}`, 404, ""},
		{"mgr", `{"action":"refresh","server_ids":["` + a1.ID + `","` + b1.ID + `"]}`, 403, "servers_out_of_scope"},
		{"mgr", `{"action":"refresh","server_ids":["no-such-server"]}`, 403, "servers_out_of_scope"},
		{"", `{"action":"refresh","all":true}`, 401, ""},
	} {
		code, body := h.do(t, c.user, http.MethodPost, "/api/v1/jobs/bulk", c.body)
		if code != c.code || !strings.Contains(string(body), `"error"`) || !strings.Contains(string(body), `"code":"`+c.errCode) {
			t.Errorf("%s %s: %d %s, want %d %s", c.user, c.body, code, body, c.code, c.errCode)
		}
	}

	// Busy: b2 runs a job already.
	if code, body := h.do(t, "admin", http.MethodPost, "/api/v1/servers/"+b2.ID+"/packages/upgrade-security", ""); code != 202 {
		t.Fatalf("single job: %d %s", code, body)
	}
	code, body := h.do(t, "admin", http.MethodPost, "/api/v1/jobs/bulk", `{"action":"upgrade-security","all":true}`)
	if code != http.StatusAccepted {
		t.Fatalf("bulk all: %d %s", code, body)
	}
	run := decode[bulkRunDTO](t, body)
	refusals := map[string]string{}
	started := 0
	for _, it := range run.Items {
		if it.Refused != nil {
			refusals[it.ServerName] = it.Refused.Code
		} else if it.JobID != nil && *it.Status == "pending" {
			started++
		}
	}
	if run.Progress.Total != 6 || run.Progress.Jobs != 3 || run.Progress.Refused != 3 || started != 3 || run.Target != "all" ||
		refusals["fresh"] != "not_joined" || refusals["b2"] != "server_busy" || refusals["arch"] != "unsupported_action" {
		t.Fatalf("bulk all: %+v refusals %v", run.Progress, refusals)
	}
	waitBulk := func(user, id string) bulkRunDTO {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			code, body := h.do(t, user, http.MethodGet, "/api/v1/jobs/bulk/"+id, "")
			r := decode[bulkRunDTO](t, body)
			if code != 200 {
				t.Fatalf("get bulk: %d %s", code, body)
			}
			if r.Progress.Done {
				return r
			}
			if time.Now().After(deadline) {
				t.Fatalf("bulk %s not done: %+v", id, r.Progress)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	done := waitBulk("admin", run.BulkID)
	if done.Progress.Counts["success"] != 3 || done.Progress.Counts["pending"] != 0 {
		t.Fatalf("bulk done: %+v", done.Progress)
	}
	// The manager cannot read an admin's run.
	if code, _ := h.do(t, "mgr", http.MethodGet, "/api/v1/jobs/bulk/"+run.BulkID, ""); code != http.StatusNotFound {
		t.Fatalf("manager read an admin's run: %d", code)
	}

	// A manager's "all" is its own group's servers; by group the same.
	code, body = h.do(t, "mgr", http.MethodPost, "/api/v1/jobs/bulk", `{"action":"refresh","all":true}`)
	mrun := decode[bulkRunDTO](t, body)
	if code != 202 || mrun.Progress.Total != 2 || mrun.Progress.Jobs != 2 {
		t.Fatalf("manager all: %d %s", code, body)
	}
	waitBulk("mgr", mrun.BulkID)
	code, body = h.do(t, "mgr", http.MethodPost, "/api/v1/jobs/bulk", `{"action":"connectivity-check","group_id":"`+ga.ID+`"}`)
	if r := decode[bulkRunDTO](t, body); code != 202 || r.Target != "group" || r.Progress.Jobs != 2 {
		t.Fatalf("manager group: %d %s", code, body)
	} else {
		waitBulk("mgr", r.BulkID)
	}
	code, body = h.do(t, "mgr", http.MethodPost, "/api/v1/jobs/bulk", `{"action":"upgrade-all","server_ids":["`+a1.ID+`","`+a2.ID+`"]}`)
	if r := decode[bulkRunDTO](t, body); code != 202 || r.Target != "servers" || r.Progress.Jobs != 2 || r.Kind != "package-action" {
		t.Fatalf("manager selection: %d %s", code, body)
	} else {
		waitBulk("mgr", r.BulkID)
	}

	// update-all: one at a time, then readable through GET.
	code, body = h.do(t, "admin", http.MethodPost, "/api/v1/security/update-all", "")
	ua := decode[bulkRunDTO](t, body)
	if code != 202 || ua.Action != "update-all" || ua.Kind != "upgrade-security" || ua.Progress.Jobs != 4 {
		t.Fatalf("update-all: %d %s", code, body)
	}
	if code, body := h.do(t, "admin", http.MethodPost, "/api/v1/security/update-all", ""); code != http.StatusConflict || !strings.Contains(string(body), "bulk_in_progress") {
		t.Fatalf("second update-all: %d %s", code, body)
	}
	waitBulk("admin", ua.BulkID)
	code, body = h.do(t, "admin", http.MethodGet, "/api/v1/security/update-all", "")
	if r := decode[bulkRunDTO](t, body); code != 200 || r.BulkID != ua.BulkID || !r.Progress.Done {
		t.Fatalf("get update-all: %d %s", code, body)
	}
	if code, _ := h.do(t, "mgr", http.MethodGet, "/api/v1/security/update-all", ""); code != http.StatusNotFound {
		t.Fatalf("manager without runs: %d", code)
	}
	_ = fresh
}

package httpapi

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/testutil"
)

// TestAutomationHTTP: group scoping of schedules, admin-only custom action
// edits, custom action runs (live output in the job console, refused in
// restricted sudo mode with restricted_mode), maintenance on and off, the
// system schedules overview with the daily CVE scan at 30 2 * * *.
func TestAutomationHTTP(t *testing.T) {
	e := newFullEnv(t, "")
	ctx := context.Background()
	adm := e.login("admin", adminPW)
	mine := e.jsonField(e.must(200, req{method: http.MethodPost, path: "/api/v1/server-groups/create", token: adm, body: map[string]any{"name": "mine"}}), "id")
	other := e.jsonField(e.must(200, req{method: http.MethodPost, path: "/api/v1/server-groups/create", token: adm, body: map[string]any{"name": "other"}}), "id")
	mgrID := e.createUser(adm, "mona", "Quiet-Lantern-83q", "manager")
	e.must(200, req{method: http.MethodPost, path: "/api/v1/server-groups/" + mine + "/assign-manager", token: adm, body: map[string]any{"user_id": mgrID}})
	mgr := e.login("mona", "Quiet-Lantern-83q")

	// A manager defines schedules in its group only.
	r := e.must(201, req{method: http.MethodPost, path: "/api/v1/server-groups/" + mine + "/schedules/define", token: mgr,
		body: map[string]any{"name": "nightly", "cron": "0 3 * * *", "time_zone": "Europe/Berlin", "window_start": "02:00", "window_end": "05:00"}})
	sch := e.jsonField(r, "id")
	if !strings.Contains(string(r.body), `"next_run_at":"`) {
		t.Fatalf("no next run: %s", r.body)
	}
	e.must(404, req{method: http.MethodPost, path: "/api/v1/server-groups/" + other + "/schedules/define", token: mgr, body: map[string]any{"name": "x", "cron": "0 3 * * *"}})
	otherSch := e.jsonField(e.must(201, req{method: http.MethodPost, path: "/api/v1/server-groups/" + other + "/schedules/define", token: adm,
		body: map[string]any{"name": "theirs", "cron": "0 4 * * *"}}), "id")
	e.must(404, req{method: http.MethodPatch, path: "/api/v1/schedules/" + otherSch + "/update", token: mgr, body: map[string]any{"enabled": false}})
	e.must(404, req{method: http.MethodPost, path: "/api/v1/schedules/" + otherSch + "/trigger-now", token: mgr})
	if r := e.must(200, req{method: http.MethodGet, path: "/api/v1/rules", token: mgr}); strings.Contains(string(r.body), otherSch) {
		t.Fatalf("manager sees another group's schedule: %s", r.body)
	}
	// Bad input.
	for _, body := range []map[string]any{{"name": "x", "cron": "61 * * * *"}, {"name": "x", "cron": "0 3 * * *", "time_zone": "Mars/Olympus"},
		{"name": "x", "cron": "0 3 * * *", "window_start": "02:00"}, {"name": "x", "cron": "0 3 * * *", "outside_window": "later"}} {
		r := e.do(req{method: http.MethodPost, path: "/api/v1/server-groups/" + mine + "/schedules/define", token: mgr, body: body})
		if r.code != 400 {
			t.Fatalf("%v: %d %s", body, r.code, r.body)
		}
	}
	e.must(400, req{method: http.MethodPost, path: "/api/v1/server-groups/" + mine + "/rules/define", token: mgr, body: map[string]any{"schedule_id": sch, "type": "packages"}})
	e.must(400, req{method: http.MethodPost, path: "/api/v1/server-groups/" + mine + "/rules/define", token: mgr, body: map[string]any{"schedule_id": otherSch, "type": "refresh"}})
	e.must(201, req{method: http.MethodPost, path: "/api/v1/server-groups/" + mine + "/rules/define", token: mgr,
		body: map[string]any{"schedule_id": sch, "type": "packages", "params": map[string]any{"packages": []string{"nginx"}}}})

	// Custom actions: a manager reads but does not edit.
	e.must(403, req{method: http.MethodPost, path: "/api/v1/custom-actions", token: mgr, body: map[string]any{"name": "x", "commands": []string{"id"}}})
	ca := e.jsonField(e.must(201, req{method: http.MethodPost, path: "/api/v1/custom-actions", token: adm,
		body: map[string]any{"name": "who", "commands": []string{"echo automation-live-output", "id -u"}}}), "id")
	if r := e.must(200, req{method: http.MethodGet, path: "/api/v1/custom-actions", token: mgr}); !strings.Contains(string(r.body), "automation-live-output") {
		t.Fatalf("list: %s", r.body)
	}
	e.must(400, req{method: http.MethodPost, path: "/api/v1/custom-actions", token: adm, body: map[string]any{"name": "empty", "commands": []string{" "}}})
	e.must(409, req{method: http.MethodPost, path: "/api/v1/custom-actions", token: adm, body: map[string]any{"name": "who", "commands": []string{"id"}}})

	// Run on a server: a job whose output the console shows.
	srv := e.server(t)
	r = e.must(202, req{method: http.MethodPost, path: "/api/v1/custom-actions/" + ca + "/run", token: adm, body: map[string]any{"server_ids": []string{srv.ID}}})
	var run bulkRunDTO
	r.json(t, &run)
	if len(run.Items) != 1 || run.Items[0].JobID == nil {
		t.Fatalf("run: %s", r.body)
	}
	job := *run.Items[0].JobID
	testutil.WaitFor(t, 30*time.Second, "the custom action's output", func() bool {
		o := e.do(req{method: http.MethodGet, path: "/api/v1/jobs/" + job + "/ssh-output", token: adm})
		return o.code == 200 && strings.Contains(string(o.body), "automation-live-output")
	})
	e.p.WaitJob(t, job, 30*time.Second)
	// Restricted sudo mode refuses it.
	rs := e.server(t)
	if err := e.st.RecordSudoMode(ctx, rs.ID, "restricted", time.Now()); err != nil {
		t.Fatal(err)
	}
	if r := e.do(req{method: http.MethodPost, path: "/api/v1/custom-actions/" + ca + "/run", token: adm, body: map[string]any{"server_ids": []string{rs.ID}}}); r.code != 409 || !strings.Contains(string(r.body), "restricted_mode") {
		t.Fatalf("restricted: %d %s", r.code, r.body)
	}
	// A manager runs it only where it sees servers.
	e.must(404, req{method: http.MethodPost, path: "/api/v1/custom-actions/" + ca + "/run", token: mgr, body: map[string]any{"group_id": other}})

	// Maintenance on, with an end time; off.
	ends := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	r = e.must(200, req{method: http.MethodPost, path: "/api/v1/servers/" + srv.ID + "/maintenance/start", token: adm, body: map[string]any{"reason": "disk swap", "ends_at": ends}})
	if !strings.Contains(string(r.body), `"active":true`) {
		t.Fatalf("start: %s", r.body)
	}
	e.must(400, req{method: http.MethodPost, path: "/api/v1/servers/" + srv.ID + "/maintenance/start", token: adm, body: map[string]any{"ends_at": "2001-01-01T00:00:00Z"}})
	if r := e.must(200, req{method: http.MethodGet, path: "/api/v1/servers/" + srv.ID + "/maintenance", token: adm}); !strings.Contains(string(r.body), "disk swap") {
		t.Fatalf("get: %s", r.body)
	}
	e.must(200, req{method: http.MethodPost, path: "/api/v1/servers/" + srv.ID + "/maintenance/end", token: adm})
	if r := e.must(200, req{method: http.MethodGet, path: "/api/v1/servers/" + srv.ID + "/maintenance", token: adm}); !strings.Contains(string(r.body), `"active":false`) {
		t.Fatalf("after end: %s", r.body)
	}

	// System schedules: one registry, the CVE scan at 02:30.
	r = e.must(200, req{method: http.MethodGet, path: "/api/v1/system/schedules/overview", token: adm})
	if !strings.Contains(string(r.body), `"kind":"storage-sample"`) {
		t.Fatalf("overview: %s", r.body)
	}
	e.must(403, req{method: http.MethodGet, path: "/api/v1/system/schedules/overview", token: mgr})
	e.must(404, req{method: http.MethodPost, path: "/api/v1/system/schedules/kind/nope/trigger-now", token: adm})
}

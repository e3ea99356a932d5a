package httpapi

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/approvals"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/rollout"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
)

// TestRolloutsOverHTTP: input errors as 4xx {"error","code"}, a manager's
// scope (a rollout over a foreign server is refused; the list and the
// rollout of another group are invisible), one rollout at a time (409),
// pause / resume / abort, and approvals: the requester — also with an API
// key, which acts as its owner — cannot approve; a second admin can.
func TestRolloutsOverHTTP(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) { testRolloutsOverHTTP(t, db.URL) })
	}
}

func testRolloutsOverHTTP(t *testing.T, dbURL string) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	f := simFleet(t, 3, "ok\n", 50*time.Millisecond)
	h := newFleetHTTPOn(t, dbURL)
	_, body := h.do(t, "admin", http.MethodPost, "/api/v1/server-groups/create", `{"name":"team-a"}`)
	ga := decode[groupDTO](t, body)
	a1 := h.simServer(t, f.Instances[0], "a1", ga.ID)
	b1 := h.simServer(t, f.Instances[1], "b1")
	h.simServer(t, f.Instances[2], "b2")
	m := h.p.Manager(t, "mgr")
	h.users["mgr"] = m
	h.do(t, "admin", http.MethodPost, "/api/v1/server-groups/"+ga.ID+"/assign-manager", `{"user_id":"`+m.UserID+`"}`)
	ctx := context.Background()
	u, err := h.p.Store.CreateUser(ctx, store.NewUser{Username: "admin2", Active: true, Roles: []string{domain.RoleAdmin}})
	if err != nil {
		t.Fatal(err)
	}
	h.users["admin2"] = &domain.Principal{UserID: u.ID, Username: "admin2", Roles: []string{domain.RoleAdmin}, Permissions: h.p.Admin.Permissions}
	key := *h.p.Admin
	key.Method, key.APIKeyID = domain.AuthAPIKey, "key-1"
	h.users["adminkey"] = &key

	// The test server's Services: add rollouts and approvals, and drive.
	srv := h.server
	ap := approvals.New(h.p.Store, quiet)
	ro := rollout.New(h.p.Store, h.p.Jobs, rollout.Options{Log: quiet, Approvals: ap, Tick: 50 * time.Millisecond})
	srv.deps.Services.Rollouts, srv.deps.Services.Approvals = ro, ap
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = ro.Run(rctx) }()
	t.Cleanup(func() { cancel(); <-done })

	for _, c := range []struct {
		user, body string
		code       int
		errCode    string
	}{
		{"admin", `{"action":"format-disks","all":true}`, 400, "unknown_action"},
		{"admin", `{"action":"security-updates"}`, 400, "invalid_target"},
		{"admin", `{"action":"security-updates","all":true,"batch_size":2,"batch_percent":10}`, 400, "invalid_batch_size"},
		{"admin", `{"action":"security-updates","all":true,"failure_threshold_percent":101}`, 400, "invalid_threshold"},
		{"admin", `{"action":"security-updates","all":true,"pause_seconds":-1}`, 400, "invalid_pause"},
		{"admin", `{"action":"security-updates","all":true,"bogus":1}`, 400, ""},
		{"mgr", `{"action":"security-updates","server_ids":["` + a1.ID + `","` + b1.ID + `"]}`, 403, "servers_out_of_scope"},
		{"", `{"action":"security-updates","all":true}`, 401, ""},
	} {
		code, body := h.do(t, c.user, http.MethodPost, "/api/v1/rollouts", c.body)
		if code != c.code || !strings.Contains(string(body), `"error"`) || !strings.Contains(string(body), `"code":"`+c.errCode) {
			t.Errorf("%s %s: %d %s, want %d %s", c.user, c.body, code, body, c.code, c.errCode)
		}
	}
	// Dry run: nothing stored.
	code, body := h.do(t, "admin", http.MethodPost, "/api/v1/rollouts", `{"action":"security-updates","all":true,"batch_size":1,"dry_run":true}`)
	if code != 200 || !strings.Contains(string(body), `"batches":3`) {
		t.Fatalf("dry run: %d %s", code, body)
	}
	// Approval needed: the requester via its API key cannot approve.
	code, body = h.do(t, "adminkey", http.MethodPost, "/api/v1/rollouts", `{"action":"security-updates","server_ids":["`+b1.ID+`"],"require_approval":true}`)
	if code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}
	r := decode[rolloutDTO](t, body)
	if r.Status != domain.RolloutAwaitingApproval || r.ApprovalID == nil {
		t.Fatalf("created %+v", r)
	}
	for _, user := range []string{"adminkey", "admin"} {
		code, body = h.do(t, user, http.MethodPost, "/api/v1/approvals/"+*r.ApprovalID+"/approve", `{"comment":"mine"}`)
		if code != 403 || !strings.Contains(string(body), "self_approval") {
			t.Fatalf("%s approves own: %d %s", user, code, body)
		}
	}
	// The manager sees neither the rollout nor its approval (b1 is not in its group).
	if code, _ := h.do(t, "mgr", http.MethodGet, "/api/v1/rollouts/"+r.ID, ""); code != 404 {
		t.Fatalf("manager reads a foreign rollout: %d", code)
	}
	if _, body := h.do(t, "mgr", http.MethodGet, "/api/v1/approvals", ""); strings.Contains(string(body), *r.ApprovalID) {
		t.Fatalf("manager lists a foreign approval: %s", body)
	}
	// One at a time per scope.
	if code, body := h.do(t, "admin", http.MethodPost, "/api/v1/rollouts", `{"action":"all-updates","all":true}`); code != 409 || !strings.Contains(string(body), "rollout_in_progress") {
		t.Fatalf("overlap: %d %s", code, body)
	}
	if code, body := h.do(t, "admin2", http.MethodPost, "/api/v1/approvals/"+*r.ApprovalID+"/approve", `{"comment":"ok"}`); code != 200 {
		t.Fatalf("second admin approves: %d %s", code, body)
	}
	testutil.WaitFor(t, 30*time.Second, "approved rollout completes", func() bool {
		_, body := h.do(t, "admin", http.MethodGet, "/api/v1/rollouts/"+r.ID, "")
		return decode[rolloutDTO](t, body).Status == domain.RolloutCompleted
	})
	// The manager's own rollout: visible to it, pause / resume / abort.
	code, body = h.do(t, "mgr", http.MethodPost, "/api/v1/rollouts", `{"action":"security-updates","all":true,"pause_seconds":3600}`)
	if code != 201 {
		t.Fatalf("manager create: %d %s", code, body)
	}
	mr := decode[rolloutDTO](t, body)
	if mr.Servers != 1 {
		t.Fatalf("manager's all is its group: %+v", mr)
	}
	for _, op := range []string{"pause", "resume", "abort"} {
		if code, body := h.do(t, "mgr", http.MethodPost, "/api/v1/rollouts/"+mr.ID+"/"+op, ""); code != 200 {
			t.Fatalf("%s: %d %s", op, code, body)
		}
	}
	if code, body := h.do(t, "mgr", http.MethodPost, "/api/v1/rollouts/"+mr.ID+"/resume", ""); code != 409 || !strings.Contains(string(body), "invalid_state") {
		t.Fatalf("resume aborted: %d %s", code, body)
	}
	_, body = h.do(t, "mgr", http.MethodGet, "/api/v1/rollouts", "")
	if strings.Contains(string(body), r.ID) || !strings.Contains(string(body), mr.ID) {
		t.Fatalf("manager list: %s", body)
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/testutil"
)

// keyClient sends requests with a real API key (X-API-Key), as a script
// or CI job would.
type keyClient struct {
	t    *testing.T
	a    *testutil.API
	name string
	key  string
}

func (k keyClient) do(method, path string, body, out any) (int, string) {
	k.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, k.a.BaseURL+path, rd)
	if err != nil {
		k.t.Fatal(err)
	}
	req.Header.Set("X-API-Key", k.key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := k.a.Client.Do(req)
	if err != nil {
		k.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(raw, out); err != nil {
			k.t.Fatalf("%s %s: %v: %s", method, path, err, raw)
		}
	}
	return resp.StatusCode, string(raw)
}

// ok fails unless the call answers 2xx.
func (k keyClient) ok(method, path string, body, out any) {
	k.t.Helper()
	if code, raw := k.do(method, path, body, out); code/100 != 2 {
		k.t.Fatalf("%s: %s %s: %d %s", k.name, method, path, code, raw)
	}
}

// must fails unless the call answers want.
func (k keyClient) must(want int, method, path string, body, out any) string {
	k.t.Helper()
	code, raw := k.do(method, path, body, out)
	if code != want {
		k.t.Fatalf("%s: %s %s: %d %s, want %d", k.name, method, path, code, raw, want)
	}
	return raw
}

type e2eApproval struct {
	ID          string          `json:"id"`
	Kind        string          `json:"kind"`
	RefID       string          `json:"ref_id"`
	Status      string          `json:"status"`
	RequestedBy string          `json:"requested_by"`
	Payload     json.RawMessage `json:"payload"`
}

// TestApprovalsEveryPathWithAPIKeys is issue 20's four eyes through the
// real binary, every call made with a real API key of a real user (no
// session, no synthetic principal): alice (admin) requests, carol (admin)
// approves, mike manages one group. For rollouts, the approval policy
// (PUT /settings/rollouts) and POST /security/update-all under it,
// schedules (trigger-now, a single rule, and cron runs in the name of
// the schedule's last editor) and custom actions: the requester can never
// approve their own request; an approval lets exactly the requester's run
// on exactly its servers and action through, once; approvers see only
// approvals of their groups; switching requires_approval off needs an
// administrator and is audited.
func TestApprovalsEveryPathWithAPIKeys(t *testing.T) {
	hosts := startFleetsim(t, 3, "-latency", "20ms")
	// The test polls with its keys: no per-key rate limit.
	a := testutil.StartAPI(t, testutil.APIOptions{Dev: true, Config: map[string]any{"require_2fa_roles": []string{}, "api_key_rate_limit_per_minute": 0}})
	admin := login(t, a, "admin", a.AdminPassword)
	ids := onboardSim(t, a, admin, hosts)

	// Users, each with its own API key.
	const pw = "Quartz-Meadow-4821!"
	type userInfo struct{ ID string }
	newUser := func(name string) (userInfo, keyClient) {
		var u userInfo
		if resp, body := a.Do("POST", "/api/v1/users", admin, map[string]any{"username": name, "first_name": name, "last_name": "Test",
			"email": name + "@example.org", "password": pw, "roles": []string{"admin"}}, &u); resp.StatusCode/100 != 2 {
			t.Fatalf("create %s: %d %s", name, resp.StatusCode, body)
		}
		var k struct{ Key string }
		if resp, body := a.Do("POST", "/api/v1/apikeys", login(t, a, name, pw), map[string]any{"name": name + "-ci", "scope": "readwrite"}, &k); resp.StatusCode != 201 {
			t.Fatalf("key of %s: %d %s", name, resp.StatusCode, body)
		}
		return u, keyClient{t: t, a: a, name: name, key: k.Key}
	}
	alice, aliceKey := newUser("alice")
	_, carolKey := newUser("carol")
	mike, mikeKey := newUser("mike")

	// Groups: "team" (servers 0 and 1) managed by mike, "other" (server 2).
	var team, other struct{ ID string }
	aliceKey.ok("POST", "/api/v1/server-groups/create", map[string]any{"name": "team"}, &team)
	aliceKey.ok("POST", "/api/v1/server-groups/create", map[string]any{"name": "other"}, &other)
	for i, g := range []string{team.ID, team.ID, other.ID} {
		aliceKey.ok("POST", "/api/v1/server-groups/"+g+"/assign-server", map[string]any{"server_id": ids[i]}, nil)
	}
	if resp, body := a.Do("PUT", "/api/v1/users/"+mike.ID+"/roles", admin, map[string]any{"roles": []string{"manager"}}, nil); resp.StatusCode/100 != 2 {
		t.Fatalf("mike becomes a manager: %d %s", resp.StatusCode, body)
	}
	aliceKey.ok("POST", "/api/v1/server-groups/"+team.ID+"/assign-manager", map[string]any{"user_id": mike.ID}, nil)

	approvalsOf := func(k keyClient, kind, ref string) []e2eApproval {
		t.Helper()
		var l struct{ Approvals []e2eApproval }
		k.must(200, "GET", "/api/v1/approvals?status=pending", nil, &l)
		var out []e2eApproval
		for _, x := range l.Approvals {
			if x.Kind == kind && x.RefID == ref {
				out = append(out, x)
			}
		}
		return out
	}
	pendingOne := func(kind, ref string) e2eApproval {
		t.Helper()
		l := approvalsOf(aliceKey, kind, ref)
		if len(l) != 1 || l[0].RequestedBy != alice.ID {
			t.Fatalf("pending %s approvals of %s: %+v", kind, ref, l)
		}
		return l[0]
	}
	selfRefused := func(id string) {
		t.Helper()
		if code, body := aliceKey.do("POST", "/api/v1/approvals/"+id+"/approve", map[string]any{"comment": "mine"}, nil); code != 403 || !strings.Contains(body, "self_approval") {
			t.Fatalf("alice approves her own request %s with her key: %d %s", id, code, body)
		}
	}
	approve := func(id string) {
		t.Helper()
		carolKey.must(200, "POST", "/api/v1/approvals/"+id+"/approve", map[string]any{"comment": "checked"}, nil)
	}
	type rolloutDTO struct {
		ID         string  `json:"id"`
		Status     string  `json:"status"`
		ApprovalID *string `json:"approval_id"`
	}
	waitRollout := func(id, want string) {
		t.Helper()
		testutil.WaitFor(t, 90*time.Second, "rollout "+want, func() bool {
			var r rolloutDTO
			aliceKey.must(200, "GET", "/api/v1/rollouts/"+id, nil, &r)
			return r.Status == want
		})
	}

	// 1. A rollout that requires approval, on the other group's server.
	var ro rolloutDTO
	aliceKey.must(201, "POST", "/api/v1/rollouts", map[string]any{"action": "security-updates", "server_ids": []string{ids[2]}, "require_approval": true}, &ro)
	if ro.Status != "awaiting_approval" || ro.ApprovalID == nil {
		t.Fatalf("rollout: %+v", ro)
	}
	selfRefused(*ro.ApprovalID)
	if len(approvalsOf(mikeKey, "rollout", ro.ID)) != 0 {
		t.Fatal("mike sees an approval of a rollout outside his groups")
	}
	if code, _ := mikeKey.do("POST", "/api/v1/approvals/"+*ro.ApprovalID+"/approve", map[string]any{"comment": "x"}, nil); code != 404 {
		t.Fatalf("mike approves a rollout outside his groups: %d", code)
	}
	approve(*ro.ApprovalID)
	waitRollout(ro.ID, "completed")

	// 2. The approval policy: settings:manage only, audited; then every
	// rollout and "update all" wait for a second person.
	if code, _ := mikeKey.do("PUT", "/api/v1/settings/rollouts", map[string]any{"require_approval": false}, nil); code != 403 {
		t.Fatalf("a manager sets the approval policy: %d", code)
	}
	aliceKey.must(200, "PUT", "/api/v1/settings/rollouts", map[string]any{"require_approval": true}, nil)
	var pol struct {
		RequireApproval bool `json:"require_approval"`
	}
	carolKey.must(200, "GET", "/api/v1/settings/rollouts", nil, &pol)
	if !pol.RequireApproval {
		t.Fatal("policy not stored")
	}
	var ua struct {
		RolloutID  string `json:"rollout_id"`
		Status     string `json:"status"`
		ApprovalID string `json:"approval_id"`
	}
	aliceKey.must(202, "POST", "/api/v1/security/update-all", nil, &ua)
	if ua.RolloutID == "" || ua.Status != "awaiting_approval" || ua.ApprovalID == "" {
		t.Fatalf("update-all under the approval policy: %+v", ua)
	}
	selfRefused(ua.ApprovalID)
	var bulk struct{ Items []any }
	if code, body := aliceKey.do("GET", "/api/v1/security/update-all", nil, &bulk); code == 200 && len(bulk.Items) > 0 {
		t.Fatalf("update-all started jobs before the approval: %s", body)
	}
	approve(ua.ApprovalID)
	waitRollout(ua.RolloutID, "completed")
	var plain rolloutDTO
	aliceKey.must(201, "POST", "/api/v1/rollouts", map[string]any{"action": "security-updates", "server_ids": []string{ids[0]}}, &plain)
	if plain.Status != "awaiting_approval" {
		t.Fatalf("a rollout under the policy: %+v", plain)
	}
	aliceKey.ok("POST", "/api/v1/rollouts/"+plain.ID+"/abort", map[string]any{}, nil)
	aliceKey.must(200, "PUT", "/api/v1/settings/rollouts", map[string]any{"require_approval": false}, nil)
	var audit struct {
		Entries []struct {
			Action  string         `json:"action"`
			Actor   string         `json:"actor"`
			Details map[string]any `json:"details"`
		} `json:"items"`
	}
	a.Do("GET", "/api/v1/audit?action=settings.rollouts_updated", admin, nil, &audit)
	if len(audit.Entries) != 2 || audit.Entries[0].Actor != "alice" || audit.Entries[0].Details["was"] != true {
		t.Fatalf("audit of the policy: %+v", audit.Entries)
	}

	// 3. A schedule that requires approval, in mike's group.
	var sch struct {
		ID    string `json:"id"`
		Rules []struct {
			ID string `json:"id"`
		} `json:"rules"`
	}
	aliceKey.must(201, "POST", "/api/v1/server-groups/"+team.ID+"/schedules/define", map[string]any{"name": "nightly", "cron": "0 3 * * *",
		"requires_approval": true}, &sch)
	var rule struct{ ID string }
	aliceKey.must(201, "POST", "/api/v1/server-groups/"+team.ID+"/rules/define", map[string]any{"schedule_id": sch.ID, "type": "refresh"}, &rule)
	type runDTO struct {
		ID          string `json:"id"`
		Status      string `json:"status"`
		Reason      string `json:"reason"`
		Trigger     string `json:"trigger"`
		RequestedBy string `json:"requested_by"`
	}
	var run runDTO
	aliceKey.must(202, "POST", "/api/v1/schedules/"+sch.ID+"/trigger-now", nil, &run)
	if run.Status != "skipped" || !strings.Contains(run.Reason, "approval_pending") || run.RequestedBy != alice.ID {
		t.Fatalf("trigger-now of a schedule that requires approval: %+v", run)
	}
	schAp := pendingOne("schedule-run", sch.ID)
	selfRefused(schAp.ID)
	// mike manages the group: he sees the approval (and could decide it).
	if len(approvalsOf(mikeKey, "schedule-run", sch.ID)) != 1 {
		t.Fatal("the group's manager does not see the approval")
	}
	approve(schAp.ID)
	// mike's own trigger does not use alice's approval.
	mikeKey.must(202, "POST", "/api/v1/schedules/"+sch.ID+"/trigger-now", nil, &run)
	if run.Status != "skipped" || !strings.Contains(run.Reason, "approval_pending") {
		t.Fatalf("mike's run used alice's approval: %+v", run)
	}
	// alice's runs: the approved one goes, the next asks again.
	aliceKey.must(202, "POST", "/api/v1/schedules/"+sch.ID+"/trigger-now", nil, &run)
	if run.Status == "skipped" {
		t.Fatalf("alice's approved run: %+v", run)
	}
	approvedRun := run.ID
	aliceKey.must(202, "POST", "/api/v1/schedules/"+sch.ID+"/trigger-now", nil, &run)
	if run.Status != "skipped" {
		t.Fatalf("a second run on one approval: %+v", run)
	}
	testutil.WaitFor(t, 60*time.Second, "the approved schedule run succeeds", func() bool {
		var h struct{ Runs []runDTO }
		aliceKey.must(200, "GET", "/api/v1/schedules/"+sch.ID+"/history", nil, &h)
		for _, r := range h.Runs {
			if r.ID == approvedRun {
				return r.Status == "success"
			}
		}
		return false
	})
	// A single rule triggered now needs its own approval.
	aliceKey.must(202, "POST", "/api/v1/rules/"+rule.ID+"/trigger-now", nil, &run)
	if run.Status != "skipped" || !strings.Contains(run.Reason, "approval_pending") || run.Trigger != "rule" {
		t.Fatalf("a rule triggered now: %+v", run)
	}
	// Switching the requirement off: not for a manager; an admin may, audited.
	if code, body := mikeKey.do("PATCH", "/api/v1/schedules/"+sch.ID+"/update", map[string]any{"requires_approval": false}, nil); code != 403 || !strings.Contains(body, "admin_required") {
		t.Fatalf("a manager switches requires_approval off: %d %s", code, body)
	}
	aliceKey.must(200, "PATCH", "/api/v1/schedules/"+sch.ID+"/update", map[string]any{"requires_approval": false}, nil)
	a.Do("GET", "/api/v1/audit?action=schedule.update", admin, nil, &audit)
	if len(audit.Entries) == 0 || audit.Entries[0].Actor != "alice" || audit.Entries[0].Details["requires_approval"] != false {
		t.Fatalf("audit of switching requires_approval off: %+v", audit.Entries)
	}

	// A schedule of the other group: mike neither sees nor decides it.
	var otherSch struct{ ID string }
	aliceKey.must(201, "POST", "/api/v1/server-groups/"+other.ID+"/schedules/define", map[string]any{"name": "other", "cron": "0 3 * * *",
		"requires_approval": true}, &otherSch)
	aliceKey.must(201, "POST", "/api/v1/server-groups/"+other.ID+"/rules/define", map[string]any{"schedule_id": otherSch.ID, "type": "refresh"}, nil)
	aliceKey.must(202, "POST", "/api/v1/schedules/"+otherSch.ID+"/trigger-now", nil, &run)
	otherAp := pendingOne("schedule-run", otherSch.ID)
	if len(approvalsOf(mikeKey, "schedule-run", otherSch.ID)) != 0 {
		t.Fatal("mike sees the approval of another group's schedule")
	}
	if code, _ := mikeKey.do("POST", "/api/v1/approvals/"+otherAp.ID+"/approve", map[string]any{"comment": "x"}, nil); code != 404 {
		t.Fatalf("mike approves another group's schedule: %d", code)
	}

	// 4. Cron runs are requested in the name of the schedule's last
	// editor (alice): she cannot approve them; once carol has, the next
	// slot runs, in alice's name.
	var cron struct{ ID string }
	aliceKey.must(201, "POST", "/api/v1/server-groups/"+team.ID+"/schedules/define", map[string]any{"name": "every second",
		"cron": "* * * * * *", "requires_approval": true}, &cron)
	aliceKey.must(201, "POST", "/api/v1/server-groups/"+team.ID+"/rules/define", map[string]any{"schedule_id": cron.ID, "type": "health-check"}, nil)
	var cronAp e2eApproval
	testutil.WaitFor(t, 30*time.Second, "a cron run asks for approval in alice's name", func() bool {
		l := approvalsOf(aliceKey, "schedule-run", cron.ID)
		if len(l) == 1 {
			cronAp = l[0]
		}
		return len(l) == 1
	})
	if cronAp.RequestedBy != alice.ID {
		t.Fatalf("cron approval requested by %q, want the last editor alice %q", cronAp.RequestedBy, alice.ID)
	}
	selfRefused(cronAp.ID)
	approve(cronAp.ID)
	testutil.WaitFor(t, 60*time.Second, "the next cron slot runs after the approval, in alice's name", func() bool {
		var h struct{ Runs []runDTO }
		aliceKey.must(200, "GET", "/api/v1/schedules/"+cron.ID+"/history?limit=200", nil, &h)
		for _, r := range h.Runs {
			if r.Trigger == "cron" && r.Status == "success" {
				if r.RequestedBy != alice.ID {
					t.Fatalf("cron run requested by %q", r.RequestedBy)
				}
				return true
			}
		}
		return false
	})
	aliceKey.must(200, "POST", "/api/v1/schedules/"+cron.ID+"/disable", nil, nil)

	// 5. A custom action that requires approval: bound to the servers.
	var ca struct{ ID string }
	aliceKey.must(201, "POST", "/api/v1/custom-actions", map[string]any{"name": "uptime check", "commands": []string{"echo up"},
		"requires_approval": true}, &ca)
	runOn := func(k keyClient, server string) (int, string) {
		return k.do("POST", "/api/v1/custom-actions/"+ca.ID+"/run", map[string]any{"server_ids": []string{server}}, nil)
	}
	if code, body := runOn(aliceKey, ids[0]); code != 409 || !strings.Contains(body, "approval_pending") {
		t.Fatalf("custom action run without approval: %d %s", code, body)
	}
	caAp := pendingOne("custom-action-run", ca.ID)
	selfRefused(caAp.ID)
	approve(caAp.ID)
	// Approved for server 0: not for server 1, not for mike.
	if code, body := runOn(aliceKey, ids[1]); code != 409 || !strings.Contains(body, "approval_pending") {
		t.Fatalf("the approval for server 0 ran on server 1: %d %s", code, body)
	}
	if code, body := runOn(mikeKey, ids[0]); code != 409 || !strings.Contains(body, "approval_pending") {
		t.Fatalf("mike used alice's approval: %d %s", code, body)
	}
	var started struct {
		Items []struct {
			JobID string `json:"job_id"`
		} `json:"items"`
	}
	aliceKey.must(202, "POST", "/api/v1/custom-actions/"+ca.ID+"/run", map[string]any{"server_ids": []string{ids[0]}}, &started)
	if len(started.Items) != 1 || started.Items[0].JobID == "" {
		t.Fatalf("approved custom action run: %+v", started)
	}
	waitJob(t, a, admin, started.Items[0].JobID, "success")
	if code, _ := runOn(aliceKey, ids[0]); code != 409 {
		t.Fatalf("a second run on one approval: %d", code)
	}
	// A custom-action approval on the other group's server is not mike's.
	runOn(aliceKey, ids[2])
	var otherCA e2eApproval
	for _, x := range approvalsOf(aliceKey, "custom-action-run", ca.ID) {
		if strings.Contains(string(x.Payload), ids[2]) {
			otherCA = x
		}
	}
	if otherCA.ID == "" {
		t.Fatal("no approval requested for the run on server 2")
	}
	for _, x := range approvalsOf(mikeKey, "custom-action-run", ca.ID) {
		if x.ID == otherCA.ID {
			t.Fatal("mike sees an approval of a run outside his groups")
		}
	}
}

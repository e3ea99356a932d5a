package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/lcmproject/lcm/internal/approvals"
	"github.com/lcmproject/lcm/internal/mcp"
	"github.com/lcmproject/lcm/internal/rollout"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pquerna/otp/totp"

	"github.com/lcmproject/lcm/internal/alerts"
	"github.com/lcmproject/lcm/internal/auth"
	"github.com/lcmproject/lcm/internal/auth/mail"
	"github.com/lcmproject/lcm/internal/auth/password"
	"github.com/lcmproject/lcm/internal/automation"
	"github.com/lcmproject/lcm/internal/backup"
	"github.com/lcmproject/lcm/internal/bus"
	"github.com/lcmproject/lcm/internal/containers"
	"github.com/lcmproject/lcm/internal/containersvc"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/fleet"
	"github.com/lcmproject/lcm/internal/fleetsim"
	"github.com/lcmproject/lcm/internal/inventory"
	"github.com/lcmproject/lcm/internal/linuxusers"
	"github.com/lcmproject/lcm/internal/portal"
	"github.com/lcmproject/lcm/internal/recordsvc"
	"github.com/lcmproject/lcm/internal/registrysvc"
	"github.com/lcmproject/lcm/internal/schedule"
	"github.com/lcmproject/lcm/internal/speechsvc"
	"github.com/lcmproject/lcm/internal/status"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/plane"
)

// notAudited is the allowlist of write operations that leave no entry of
// their own. Every entry needs its reason; the production exemptions
// (auditExempt) must appear here too.
var notAudited = map[string]string{
	// Transcribes the uploaded audio and answers the text: nothing is
	// stored or changed (auditExempt).
	"POST /v1/speech/stt": "changes nothing",
	// Render sudoers lines; nothing is stored (auditExempt, in the
	// router's and the document's spelling).
	"POST /api/v1/privilege-profiles/preview":  "changes nothing",
	"POST /api/v1/profile-blocks/:id/preview":  "changes nothing",
	"POST /api/v1/profile-blocks/{id}/preview": "changes nothing",
	// LCM installs no updates itself: always 409 (auditExempt).
	"POST /api/v1/system/self-update": "changes nothing",
}

// backupPass is the backup passphrase of the audit walk.
const backupPass = "audit-Walk-backup-42"

// fullEnv is the real router (New, with the real authenticate middleware
// and every area's service) over a real control plane: store, embedded
// NATS, jobs and fleet services with an in-process worker, simulated SSH
// servers (fleetsim) and an SMTP sink for the mailed links.
type fullEnv struct {
	*harness
	p     *plane.Plane
	fleet *fleetsim.Fleet
	next  int // next unused fleetsim instance
}

func newFullEnv(t *testing.T, dbURL string) *fullEnv {
	t.Helper()
	ctx := context.Background()
	p := plane.Start(t, plane.Options{DatabaseURL: dbURL})
	hasher, err := password.NewHasher(cheapParams, 0)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := p.Store.FindUserByLogin(ctx, "admin")
	if err != nil {
		t.Fatal(err)
	}
	hash, err := hasher.Hash(ctx, adminPW)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Store.UpdateUser(ctx, admin.ID, storeUpdateHash(hash)); err != nil {
		t.Fatal(err)
	}
	cas := func(name string) *bus.CAS {
		c, err := p.Bus.NewCAS(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	ep, err := auth.NewEpoch(ctx, strings.Repeat("s", 48), cas(bus.BucketAuth), true, nil)
	if err != nil {
		t.Fatal(err)
	}
	sink := testutil.StartSMTPSink(t)
	clock := &testClock{}
	svc := auth.New(auth.Options{Store: p.Store, Hasher: hasher, Lockout: cas(bus.BucketLockout), RateLimit: cas(bus.BucketRateLimit),
		Epoch: ep, Mail: mail.New(mail.Config{Host: "127.0.0.1", Port: sink.Port, From: "lcm@example.test"}),
		Log: quietLog, No2FA: true, ListenerURL: "https://127.0.0.1:9310", Now: clock.now})
	if err := svc.SeedSettings(ctx, auth.SecuritySettings{APIKeyRateLimitPerMinute: 1000, AccessTokenTTLMinutes: 60}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		svc.Close(c)
	})
	load, save := schedule.SettingsStore(p.Store, quietLog)
	count := func(context.Context) (int, error) { return 0, nil }
	noop := func(context.Context) error { return nil }
	sch := schedule.New(schedule.Options{Log: quietLog, Overrides: load, SaveOverrides: save,
		Tasks: schedule.Registry(schedule.Hooks{AggregateStorage: count, RecomputeStatus: count, RefreshAll: noop, StorageSample: noop,
			Backup: noop, BackupCatchUp: noop})})
	backups := backup.New(backup.Options{Store: p.Store, DataDir: p.DataDir, DatabaseURL: dbURL, Log: quietLog,
		Passphrase: func() ([]byte, error) { return []byte(backupPass), nil }})
	backups.SetSchedule(backup.TaskSchedule(sch, load))
	alertsSvc := alerts.New(p.Store, alerts.Options{Log: quietLog})
	t.Cleanup(alertsSvc.Close)
	agentCreds, err := p.Bus.AgentCredentials(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p.Fleet.SetAgents(fleet.AgentConfig{Credentials: agentCreds, Bus: p.Bus, Port: 9320, Fingerprint: strings.Repeat("ab", 32)})
	srv := New(Deps{Store: p.Store, Bus: p.Bus, Dev: true, Log: quietLog,
		ClientAddr: func(r *http.Request) netip.Addr {
			return svc.ClientAddr(r.Context(), r.RemoteAddr, r.Header.Values("X-Forwarded-For"))
		},
		Allowed: func(ip netip.Addr) bool { return svc.Allowed(context.Background(), ip) },
		Services: Services{Auth: svc, Records: recordsvc.New(p.Store), Portal: portal.New(p.Store),
			Speech: speechsvc.New(p.Store, "en-US"), Fleet: p.Fleet, Jobs: p.Jobs,
			Inventory: inventory.New(p.Store, inventory.Options{Log: quietLog}), Status: status.New(p.Store, quietLog), Schedules: sch,
			MCP:     mcp.NewListener(p.Store, "127.0.0.1", testutil.FreePort(t), http.NotFoundHandler(), quietLog),
			Backups: backups, Alerts: alertsSvc, Registries: registrysvc.New(p.Store, registrysvc.Options{Log: quietLog}),
			Vulns:      startVulns(t, p.Store, p.Bus, p.Fleet),
			Automation: automation.New(automation.Options{Store: p.Store, Jobs: p.Jobs, Log: quietLog})}})
	lu := linuxusers.New(p.Store, p.Jobs, quietLog)
	if err := lu.SeedBuiltins(ctx); err != nil {
		t.Fatal(err)
	}
	srv.deps.Services.LinuxUsers = lu
	srv.deps.Services.Advisories, _ = startAdvisories(t, p.Store)
	srv.deps.Services.Updates = testUpdates(t, p.Store)
	srv.deps.Services.Approvals = approvals.New(p.Store, quietLog)
	srv.deps.Services.Rollouts = rollout.New(p.Store, p.Jobs, rollout.Options{Log: quietLog, Approvals: srv.deps.Services.Approvals})
	rctx, rcancel := context.WithCancel(context.Background())
	rdone := make(chan struct{})
	go func() { defer close(rdone); _ = srv.deps.Services.Rollouts.Run(rctx) }()
	t.Cleanup(func() { rcancel(); <-rdone })
	ctr := containersvc.New(p.Store, p.Jobs, quietLog)
	ctr.RegisterJobs()
	ctr.SetUpdateChecker(currentImages{})
	srv.deps.Services.Containers = ctr
	// apt-get takes long enough to abort a job while it runs.
	table := fleetsim.DefaultTable()
	table.HandleFunc(func(cmd string) bool { return strings.Contains(cmd, "apt-get") }, func(ctx context.Context, r *fleetsim.Request) int {
		select {
		case <-time.After(20 * time.Second):
		case <-ctx.Done():
			return 137
		}
		_, _ = io.WriteString(r.Stdout, "done\n")
		return 0
	})
	f, err := fleetsim.Start(fleetsim.Config{N: 56, Responders: table})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return &fullEnv{harness: &harness{t: t, st: p.Store, bus: p.Bus, svc: svc, srv: srv, clock: clock, sink: sink}, p: p, fleet: f}
}

// server stores a joined server on its own simulated host (each job route
// gets its own server, so no job waits for another).
func (e *fullEnv) server(t *testing.T) domain.Server {
	t.Helper()
	inst := e.fleet.Instances[e.next]
	e.next++
	return (&fleetHTTP{p: e.p}).simServer(t, inst, fmt.Sprintf("audit-%02d", e.next))
}

// requestRollout has userID request a rollout on a new server that needs
// approval, and returns the approval's id.
func (e *fullEnv) requestRollout(t *testing.T, userID string) string {
	t.Helper()
	s := e.server(t)
	p := &domain.Principal{UserID: userID, Username: "requester", Roles: []string{domain.RoleAdmin}, Permissions: map[string]bool{domain.PermServersWrite: true}}
	ro, err := e.srv.deps.Services.Rollouts.Create(context.Background(), p, rollout.Request{Action: rollout.ActionSecurityUpdates,
		ServerIDs: []string{s.ID}, RequireApproval: true})
	if err != nil || ro.ApprovalID == "" {
		t.Fatalf("request rollout: %+v %v", ro, err)
	}
	return ro.ApprovalID
}

// must does a setup request (not itself checked for audit) expecting want.
func (e *fullEnv) must(want int, r req) resp {
	e.t.Helper()
	out := e.do(r)
	if out.code != want {
		e.t.Fatalf("setup %s %s: %d %s, want %d", r.method, r.path, out.code, out.body, want)
	}
	return out
}

func (e *fullEnv) jsonField(r resp, name string) string {
	e.t.Helper()
	var m map[string]any
	r.json(e.t, &m)
	v, _ := m[name].(string)
	if v == "" {
		e.t.Fatalf("no %q in %s", name, r.body)
	}
	return v
}

// mailToken waits for the n-th mail to addr and returns its link's token.
func (e *fullEnv) mailToken(addr string, n int) string {
	e.t.Helper()
	testutil.WaitFor(e.t, 10*time.Second, "mail to "+addr, func() bool { return e.sink.Count(addr) >= n })
	var last string
	for _, m := range e.sink.Messages() {
		if strings.Contains(strings.Join(m.To, ","), addr) {
			last = m.Text()
		}
	}
	u, err := url.Parse(linkRe.FindString(last))
	if err != nil || u.Query().Get("token") == "" {
		e.t.Fatalf("no link in mail to %s:\n%s", addr, last)
	}
	return u.Query().Get("token")
}

// step is one audited write: op names the OpenAPI operation ("POST
// /api/v1/servers/{id}/reboot"), call builds and sends the request and
// returns the response and the entry it must leave: the target and the
// acting user (with the API key when one was used).
type step struct {
	op   string
	call func() (resp, expect)
}

type expect struct {
	target  string
	actorID string // "" for an anonymous caller
	keyID   string
}

// TestEveryWriteRouteIsAudited walks every write operation of the OpenAPI
// document (docs/audit.md), on SQLite and PostgreSQL.
func TestEveryWriteRouteIsAudited(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) { testEveryWriteRouteIsAudited(t, db.URL) })
	}
}

func testEveryWriteRouteIsAudited(t *testing.T, dbURL string) {
	e := newFullEnv(t, dbURL)
	ctx := context.Background()
	adminUser, err := e.st.FindUserByLogin(ctx, "admin")
	if err != nil {
		t.Fatal(err)
	}
	var adm, keyTok, keyID string
	asAdmin := expect{actorID: adminUser.ID}
	viaKey := func(target string) expect { return expect{target: target, actorID: adminUser.ID, keyID: keyID} }
	tgt := func(x expect, target string) expect { x.target = target; return x }
	post := func(tok, path string, body any) resp {
		return e.do(req{method: http.MethodPost, path: path, token: tok, body: body})
	}
	// Users used across steps.
	var carolID, daveID, ivyID, ivyTok string
	var vulnServer string
	var allowlistID string
	var challenge, secret string
	code := func() string {
		e.clock.off += 30 * time.Second // each TOTP step is accepted once
		c, err := totp.GenerateCode(secret, e.clock.now())
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	// Records.
	var projectID, zoneID, setID, templateID, syncID, sourceID string
	var groupID, annID, backupName, agentServerID string
	var rolloutID string
	var channelID, ruleID string
	var registryID string
	var autoGroup, schID, autoRuleID, caID, maintSrv string
	var profID, cloneID, blockID string
	var luID, luKeyID, luToken, luGroupID string
	// luServer is a fresh simulated server on which the catalogue user is
	// assigned (and, with provisioned, has an account), for the job routes
	// of Linux users on a server.
	luServer := func(provisioned bool) domain.Server {
		s := e.server(t)
		if _, err := e.st.UpsertLinuxUserAssignment(ctx, domain.LinuxUserAssignment{UserID: luID, TargetType: domain.TargetServer, TargetID: s.ID}); err != nil {
			t.Fatal(err)
		}
		if provisioned {
			if err := e.st.SetLinuxUserProvision(ctx, domain.LinuxUserProvision{UserID: luID, ServerID: s.ID, Username: "auditlu", State: domain.ProvisionProvisioned}); err != nil {
				t.Fatal(err)
			}
		}
		return s
	}
	luJob := func(op, suffix string, provisioned bool, body func(domain.Server) any) step {
		return step{op, func() (resp, expect) {
			s := luServer(provisioned)
			r := post(keyTok, "/api/v1/servers/"+s.ID+suffix, body(s))
			return r, viaKey("server:" + s.ID + " job=" + e.jsonField(r, "job_id"))
		}}
	}
	byName := func(domain.Server) any { return map[string]any{"username": "auditlu"} }
	var srv domain.Server
	jobStep := func(op, suffix string, body any) step {
		return step{op, func() (resp, expect) {
			s := e.server(t)
			r := post(keyTok, "/api/v1/servers/"+s.ID+suffix, body)
			if r.code == http.StatusAccepted {
				j := e.jsonField(r, "job_id")
				return r, viaKey("server:" + s.ID + " job=" + j)
			}
			return r, viaKey("server:" + s.ID)
		}}
	}
	lb := map[string]any{"zoneId": "", "name": "lb", "type": "A"}

	steps := []step{
		// Identity: the auth service's own events.
		{"POST /api/v1/auth/login", func() (resp, expect) {
			r := post("", "/api/v1/auth/login", map[string]string{"username": "admin", "password": adminPW})
			adm = e.jsonField(r, "token")
			return r, tgt(asAdmin, "admin")
		}},
		{"POST /api/v1/apikeys", func() (resp, expect) {
			r := post(adm, "/api/v1/apikeys", map[string]any{"name": "audit"})
			keyID, keyTok = e.jsonField(r, "id"), e.jsonField(r, "key")
			return r, tgt(asAdmin, keyID)
		}},
		{"PATCH /api/v1/settings/security", func() (resp, expect) {
			return e.do(req{method: http.MethodPatch, path: "/api/v1/settings/security", token: adm, body: map[string]any{"public_base_url": "https://lcm.example.org"}}),
				tgt(asAdmin, "settings:security")
		}},
		{"POST /api/v1/users", func() (resp, expect) {
			r := post(adm, "/api/v1/users", map[string]any{"username": "carol", "password": "Quiet-Lantern-83q", "roles": []string{"manager"}, "email": "carol@example.test"})
			carolID = e.jsonField(r, "id")
			return r, tgt(asAdmin, "carol")
		}},
		{"PATCH /api/v1/users/{id}/profile", func() (resp, expect) {
			return e.do(req{method: http.MethodPatch, path: "/api/v1/users/" + carolID + "/profile", token: adm, body: map[string]any{"display_name": "Carol C"}}),
				tgt(asAdmin, "carol")
		}},
		{"POST /api/v1/users/{id}/reset-password", func() (resp, expect) {
			return post(adm, "/api/v1/users/"+carolID+"/reset-password", map[string]any{"password": "Amber-Valley-29x"}), tgt(asAdmin, "carol")
		}},
		{"PUT /api/v1/users/{id}/roles", func() (resp, expect) {
			return e.do(req{method: http.MethodPut, path: "/api/v1/users/" + carolID + "/roles", token: adm, body: map[string]any{"roles": []string{}}}),
				tgt(asAdmin, "carol")
		}},
		{"PATCH /api/v1/users/{id}/active", func() (resp, expect) {
			return e.do(req{method: http.MethodPatch, path: "/api/v1/users/" + carolID + "/active", token: adm, body: map[string]any{"active": false}}),
				tgt(asAdmin, "carol")
		}},
		{"POST /api/v1/users/activation-links/generate", func() (resp, expect) {
			ivyID = e.jsonField(e.must(201, req{method: http.MethodPost, path: "/api/v1/users", token: adm,
				body: map[string]any{"username": "ivy", "email": "ivy@example.test", "roles": []string{}}}), "id")
			e.mailToken("ivy@example.test", 1) // the invitation
			return post(adm, "/api/v1/users/activation-links/generate", map[string]any{"user_id": ivyID}), tgt(asAdmin, "ivy")
		}},
		{"POST /api/v1/users/activation-links/consume", func() (resp, expect) {
			tok := e.mailToken("ivy@example.test", 2)
			return post("", "/api/v1/users/activation-links/consume", map[string]string{"token": tok, "password": "Sunlit-Meadow-47k"}),
				expect{target: "ivy", actorID: ivyID}
		}},
		{"POST /api/v1/auth/password-reset", func() (resp, expect) {
			// Anonymous: the entry names the account, no actor.
			return post("", "/api/v1/auth/password-reset", map[string]string{"username_or_email": "ivy"}), expect{target: "ivy"}
		}},
		{"POST /api/v1/auth/password-reset/confirm", func() (resp, expect) {
			tok := e.mailToken("ivy@example.test", 3)
			return post("", "/api/v1/auth/password-reset/confirm", map[string]string{"token": tok, "password": "Copper-Harbor-52m"}),
				expect{target: "ivy", actorID: ivyID}
		}},
		{"POST /api/v1/profile/update", func() (resp, expect) {
			ivyTok = e.login("ivy", "Copper-Harbor-52m")
			return post(ivyTok, "/api/v1/profile/update", map[string]any{"displayName": "Ivy", "email": "ivy@example.test"}),
				expect{target: "ivy", actorID: ivyID}
		}},
		{"POST /api/v1/auth/2fa/setup", func() (resp, expect) {
			r := post(ivyTok, "/api/v1/auth/2fa/setup", nil)
			secret = e.jsonField(r, "secret")
			return r, expect{target: "ivy", actorID: ivyID}
		}},
		{"POST /api/v1/auth/2fa/enable", func() (resp, expect) {
			return post(ivyTok, "/api/v1/auth/2fa/enable", map[string]string{"code": code()}), expect{target: "ivy", actorID: ivyID}
		}},
		{"POST /api/v1/auth/login/2fa", func() (resp, expect) {
			challenge = e.jsonField(e.must(200, req{method: http.MethodPost, path: "/api/v1/auth/login",
				body: map[string]string{"username": "ivy", "password": "Copper-Harbor-52m"}}), "challenge")
			r := post("", "/api/v1/auth/login/2fa", map[string]string{"challenge": challenge, "code": code()})
			ivyTok = e.jsonField(r, "token")
			return r, expect{target: "ivy", actorID: ivyID}
		}},
		{"POST /api/v1/auth/2fa/recovery-codes", func() (resp, expect) {
			return post(ivyTok, "/api/v1/auth/2fa/recovery-codes", map[string]string{"code": code()}), expect{target: "ivy", actorID: ivyID}
		}},
		{"POST /api/v1/auth/2fa/disable", func() (resp, expect) {
			return post(ivyTok, "/api/v1/auth/2fa/disable", map[string]string{"code": code()}), expect{target: "ivy", actorID: ivyID}
		}},
		{"POST /api/v1/auth/logout", func() (resp, expect) {
			return post(ivyTok, "/api/v1/auth/logout", nil), expect{target: "ivy", actorID: ivyID}
		}},
		{"POST /api/v1/users/{id}/2fa/reset", func() (resp, expect) {
			// Ivy turns 2FA on again; an admin resets it (lost phone).
			ivyTok = e.login("ivy", "Copper-Harbor-52m")
			secret = e.jsonField(e.must(200, req{method: http.MethodPost, path: "/api/v1/auth/2fa/setup", token: ivyTok}), "secret")
			e.must(200, req{method: http.MethodPost, path: "/api/v1/auth/2fa/enable", token: ivyTok, body: map[string]string{"code": code()}})
			return post(adm, "/api/v1/users/"+ivyID+"/2fa/reset", nil), tgt(asAdmin, "ivy")
		}},
		{"DELETE /api/v1/users/{id}", func() (resp, expect) {
			return e.do(req{method: http.MethodDelete, path: "/api/v1/users/" + carolID, token: adm}), tgt(asAdmin, "carol")
		}},

		// Schedules and speech settings.
		{"PUT /api/v1/settings/schedules", func() (resp, expect) {
			return e.do(req{method: http.MethodPut, path: "/api/v1/settings/schedules", token: adm, body: map[string]any{"refresh_all": map[string]any{"spec": "0 3 * * *"}}}),
				tgt(asAdmin, "settings:schedules")
		}},
		{"PUT /api/v1/settings/rollouts", func() (resp, expect) {
			return e.do(req{method: http.MethodPut, path: "/api/v1/settings/rollouts", token: keyTok, body: map[string]any{"require_approval": false}}),
				viaKey("settings:rollouts")
		}},
		{"PUT /api/v1/settings/mcp", func() (resp, expect) {
			return e.do(req{method: http.MethodPut, path: "/api/v1/settings/mcp", token: keyTok, body: map[string]any{"enabled": false}}),
				viaKey("settings:mcp")
		}},
		{"PUT /api/v1/settings/speech", func() (resp, expect) {
			return e.do(req{method: http.MethodPut, path: "/api/v1/settings/speech", token: keyTok, body: map[string]any{"provider": ""}}),
				viaKey("settings:speech")
		}},

		// Backups: make one, restore it from the list and as an upload
		// (staged; no process to end here), change the settings, delete it.
		{"POST /api/v1/system/backups/trigger-now", func() (resp, expect) {
			r := post(adm, "/api/v1/system/backups/trigger-now", nil)
			backupName = e.jsonField(r, "name")
			return r, tgt(asAdmin, "backup:"+backupName)
		}},
		{"POST /api/v1/system/backups/{name}/restore", func() (resp, expect) {
			return post(adm, "/api/v1/system/backups/"+backupName+"/restore", nil), tgt(asAdmin, "backup:"+backupName)
		}},
		{"POST /api/v1/system/backups/restore-upload", func() (resp, expect) {
			dl := e.do(req{method: http.MethodGet, path: "/api/v1/system/backups/" + backupName + "/download", token: adm})
			return e.do(req{method: http.MethodPost, path: "/api/v1/system/backups/restore-upload", token: adm, body: dl.body,
				headers: map[string]string{"Content-Type": "application/octet-stream"}}), tgt(asAdmin, "backup:upload")
		}},
		{"PATCH /api/v1/system/backups/settings", func() (resp, expect) {
			return e.do(req{method: http.MethodPatch, path: "/api/v1/system/backups/settings", token: adm,
				body: map[string]any{"retention_count": 3, "time_of_day": "04:30"}}), tgt(asAdmin, "settings:backups")
		}},
		{"DELETE /api/v1/system/backups/{name}", func() (resp, expect) {
			return e.do(req{method: http.MethodDelete, path: "/api/v1/system/backups/" + backupName, token: adm}), tgt(asAdmin, "backup:"+backupName)
		}},

		// Update check against the test release feed (issue 21).
		{"POST /api/v1/system/update-check", func() (resp, expect) {
			return post(adm, "/api/v1/system/update-check", nil), tgt(asAdmin, "system:update")
		}},

		// Alerts and notifications (issue 17).
		{"POST /api/v1/notification-channels", func() (resp, expect) {
			r := post(adm, "/api/v1/notification-channels", map[string]any{"name": "ops", "type": "smtp", "host": "127.0.0.1",
				"port": e.sink.Port, "tls": "none", "to": []string{"ops@example.test"}})
			channelID = e.jsonField(r, "id")
			return r, tgt(asAdmin, "notification_channel:"+channelID)
		}},
		{"PATCH /api/v1/notification-channels/{id}", func() (resp, expect) {
			return e.do(req{method: http.MethodPatch, path: "/api/v1/notification-channels/" + channelID, token: keyTok, body: map[string]any{"from": "lcm@example.test"}}),
				viaKey("notification_channel:" + channelID)
		}},
		{"POST /api/v1/notification-channels/{id}/test", func() (resp, expect) {
			return post(adm, "/api/v1/notification-channels/"+channelID+"/test", nil), tgt(asAdmin, "notification_channel:"+channelID)
		}},
		{"POST /api/v1/alert-rules", func() (resp, expect) {
			r := post(adm, "/api/v1/alert-rules", map[string]any{"name": "down", "type": "server_unreachable", "allServers": true, "channelIds": []string{channelID}})
			ruleID = e.jsonField(r, "id")
			return r, tgt(asAdmin, "alert_rule:"+ruleID)
		}},
		{"PATCH /api/v1/alert-rules/{id}", func() (resp, expect) {
			return e.do(req{method: http.MethodPatch, path: "/api/v1/alert-rules/" + ruleID, token: adm, body: map[string]any{"cooldownMinutes": 60}}),
				tgt(asAdmin, "alert_rule:"+ruleID)
		}},
		{"POST /api/v1/alerts/evaluate", func() (resp, expect) {
			return post(adm, "/api/v1/alerts/evaluate", nil), tgt(asAdmin, "alerts:evaluate")
		}},
		{"DELETE /api/v1/alert-rules/{id}", func() (resp, expect) {
			return e.do(req{method: http.MethodDelete, path: "/api/v1/alert-rules/" + ruleID, token: adm}), tgt(asAdmin, "alert_rule:"+ruleID)
		}},
		{"DELETE /api/v1/notification-channels/{id}", func() (resp, expect) {
			return e.do(req{method: http.MethodDelete, path: "/api/v1/notification-channels/" + channelID, token: adm}), tgt(asAdmin, "notification_channel:"+channelID)
		}},
		// Container registries (issue 15): the test asks a port nobody
		// listens on, which is a result (ok false), not a failure.
		{"POST /api/v1/settings/registries", func() (resp, expect) {
			r := post(adm, "/api/v1/settings/registries", map[string]any{"host": "127.0.0.1:1", "username": "ci", "password": "Registry-Secret-77", "plain_http": true})
			registryID = e.jsonField(r, "id")
			return r, tgt(asAdmin, "registry:"+registryID)
		}},
		{"PUT /api/v1/settings/registries/{id}", func() (resp, expect) {
			return e.do(req{method: http.MethodPut, path: "/api/v1/settings/registries/" + registryID, token: adm, body: map[string]any{"password": "Registry-Secret-78"}}),
				tgt(asAdmin, "registry:"+registryID)
		}},
		{"POST /api/v1/settings/registries/{id}/test", func() (resp, expect) {
			return post(adm, "/api/v1/settings/registries/"+registryID+"/test", nil), tgt(asAdmin, "registry:"+registryID)
		}},
		{"DELETE /api/v1/settings/registries/{id}", func() (resp, expect) {
			return e.do(req{method: http.MethodDelete, path: "/api/v1/settings/registries/" + registryID, token: adm}), tgt(asAdmin, "registry:"+registryID)
		}},
		{"PUT /api/v1/settings/mail-channel", func() (resp, expect) {
			return e.do(req{method: http.MethodPut, path: "/api/v1/settings/mail-channel", token: adm, body: map[string]any{"host": "127.0.0.1",
				"port": e.sink.Port, "tls": "none", "from": "lcm@example.test"}}), tgt(asAdmin, "settings:mail-channel")
		}},
		{"POST /api/v1/settings/global/test-mail", func() (resp, expect) {
			return post(adm, "/api/v1/settings/global/test-mail", map[string]any{"to": "test@example.test"}), tgt(asAdmin, "settings:mail-channel")
		}},

		// Portal messages.
		{"POST /api/v1/admin/announcements/create", func() (resp, expect) {
			r := post(adm, "/api/v1/admin/announcements/create", map[string]any{"title": "Maintenance", "body": "Sunday"})
			annID = e.jsonField(r, "id")
			return r, tgt(asAdmin, "announcement:"+annID)
		}},
		{"POST /api/v1/admin/announcements/{announcementId}/update", func() (resp, expect) {
			return post(adm, "/api/v1/admin/announcements/"+annID+"/update", map[string]any{"title": "Maintenance!"}), tgt(asAdmin, "announcement:"+annID)
		}},
		{"POST /api/v1/admin/announcements/{announcementId}/delete", func() (resp, expect) {
			return post(adm, "/api/v1/admin/announcements/"+annID+"/delete", nil), tgt(asAdmin, "announcement:"+annID)
		}},

		// Records.
		{"POST /api/v1/projects/create", func() (resp, expect) {
			daveID = e.jsonField(e.must(201, req{method: http.MethodPost, path: "/api/v1/users", token: adm,
				body: map[string]any{"username": "dave", "password": "Quiet-Lantern-83q", "roles": []string{"manager"}}}), "id")
			r := post(adm, "/api/v1/projects/create", map[string]any{"name": "audit"})
			projectID = e.jsonField(r, "id")
			return r, tgt(asAdmin, "project:"+projectID)
		}},
		{"POST /api/v1/projects/{projectId}/update", func() (resp, expect) {
			return post(adm, "/api/v1/projects/"+projectID+"/update", map[string]any{"name": "audit-2"}), tgt(asAdmin, "project:"+projectID)
		}},
		{"POST /api/v1/projects/{projectId}/members/add", func() (resp, expect) {
			return post(adm, "/api/v1/projects/"+projectID+"/members/add", map[string]any{"userId": daveID, "role": "editor"}), tgt(asAdmin, "project:"+projectID)
		}},
		{"POST /api/v1/projects/{projectId}/members/{userId}/update", func() (resp, expect) {
			return post(adm, "/api/v1/projects/"+projectID+"/members/"+daveID+"/update", map[string]any{"role": "viewer"}), tgt(asAdmin, "project:"+projectID)
		}},
		{"POST /api/v1/projects/{projectId}/zones/create", func() (resp, expect) {
			r := post(keyTok, "/api/v1/projects/"+projectID+"/zones/create", map[string]any{"name": "audit.example", "mname": "ns1.lcm-dns.example.net.", "rname": "hostmaster@audit.example"})
			zoneID = e.jsonField(r, "id")
			lb["zoneId"] = zoneID
			return r, viaKey("zone:" + zoneID)
		}},
		{"POST /api/v1/zones/{zoneId}/update", func() (resp, expect) {
			return post(adm, "/api/v1/zones/"+zoneID+"/update", map[string]any{"defaultTtl": 600}), tgt(asAdmin, "zone:"+zoneID)
		}},
		{"POST /api/v1/zones/{zoneId}/record-sets/create", func() (resp, expect) {
			r := post(adm, "/api/v1/zones/"+zoneID+"/record-sets/create", map[string]any{"name": "www", "type": "A", "ttl": 60, "records": []string{"192.0.2.9"}})
			setID = e.jsonField(r, "id")
			return r, tgt(asAdmin, "record_set:"+setID)
		}},
		{"POST /api/v1/zones/{zoneId}/record-sets/{setId}/update", func() (resp, expect) {
			return post(adm, "/api/v1/zones/"+zoneID+"/record-sets/"+setID+"/update", map[string]any{"name": "www", "type": "A", "records": []string{"192.0.2.10"}}),
				tgt(asAdmin, "record_set:"+setID)
		}},
		{"POST /api/v1/projects/{projectId}/templates/create", func() (resp, expect) {
			r := post(adm, "/api/v1/projects/"+projectID+"/templates/create", map[string]any{"name": "spf", "sets": []any{
				map[string]any{"name": "_dmarc", "type": "TXT", "records": []string{`"v=DMARC1; p=none"`}}}})
			templateID = e.jsonField(r, "id")
			return r, tgt(asAdmin, "template:"+templateID)
		}},
		{"POST /api/v1/templates/{templateId}/update", func() (resp, expect) {
			return post(adm, "/api/v1/templates/"+templateID+"/update", map[string]any{"name": "spf2", "sets": []any{
				map[string]any{"name": "_dmarc", "type": "TXT", "records": []string{`"v=DMARC1; p=reject"`}}}}), tgt(asAdmin, "template:"+templateID)
		}},
		{"POST /api/v1/templates/{templateId}/apply", func() (resp, expect) {
			return post(adm, "/api/v1/templates/"+templateID+"/apply", map[string]any{"zoneId": zoneID}), tgt(asAdmin, "template:"+templateID)
		}},
		{"POST /api/v1/sync-groups/create", func() (resp, expect) {
			r := post(adm, "/api/v1/sync-groups/create", map[string]any{"name": "sync", "priority": 1})
			syncID = e.jsonField(r, "id")
			return r, tgt(asAdmin, "sync_group:"+syncID)
		}},
		{"POST /api/v1/sync-groups/{groupId}/members/add", func() (resp, expect) {
			return post(adm, "/api/v1/sync-groups/"+syncID+"/members/add", map[string]any{"zoneId": zoneID}), tgt(asAdmin, "sync_group:"+syncID)
		}},
		{"POST /api/v1/sync-groups/{groupId}/update-sets", func() (resp, expect) {
			return post(adm, "/api/v1/sync-groups/"+syncID+"/update-sets", map[string]any{"sets": []any{}}), tgt(asAdmin, "sync_group:"+syncID)
		}},
		{"POST /api/v1/sync-groups/{groupId}/members/remove", func() (resp, expect) {
			return post(adm, "/api/v1/sync-groups/"+syncID+"/members/remove", map[string]any{"zoneId": zoneID}), tgt(asAdmin, "sync_group:"+syncID)
		}},
		{"POST /api/v1/projects/{projectId}/source-hosts/create", func() (resp, expect) {
			r := post(adm, "/api/v1/projects/"+projectID+"/source-hosts/create", map[string]any{"name": "lb", "ipv4": []string{"198.51.100.1"}})
			sourceID = e.jsonField(r, "id")
			return r, tgt(asAdmin, "source_host:"+sourceID)
		}},
		{"POST /api/v1/source-hosts/{sourceId}/update", func() (resp, expect) {
			return post(adm, "/api/v1/source-hosts/"+sourceID+"/update", map[string]any{"name": "lb", "ipv4": []string{"198.51.100.2"}}), tgt(asAdmin, "source_host:"+sourceID)
		}},
		{"POST /api/v1/source-hosts/{sourceId}/bind", func() (resp, expect) {
			return post(adm, "/api/v1/source-hosts/"+sourceID+"/bind", lb), tgt(asAdmin, "source_host:"+sourceID)
		}},
		{"POST /api/v1/source-hosts/{sourceId}/unbind", func() (resp, expect) {
			return post(adm, "/api/v1/source-hosts/"+sourceID+"/unbind", lb), tgt(asAdmin, "source_host:"+sourceID)
		}},
		{"POST /api/v1/source-hosts/{sourceId}/delete", func() (resp, expect) {
			return post(adm, "/api/v1/source-hosts/"+sourceID+"/delete", nil), tgt(asAdmin, "source_host:"+sourceID)
		}},
		{"POST /api/v1/sync-groups/{groupId}/delete", func() (resp, expect) {
			return post(adm, "/api/v1/sync-groups/"+syncID+"/delete", nil), tgt(asAdmin, "sync_group:"+syncID)
		}},
		{"POST /api/v1/templates/{templateId}/delete", func() (resp, expect) {
			return post(adm, "/api/v1/templates/"+templateID+"/delete", nil), tgt(asAdmin, "template:"+templateID)
		}},
		{"POST /api/v1/zones/{zoneId}/record-sets/{setId}/delete", func() (resp, expect) {
			return post(adm, "/api/v1/zones/"+zoneID+"/record-sets/"+setID+"/delete", nil), tgt(asAdmin, "record_set:"+setID)
		}},
		{"POST /api/v1/zones/{zoneId}/delete", func() (resp, expect) {
			return post(adm, "/api/v1/zones/"+zoneID+"/delete", nil), tgt(asAdmin, "zone:"+zoneID)
		}},
		{"POST /api/v1/projects/{projectId}/members/{userId}/remove", func() (resp, expect) {
			return post(adm, "/api/v1/projects/"+projectID+"/members/"+daveID+"/remove", nil), tgt(asAdmin, "project:"+projectID)
		}},
		{"POST /api/v1/projects/{projectId}/delete", func() (resp, expect) {
			return post(adm, "/api/v1/projects/"+projectID+"/delete", nil), tgt(asAdmin, "project:"+projectID)
		}},

		// Servers, mostly through the API key: who ran what on which server.
		{"POST /api/v1/servers/probe", func() (resp, expect) {
			host, port := splitHostPort(t, e.fleet.Instances[e.next].Addr)
			return post(keyTok, "/api/v1/servers/probe", map[string]any{"host": host, "port": port}), viaKey("host:" + host)
		}},
		{"POST /api/v1/servers/join", func() (resp, expect) {
			inst := e.fleet.Instances[e.next]
			e.next++
			host, port := splitHostPort(t, inst.Addr)
			r := post(keyTok, "/api/v1/servers/join", map[string]any{"name": "joined", "host": host, "port": port, "username": "root",
				"auth": "password", "password": "bootstrap-pw", "host_key": inst.AuthorizedHostKey()})
			var out struct {
				JobID  string `json:"job_id"`
				Server struct {
					ID string `json:"id"`
				} `json:"server"`
			}
			r.json(t, &out)
			return r, viaKey("server:" + out.Server.ID + " job=" + out.JobID)
		}},
		{"PATCH /api/v1/servers/{id}/settings", func() (resp, expect) {
			srv = e.server(t)
			return e.do(req{method: http.MethodPatch, path: "/api/v1/servers/" + srv.ID + "/settings", token: keyTok, body: map[string]any{"name": "renamed"}}),
				viaKey("server:" + srv.ID)
		}},
		{"PUT /api/v1/servers/{id}/storage-volumes", func() (resp, expect) {
			return e.do(req{method: http.MethodPut, path: "/api/v1/servers/" + srv.ID + "/storage-volumes", token: keyTok, body: map[string]any{"mounts": []string{}}}),
				viaKey("server:" + srv.ID)
		}},
		jobStep("POST /api/v1/servers/{id}/reconnect", "/reconnect", nil),
		jobStep("POST /api/v1/servers/{id}/connectivity-check", "/connectivity-check", nil),
		jobStep("POST /api/v1/servers/{id}/rotate-key", "/rotate-key", nil),
		jobStep("POST /api/v1/servers/{id}/packages/upgrade-security", "/packages/upgrade-security", nil),
		jobStep("POST /api/v1/servers/{id}/packages/refresh", "/packages/refresh", nil),
		jobStep("POST /api/v1/servers/{id}/packages/upgrade-all", "/packages/upgrade-all", nil),
		jobStep("POST /api/v1/servers/{id}/packages/update", "/packages/update", map[string]any{"names": []string{"curl"}}),
		jobStep("POST /api/v1/servers/{id}/packages/remove", "/packages/remove", map[string]any{"names": []string{"curl"}}),
		jobStep("POST /api/v1/servers/{id}/packages/autoremove", "/packages/autoremove", nil),
		jobStep("POST /api/v1/servers/{id}/packages/hold", "/packages/hold", map[string]any{"names": []string{"curl"}}),
		jobStep("POST /api/v1/servers/{id}/packages/unhold", "/packages/unhold", map[string]any{"names": []string{"curl"}}),
		jobStep("POST /api/v1/servers/{id}/kernels/cleanup", "/kernels/cleanup", nil),
		// Containers (issue 15): every action is a job on the server.
		jobStep("POST /api/v1/servers/{id}/docker/refresh", "/docker/refresh", nil),
		jobStep("POST /api/v1/servers/{id}/docker/pull", "/docker/pull", map[string]any{"image": "nginx:1.27"}),
		jobStep("POST /api/v1/servers/{id}/docker/pull-all", "/docker/pull-all", nil),
		jobStep("POST /api/v1/servers/{id}/docker/compose-update", "/docker/compose-update", map[string]any{"project": "shop"}),
		jobStep("POST /api/v1/servers/{id}/docker/remove-image", "/docker/remove-image", map[string]any{"image": "nginx:1.25"}),
		jobStep("POST /api/v1/servers/{id}/docker/prune", "/docker/prune", map[string]any{"containers": true, "dry_run": true}),
		jobStep("POST /api/v1/servers/{id}/docker/containers/{name}/start", "/docker/containers/web/start", nil),
		jobStep("POST /api/v1/servers/{id}/docker/containers/{name}/stop", "/docker/containers/web/stop", nil),
		jobStep("POST /api/v1/servers/{id}/docker/containers/{name}/restart", "/docker/containers/web/restart", nil),
		{"POST /api/v1/servers/{id}/docker/check-updates", func() (resp, expect) {
			s := e.server(t)
			inv := `{"engines":[{"engine":"docker"}],"containers":[{"engine":"docker","id":"abc","name":"web","image":"nginx:1.27","state":"running"}],"images":[],"compose":[]}`
			if err := e.st.SetContainerInventory(ctx, store.ContainerInventory{ServerID: s.ID, Data: []byte(inv), RefreshedAt: time.Now()}); err != nil {
				t.Fatal(err)
			}
			return post(keyTok, "/api/v1/servers/"+s.ID+"/docker/check-updates", nil), viaKey("server:" + s.ID)
		}},
		{"POST /api/v1/servers/{id}/docker/cve-relevance", func() (resp, expect) {
			s := e.server(t)
			inv := `{"engines":[{"engine":"docker"}],"containers":[{"engine":"docker","id":"abc","name":"web","image":"nginx:1.27","state":"running"}],"images":[],"compose":[]}`
			if err := e.st.SetContainerInventory(ctx, store.ContainerInventory{ServerID: s.ID, Data: []byte(inv), RefreshedAt: time.Now()}); err != nil {
				t.Fatal(err)
			}
			return post(keyTok, "/api/v1/servers/"+s.ID+"/docker/cve-relevance", map[string]any{"container": "web", "relevant": true}), viaKey("server:" + s.ID)
		}},
		jobStep("POST /api/v1/servers/{id}/refresh-all", "/refresh-all", nil),
		jobStep("POST /api/v1/servers/{id}/reboot", "/reboot", nil),
		jobStep("POST /api/v1/servers/{id}/harden-ssh", "/harden-ssh", map[string]any{"fix_main_config": true}),
		jobStep("POST /api/v1/servers/{id}/unharden-ssh", "/unharden-ssh", nil),
		jobStep("POST /api/v1/servers/{id}/ssh-root-login", "/ssh-root-login", map[string]any{"enabled": false}),
		jobStep("POST /api/v1/servers/{id}/restrict-sudo", "/restrict-sudo", map[string]any{"mode": "restricted"}),
		jobStep("POST /api/v1/servers/{id}/ssh-port", "/ssh-port", map[string]any{"port": 2222}),
		jobStep("POST /api/v1/servers/{id}/firewall", "/firewall", map[string]any{"op": "add", "rules": []map[string]any{{"port": 443, "proto": "tcp", "comment": "web"}}}),
		jobStep("POST /api/v1/servers/{id}/listening-ports/scan", "/listening-ports/scan", nil),
		{"POST /api/v1/settings/ip-allowlists", func() (resp, expect) {
			r := post(adm, "/api/v1/settings/ip-allowlists", map[string]any{"name": "office", "entries": []string{"198.18.0.0/24", "2001:db8::1"}})
			var out struct {
				ID string `json:"id"`
			}
			r.json(t, &out)
			allowlistID = out.ID
			return r, tgt(asAdmin, "ip_allowlist:"+out.ID)
		}},
		{"DELETE /api/v1/settings/ip-allowlists/{id}", func() (resp, expect) {
			return e.do(req{method: http.MethodDelete, path: "/api/v1/settings/ip-allowlists/" + allowlistID, token: adm}), tgt(asAdmin, "ip_allowlist:"+allowlistID)
		}},
		{"POST /api/v1/servers/{id}/vulnerabilities/scan", func() (resp, expect) {
			s := e.server(t)
			ingestOldBookworm(t, e.st, s.ID)
			vulnServer = s.ID
			return post(keyTok, "/api/v1/servers/"+s.ID+"/vulnerabilities/scan", nil), viaKey("server:" + s.ID)
		}},
		{"POST /api/v1/security/vulnerabilities/{fid}/acknowledge", func() (resp, expect) {
			var page struct {
				Items []struct {
					ID uint64 `json:"id"`
				} `json:"items"`
			}
			e.must(200, req{method: http.MethodGet, path: "/api/v1/servers/" + vulnServer + "/vulnerabilities", token: adm}).json(t, &page)
			if len(page.Items) == 0 {
				t.Fatal("the scan found nothing to acknowledge")
			}
			fid := fmt.Sprint(page.Items[0].ID)
			return post(keyTok, "/api/v1/security/vulnerabilities/"+fid+"/acknowledge", nil), viaKey("vulnerability:" + fid)
		}},
		{"POST /api/v1/security/update-affected", func() (resp, expect) {
			return post(keyTok, "/api/v1/security/update-affected", nil), viaKey("security:update-affected")
		}},
		{"POST /api/v1/security/vulnerabilities/scan", func() (resp, expect) {
			return post(keyTok, "/api/v1/security/vulnerabilities/scan", nil), viaKey("fleet")
		}},
		{"POST /api/v1/security/scanner/update-db", func() (resp, expect) {
			body, ctype := osvUpload(t, "Debian")
			return e.do(req{method: http.MethodPost, path: "/api/v1/security/scanner/update-db", token: keyTok, body: body,
				headers: map[string]string{"Content-Type": ctype}}), viaKey("vulndb:Debian")
		}},
		{"PUT /api/v1/security/advisories/settings", func() (resp, expect) {
			return e.do(req{method: http.MethodPut, path: "/api/v1/security/advisories/settings", token: keyTok, body: map[string]any{"enabled": true}}),
				viaKey("settings:advisories")
		}},
		{"POST /api/v1/security/advisories/poll", func() (resp, expect) {
			return post(keyTok, "/api/v1/security/advisories/poll", nil), viaKey("advisories:poll")
		}},
		{"POST /api/v1/security/advisories/{id}/acknowledge", func() (resp, expect) {
			var page struct {
				Items []struct {
					ID uint64 `json:"id"`
				} `json:"items"`
			}
			e.must(200, req{method: http.MethodGet, path: "/api/v1/security/advisories?server_id=" + vulnServer, token: adm}).json(t, &page)
			if len(page.Items) == 0 {
				t.Fatal("the poll found nothing to acknowledge")
			}
			id := fmt.Sprint(page.Items[0].ID)
			return post(keyTok, "/api/v1/security/advisories/"+id+"/acknowledge", nil), viaKey("early_warning:" + id)
		}},
		{"POST /api/v1/security/advisories/mirror", func() (resp, expect) {
			return post(keyTok, "/api/v1/security/advisories/mirror", nil), viaKey("advisories:mirror")
		}},
		{"POST /api/v1/jobs/{id}/abort", func() (resp, expect) {
			s := e.server(t)
			j := e.jsonField(e.must(202, req{method: http.MethodPost, path: "/api/v1/servers/" + s.ID + "/packages/upgrade-security", token: adm}), "job_id")
			return post(keyTok, "/api/v1/jobs/"+j+"/abort", nil), viaKey("job:" + j)
		}},
		{"POST /api/v1/jobs/bulk", func() (resp, expect) {
			s := e.server(t)
			r := post(keyTok, "/api/v1/jobs/bulk", map[string]any{"action": "refresh", "server_ids": []string{s.ID}})
			return r, viaKey("bulk:" + e.jsonField(r, "bulk_id"))
		}},
		{"POST /api/v1/security/update-all", func() (resp, expect) {
			r := post(keyTok, "/api/v1/security/update-all", nil)
			return r, viaKey("bulk:" + e.jsonField(r, "bulk_id"))
		}},
		{"POST /api/v1/rollouts", func() (resp, expect) {
			a, b := e.server(t), e.server(t)
			r := post(keyTok, "/api/v1/rollouts", map[string]any{"action": "security-updates", "server_ids": []string{a.ID, b.ID},
				"batch_size": 1, "pause_seconds": 3600})
			rolloutID = e.jsonField(r, "id")
			return r, viaKey("rollout:" + rolloutID)
		}},
		{"POST /api/v1/rollouts/{id}/pause", func() (resp, expect) {
			return post(keyTok, "/api/v1/rollouts/"+rolloutID+"/pause", nil), viaKey("rollout:" + rolloutID)
		}},
		{"POST /api/v1/rollouts/{id}/resume", func() (resp, expect) {
			return post(keyTok, "/api/v1/rollouts/"+rolloutID+"/resume", nil), viaKey("rollout:" + rolloutID)
		}},
		{"POST /api/v1/rollouts/{id}/abort", func() (resp, expect) {
			return post(keyTok, "/api/v1/rollouts/"+rolloutID+"/abort", map[string]any{"abort_running": true}), viaKey("rollout:" + rolloutID)
		}},
		{"POST /api/v1/approvals/{id}/approve", func() (resp, expect) {
			id := e.requestRollout(t, daveID)
			return post(keyTok, "/api/v1/approvals/"+id+"/approve", map[string]any{"comment": "ok"}), viaKey("approval:" + id)
		}},
		{"POST /api/v1/approvals/{id}/reject", func() (resp, expect) {
			id := e.requestRollout(t, daveID)
			return post(keyTok, "/api/v1/approvals/"+id+"/reject", map[string]any{"comment": "not now"}), viaKey("approval:" + id)
		}},
		{"POST /api/v1/servers/{id}/decommission", func() (resp, expect) {
			s := e.server(t)
			return post(keyTok, "/api/v1/servers/"+s.ID+"/decommission", nil), viaKey("server:" + s.ID)
		}},
		{"POST /api/v1/servers/agent", func() (resp, expect) {
			r := post(keyTok, "/api/v1/servers/agent", map[string]any{"name": "audit-agent"})
			agentServerID = e.jsonField(r, "id")
			return r, viaKey("server:" + agentServerID)
		}},
		{"POST /api/v1/servers/{id}/agent-token", func() (resp, expect) {
			return post(keyTok, "/api/v1/servers/"+agentServerID+"/agent-token", nil), viaKey("server:" + agentServerID)
		}},

		// Server groups and their managers.
		{"POST /api/v1/server-groups/create", func() (resp, expect) {
			r := post(keyTok, "/api/v1/server-groups/create", map[string]any{"name": "audit-group"})
			groupID = e.jsonField(r, "id")
			return r, viaKey("group:" + groupID)
		}},
		{"PATCH /api/v1/server-groups/{id}/settings", func() (resp, expect) {
			return e.do(req{method: http.MethodPatch, path: "/api/v1/server-groups/" + groupID + "/settings", token: adm, body: map[string]any{"description": "audited"}}),
				tgt(asAdmin, "group:"+groupID)
		}},
		{"POST /api/v1/server-groups/{id}/assign-server", func() (resp, expect) {
			return post(adm, "/api/v1/server-groups/"+groupID+"/assign-server", map[string]any{"server_id": srv.ID}), tgt(asAdmin, "group:"+groupID)
		}},
		{"POST /api/v1/server-groups/{id}/remove-server", func() (resp, expect) {
			return post(adm, "/api/v1/server-groups/"+groupID+"/remove-server", map[string]any{"server_id": srv.ID}), tgt(asAdmin, "group:"+groupID)
		}},
		{"POST /api/v1/server-groups/{id}/assign-manager", func() (resp, expect) {
			return post(adm, "/api/v1/server-groups/"+groupID+"/assign-manager", map[string]any{"user_id": daveID}), tgt(asAdmin, "group:"+groupID)
		}},
		{"POST /api/v1/server-groups/{id}/remove-manager", func() (resp, expect) {
			return post(adm, "/api/v1/server-groups/"+groupID+"/remove-manager", map[string]any{"user_id": daveID}), tgt(asAdmin, "group:"+groupID)
		}},
		{"POST /api/v1/server-groups/{id}/disband", func() (resp, expect) {
			return post(adm, "/api/v1/server-groups/"+groupID+"/disband", nil), tgt(asAdmin, "group:"+groupID)
		}},

		// Privilege profiles and blocks (issue 14).
		{"POST /api/v1/privilege-profiles", func() (resp, expect) {
			r := post(adm, "/api/v1/privilege-profiles", map[string]any{"name": "Audit ops",
				"rules": []map[string]any{{"kind": "command", "argv": []string{"/usr/sbin/nginx", "-t"}}}})
			profID = e.jsonField(r, "id")
			return r, tgt(asAdmin, "profile:"+profID)
		}},
		{"POST /api/v1/privilege-profiles/{id}/clone", func() (resp, expect) {
			r := post(adm, "/api/v1/privilege-profiles/"+profID+"/clone", map[string]any{"name": "Audit ops 2"})
			cloneID = e.jsonField(r, "id")
			return r, tgt(asAdmin, "profile:"+cloneID)
		}},
		{"PATCH /api/v1/privilege-profiles/{id}", func() (resp, expect) {
			return e.do(req{method: http.MethodPatch, path: "/api/v1/privilege-profiles/" + profID, token: adm,
					body: map[string]any{"rules": []map[string]any{{"kind": "command", "argv": []string{"/usr/bin/tee", "/var/log/x"}, "confirmed": true}}}}),
				tgt(asAdmin, "profile:"+profID)
		}},
		{"DELETE /api/v1/privilege-profiles/{id}", func() (resp, expect) {
			return e.do(req{method: http.MethodDelete, path: "/api/v1/privilege-profiles/" + cloneID, token: adm}), tgt(asAdmin, "profile:"+cloneID)
		}},
		{"POST /api/v1/profile-blocks", func() (resp, expect) {
			r := post(adm, "/api/v1/profile-blocks", map[string]any{"name": "Audit block",
				"variants": map[string]any{"*": []map[string]any{{"kind": "command", "argv": []string{"/usr/sbin/nginx", "-t"}}}}})
			blockID = e.jsonField(r, "id")
			return r, tgt(asAdmin, "profile_block:"+blockID)
		}},
		{"POST /api/v1/profile-blocks/{id}/clone", func() (resp, expect) {
			r := post(adm, "/api/v1/profile-blocks/"+blockID+"/clone", map[string]any{"name": "Audit block 2"})
			id := e.jsonField(r, "id")
			return r, tgt(asAdmin, "profile_block:"+id)
		}},
		{"PATCH /api/v1/profile-blocks/{id}", func() (resp, expect) {
			return e.do(req{method: http.MethodPatch, path: "/api/v1/profile-blocks/" + blockID, token: adm, body: map[string]any{"description": "d"}}),
				tgt(asAdmin, "profile_block:"+blockID)
		}},
		{"DELETE /api/v1/profile-blocks/{id}", func() (resp, expect) {
			return e.do(req{method: http.MethodDelete, path: "/api/v1/profile-blocks/" + blockID, token: adm}), tgt(asAdmin, "profile_block:"+blockID)
		}},

		// Linux users catalogue and accounts on servers (issue 14).
		{"POST /api/v1/linux-users", func() (resp, expect) {
			r := post(adm, "/api/v1/linux-users", map[string]any{"username": "auditlu", "full_name": "Audit User", "email": "auditlu@example.test"})
			luID = e.jsonField(r, "id")
			return r, tgt(asAdmin, "linux_user:"+luID)
		}},
		{"PATCH /api/v1/linux-users/{id}", func() (resp, expect) {
			return e.do(req{method: http.MethodPatch, path: "/api/v1/linux-users/" + luID, token: adm, body: map[string]any{"shell": "/bin/sh"}}),
				tgt(asAdmin, "linux_user:"+luID)
		}},
		{"POST /api/v1/linux-users/{id}/keys/generate", func() (resp, expect) {
			r := post(adm, "/api/v1/linux-users/"+luID+"/keys/generate", nil)
			luKeyID = e.jsonField(r, "id")
			return r, tgt(asAdmin, "linux_user:"+luID)
		}},
		{"DELETE /api/v1/linux-users/keys/{keyId}", func() (resp, expect) {
			return e.do(req{method: http.MethodDelete, path: "/api/v1/linux-users/keys/" + luKeyID, token: adm}), tgt(asAdmin, "linux_user:"+luID)
		}},
		{"POST /api/v1/linux-users/{id}/keys", func() (resp, expect) {
			return post(adm, "/api/v1/linux-users/"+luID+"/keys", map[string]any{"public_key": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl audit"}),
				tgt(asAdmin, "linux_user:"+luID)
		}},
		{"POST /api/v1/linux-users/{id}/activation-links/generate", func() (resp, expect) {
			r := post(adm, "/api/v1/linux-users/"+luID+"/activation-links/generate", nil)
			luToken = e.jsonField(r, "token")
			return r, tgt(asAdmin, "linux_user:"+luID)
		}},
		{"POST /api/v1/linux-users/activation-links/consume", func() (resp, expect) {
			return post("", "/api/v1/linux-users/activation-links/consume", map[string]string{"token": luToken, "password": "Harbor-Lantern-61q"}),
				expect{target: "linux_user:" + luID}
		}},
		{"POST /api/v1/linux-users/{id}/assign-group", func() (resp, expect) {
			g, err := e.st.CreateGroup(ctx, domain.Group{Name: "audit-lu"})
			if err != nil {
				t.Fatal(err)
			}
			luGroupID = g.ID
			return post(adm, "/api/v1/linux-users/"+luID+"/assign-group", map[string]any{"group_id": luGroupID}), tgt(asAdmin, "linux_user:"+luID)
		}},
		{"POST /api/v1/linux-users/{id}/group-profile", func() (resp, expect) {
			return post(adm, "/api/v1/linux-users/"+luID+"/group-profile", map[string]any{"group_id": luGroupID, "profile_id": profID}), tgt(asAdmin, "linux_user:"+luID)
		}},
		{"POST /api/v1/linux-users/{id}/remove-group", func() (resp, expect) {
			return post(adm, "/api/v1/linux-users/"+luID+"/remove-group", map[string]any{"group_id": luGroupID}), tgt(asAdmin, "linux_user:"+luID)
		}},
		luJob("POST /api/v1/servers/{id}/assign-user", "/assign-user", false, func(domain.Server) any { return map[string]any{"user_id": luID} }),
		luJob("POST /api/v1/servers/{id}/remove-user", "/remove-user", true, func(domain.Server) any { return map[string]any{"user_id": luID} }),
		luJob("POST /api/v1/servers/{id}/sync-users", "/sync-users", false, func(domain.Server) any { return nil }),
		luJob("POST /api/v1/servers/{id}/users/refresh", "/users/refresh", false, func(domain.Server) any { return nil }),
		luJob("POST /api/v1/servers/{id}/users/disable", "/users/disable", true, byName),
		luJob("POST /api/v1/servers/{id}/users/enable", "/users/enable", true, byName),
		{"POST /api/v1/servers/{id}/users/remove", func() (resp, expect) {
			// Provisioned but no longer assigned: the account may go.
			s := e.server(t)
			if err := e.st.SetLinuxUserProvision(ctx, domain.LinuxUserProvision{UserID: luID, ServerID: s.ID, Username: "auditlu", State: domain.ProvisionProvisioned}); err != nil {
				t.Fatal(err)
			}
			r := post(keyTok, "/api/v1/servers/"+s.ID+"/users/remove", map[string]any{"username": "auditlu"})
			return r, viaKey("server:" + s.ID + " job=" + e.jsonField(r, "job_id"))
		}},
		{"POST /api/v1/linux-users/{id}/remove-from-servers", func() (resp, expect) {
			return post(adm, "/api/v1/linux-users/"+luID+"/remove-from-servers", map[string]any{}), tgt(asAdmin, "linux_user:"+luID)
		}},
		{"DELETE /api/v1/linux-users/{id}", func() (resp, expect) {
			// Forget the simulated accounts (their jobs ran against simulated hosts).
			provs, err := e.st.ListLinuxUserProvisions(ctx, luID, "")
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range provs {
				if err := e.st.DeleteLinuxUserProvision(ctx, luID, p.ServerID); err != nil {
					t.Fatal(err)
				}
			}
			return e.do(req{method: http.MethodDelete, path: "/api/v1/linux-users/" + luID, token: adm}), tgt(asAdmin, "linux_user:"+luID)
		}},

		// Automation (issue 20).
		{"POST /api/v1/server-groups/{id}/schedules/define", func() (resp, expect) {
			autoGroup = e.jsonField(e.must(200, req{method: http.MethodPost, path: "/api/v1/server-groups/create", token: adm, body: map[string]any{"name": "auto"}}), "id")
			r := post(adm, "/api/v1/server-groups/"+autoGroup+"/schedules/define", map[string]any{"name": "nightly", "cron": "0 3 * * *", "time_zone": "Europe/Berlin"})
			schID = e.jsonField(r, "id")
			return r, tgt(asAdmin, "schedule:"+schID)
		}},
		{"POST /api/v1/server-groups/{id}/rules/define", func() (resp, expect) {
			r := post(adm, "/api/v1/server-groups/"+autoGroup+"/rules/define", map[string]any{"schedule_id": schID, "type": "refresh"})
			autoRuleID = e.jsonField(r, "id")
			return r, tgt(asAdmin, "rule:"+autoRuleID)
		}},
		{"PUT /api/v1/server-groups/{id}/automation", func() (resp, expect) {
			return e.do(req{method: http.MethodPut, path: "/api/v1/server-groups/" + autoGroup + "/automation", token: adm,
				body: map[string]any{"priority": 10, "window_start": "02:00", "window_end": "05:00", "window_tz": "UTC"}}), tgt(asAdmin, "group:"+autoGroup)
		}},
		{"PATCH /api/v1/rules/{id}/update", func() (resp, expect) {
			return e.do(req{method: http.MethodPatch, path: "/api/v1/rules/" + autoRuleID + "/update", token: adm, body: map[string]any{"type": "health-check"}}), tgt(asAdmin, "rule:"+autoRuleID)
		}},
		{"PATCH /api/v1/schedules/{id}/update", func() (resp, expect) {
			return e.do(req{method: http.MethodPatch, path: "/api/v1/schedules/" + schID + "/update", token: adm, body: map[string]any{"outside_window": "skip"}}), tgt(asAdmin, "schedule:"+schID)
		}},
		{"POST /api/v1/schedules/{id}/disable", func() (resp, expect) {
			return post(adm, "/api/v1/schedules/"+schID+"/disable", nil), tgt(asAdmin, "schedule:"+schID)
		}},
		{"POST /api/v1/schedules/{id}/enable", func() (resp, expect) {
			return post(adm, "/api/v1/schedules/"+schID+"/enable", nil), tgt(asAdmin, "schedule:"+schID)
		}},
		{"POST /api/v1/schedules/{id}/trigger-now", func() (resp, expect) {
			return post(adm, "/api/v1/schedules/"+schID+"/trigger-now", nil), tgt(asAdmin, "schedule:"+schID)
		}},
		{"POST /api/v1/rules/{id}/disable", func() (resp, expect) {
			return post(adm, "/api/v1/rules/"+autoRuleID+"/disable", nil), tgt(asAdmin, "rule:"+autoRuleID)
		}},
		{"POST /api/v1/rules/{id}/enable", func() (resp, expect) {
			return post(adm, "/api/v1/rules/"+autoRuleID+"/enable", nil), tgt(asAdmin, "rule:"+autoRuleID)
		}},
		{"POST /api/v1/rules/{id}/trigger-now", func() (resp, expect) {
			return post(adm, "/api/v1/rules/"+autoRuleID+"/trigger-now", nil), tgt(asAdmin, "rule:"+autoRuleID)
		}},
		{"DELETE /api/v1/rules/{id}/remove", func() (resp, expect) {
			return e.do(req{method: http.MethodDelete, path: "/api/v1/rules/" + autoRuleID + "/remove", token: adm}), tgt(asAdmin, "rule:"+autoRuleID)
		}},
		{"DELETE /api/v1/schedules/{id}/remove", func() (resp, expect) {
			return e.do(req{method: http.MethodDelete, path: "/api/v1/schedules/" + schID + "/remove", token: adm}), tgt(asAdmin, "schedule:"+schID)
		}},
		{"POST /api/v1/custom-actions", func() (resp, expect) {
			r := post(adm, "/api/v1/custom-actions", map[string]any{"name": "uptime", "commands": []string{"uptime"}})
			caID = e.jsonField(r, "id")
			return r, tgt(asAdmin, "custom_action:"+caID)
		}},
		{"PATCH /api/v1/custom-actions/{id}", func() (resp, expect) {
			return e.do(req{method: http.MethodPatch, path: "/api/v1/custom-actions/" + caID, token: adm, body: map[string]any{"description": "load"}}), tgt(asAdmin, "custom_action:"+caID)
		}},
		{"POST /api/v1/custom-actions/{id}/run", func() (resp, expect) {
			s := e.server(t)
			return post(adm, "/api/v1/custom-actions/"+caID+"/run", map[string]any{"server_ids": []string{s.ID}}), tgt(asAdmin, "custom_action:"+caID)
		}},
		{"DELETE /api/v1/custom-actions/{id}", func() (resp, expect) {
			return e.do(req{method: http.MethodDelete, path: "/api/v1/custom-actions/" + caID, token: adm}), tgt(asAdmin, "custom_action:"+caID)
		}},
		{"POST /api/v1/servers/{id}/maintenance/start", func() (resp, expect) {
			maintSrv = e.server(t).ID
			return post(adm, "/api/v1/servers/"+maintSrv+"/maintenance/start", map[string]any{"reason": "disk swap"}), tgt(asAdmin, "server:"+maintSrv)
		}},
		{"POST /api/v1/servers/{id}/maintenance/end", func() (resp, expect) {
			return post(adm, "/api/v1/servers/"+maintSrv+"/maintenance/end", nil), tgt(asAdmin, "server:"+maintSrv)
		}},
		{"POST /api/v1/system/schedules/kind/{kind}/trigger-now", func() (resp, expect) {
			return post(adm, "/api/v1/system/schedules/kind/storage-sample/trigger-now", nil), tgt(asAdmin, "schedule:storage_sample")
		}},
		{"POST /api/v1/system/schedules/{id}/trigger-now", func() (resp, expect) {
			return post(adm, "/api/v1/system/schedules/refresh_all/trigger-now", nil), tgt(asAdmin, "schedule:refresh_all")
		}},

		// Last: the key that made many of the calls above.
		{"DELETE /api/v1/apikeys/{id}", func() (resp, expect) {
			return e.do(req{method: http.MethodDelete, path: "/api/v1/apikeys/" + keyID, token: adm}), tgt(asAdmin, keyID)
		}},
	}

	covered := map[string]bool{}
	for _, s := range steps {
		if covered[s.op] {
			t.Fatalf("step %s twice", s.op)
		}
		covered[s.op] = true
		before := lastSeq(t, e.st)
		r, want := s.call()
		if r.code < 200 || r.code > 299 {
			t.Fatalf("%s: %d %s (the call must succeed)", s.op, r.code, r.body)
		}
		if msg := findEntry(t, e.st, before, want); msg != "" {
			t.Errorf("%s: %s", s.op, msg)
		}
	}

	// Every write operation of the document is called above or allowlisted.
	doc, err := OpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	inDoc := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			if op := strings.ToUpper(method) + " " + path; isWrite(strings.ToUpper(method)) {
				inDoc[op] = true
			}
		}
	}
	var missing []string
	for op := range inDoc {
		if !covered[op] && notAudited[op] == "" {
			missing = append(missing, op)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("write operations without an audit check (add a step here and make the handler note an entry, or allowlist it with a reason):\n%s", strings.Join(missing, "\n"))
	}
	for op := range covered {
		if !inDoc[op] {
			t.Errorf("step %s is not a write operation of the OpenAPI document", op)
		}
	}
	for op := range auditExempt {
		if notAudited[op] == "" || covered[op] {
			t.Errorf("%s is exempt in production (auditExempt) but not allowlisted here", op)
		}
	}
	if len(inDoc) < 70 {
		t.Fatalf("only %d write operations in the document: the walk looks broken", len(inDoc))
	}
	// No entry holds a secret that went through the calls above.
	all, _, err := e.st.ListAudit(ctx, store.AuditFilter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(all)
	for _, secretValue := range []string{adminPW, keyTok, "bootstrap-pw", secret, "Quiet-Lantern-83q", "Amber-Valley-29x", "Sunlit-Meadow-47k", "Copper-Harbor-52m", "Harbor-Lantern-61q", "Registry-Secret-77", "Registry-Secret-78"} {
		if strings.Contains(string(raw), secretValue) {
			t.Errorf("the audit log contains the secret %q", secretValue)
		}
	}
	// All of it is one intact hash chain.
	if n, err := e.st.VerifyAuditChain(ctx); err != nil || n < int64(len(steps)) {
		t.Fatalf("chain: %d entries, %v", n, err)
	}
}

func splitHostPort(t *testing.T, addr string) (string, int) {
	t.Helper()
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return ap.Addr().String(), int(ap.Port())
}

func lastSeq(t *testing.T, st *store.Store) int64 {
	t.Helper()
	items, _, err := st.ListAudit(context.Background(), store.AuditFilter{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(items) == 0 {
		return 0
	}
	return items[0].Seq
}

// findEntry looks for a specific (not the api.write safety net) entry
// after seq with the expected target, actor, API key and client address;
// "" when found, otherwise what was there. A target "server:X job=J"
// also requires details.job_id J.
func findEntry(t *testing.T, st *store.Store, after int64, want expect) string {
	t.Helper()
	items, _, err := st.ListAudit(context.Background(), store.AuditFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	target, job, _ := strings.Cut(want.target, " job=")
	var seen []string
	for _, it := range items {
		if it.Seq <= after {
			continue
		}
		seen = append(seen, fmt.Sprintf("%s target=%q actor_id=%q ip=%s details=%v", it.Action, it.Target, it.ActorID, it.IP, it.Details))
		key, _ := it.Details["api_key_id"].(string)
		jobID, _ := it.Details["job_id"].(string)
		if it.Action != actionFallback && it.Action != actionDenied && it.Target == target && it.ActorID == want.actorID &&
			key == want.keyID && it.IP == "192.0.2.1" && (job == "" || jobID == job) {
			return ""
		}
	}
	return fmt.Sprintf("no entry with target %q actor %q key %q from 192.0.2.1; new entries: %v", want.target, want.actorID, want.keyID, seen)
}

// TestFailedWritesLeaveNoSuccessEntry: a write refused for bad input, a
// busy server or a missing resource leaves nothing; one refused for
// missing rights leaves access.denied naming the caller, the route and
// the error code, and no success entry.
func TestFailedWritesLeaveNoSuccessEntry(t *testing.T) {
	e := newFullEnv(t, "")
	adm := e.login("admin", adminPW)
	e.createUser(adm, "mallory", "Quiet-Lantern-83q", domain.RoleManager)
	mal := e.login("mallory", "Quiet-Lantern-83q")
	s := e.server(t)
	e.must(202, req{method: http.MethodPost, path: "/api/v1/servers/" + s.ID + "/packages/upgrade-security", token: adm})

	for _, c := range []struct {
		name string
		r    req
		want int
	}{
		{"bad body", req{method: http.MethodPost, path: "/api/v1/projects/create", token: adm, body: "{"}, 400},
		{"invalid", req{method: http.MethodPost, path: "/api/v1/server-groups/create", token: adm, body: map[string]any{}}, 400},
		{"not found", req{method: http.MethodPatch, path: "/api/v1/servers/00000000-0000-0000-0000-000000000000/settings", token: adm, body: map[string]any{"name": "x"}}, 404},
		{"busy server", req{method: http.MethodPost, path: "/api/v1/servers/" + s.ID + "/reboot", token: adm}, 409},
		{"anonymous", req{method: http.MethodPost, path: "/api/v1/server-groups/create", body: map[string]any{"name": "g"}}, 401},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := lastSeq(t, e.st)
			if r := e.do(c.r); r.code != c.want {
				t.Fatalf("%d %s, want %d", r.code, r.body, c.want)
			}
			if after := lastSeq(t, e.st); after != before {
				items, _, _ := e.st.ListAudit(context.Background(), store.AuditFilter{Limit: int(after - before)})
				t.Fatalf("a failed write left %d entries: %+v", after-before, items)
			}
		})
	}

	before := lastSeq(t, e.st)
	if r := e.do(req{method: http.MethodPost, path: "/api/v1/users", token: mal, body: map[string]any{"username": "evil", "roles": []string{"admin"}}}); r.code != 403 {
		t.Fatalf("manager creates a user: %d %s", r.code, r.body)
	}
	items, _, err := e.st.ListAudit(context.Background(), store.AuditFilter{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(items) == 0 || items[0].Seq != before+1 {
		t.Fatalf("want exactly one new entry, got %+v", items)
	}
	d := items[0]
	if d.Action != actionDenied || d.Actor != "mallory" || d.Target != "route:POST /api/v1/users" || d.IP != "192.0.2.1" || d.Details["code"] != "forbidden" {
		t.Fatalf("denied entry: %+v", d)
	}
}

// currentImages is the coverage test's newer-image checker: every image is
// current (the registry check itself is tested against a real registry in
// internal/containersvc).
type currentImages struct{}

func (currentImages) Check(_ context.Context, refs []containers.ImageRef) ([]containers.ImageUpdate, error) {
	out := make([]containers.ImageUpdate, len(refs))
	for i, r := range refs {
		out[i] = containers.ImageUpdate{Image: r.Image, LocalDigest: r.Digest, RemoteDigest: r.Digest, CheckedAt: time.Now()}
	}
	return out, nil
}

package alerts_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/lcmproject/lcm/internal/alerts"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/notify"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/storetest"
)

// receiver is a real HTTPS receiver with its own CA that verifies the
// generic format's HMAC signature and can fail the first n requests or
// answer slowly.
type receiver struct {
	srv     *httptest.Server
	ca      *testutil.TestCA
	secret  string
	mu      sync.Mutex
	got     []notify.GenericPayload
	arrived int // requests read, answered or not
	badSigs int
	fail    int
	delay   time.Duration
	// hold, when set, keeps every request waiting until it is closed (a
	// receiver that accepts connections and never answers).
	hold chan struct{}
}

func newReceiver(t *testing.T, secret string) *receiver {
	t.Helper()
	r := &receiver{ca: testutil.NewTestCA(t), secret: secret}
	r.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.arrived++
		delay, hold := r.delay, r.hold
		r.mu.Unlock()
		if hold != nil {
			select {
			case <-hold:
			case <-req.Context().Done():
				return
			}
		}
		if delay > 0 {
			select {
			case <-time.After(delay):
			case <-req.Context().Done():
				return
			}
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		ts, _ := strconv.ParseInt(req.Header.Get(notify.HeaderTimestamp), 10, 64)
		if !notify.VerifySignature(r.secret, ts, body, req.Header.Get(notify.HeaderSignature)) {
			r.badSigs++
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		if r.fail > 0 {
			r.fail--
			http.Error(w, "receiver down for maintenance", http.StatusServiceUnavailable)
			return
		}
		var p notify.GenericPayload
		_ = json.Unmarshal(body, &p)
		r.got = append(r.got, p)
		_, _ = io.WriteString(w, `{"received":true}`)
	}))
	r.srv.TLS = &tls.Config{Certificates: []tls.Certificate{r.ca.ServerCert(t, "127.0.0.1")}}
	r.srv.StartTLS()
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.arrived
}

func (r *receiver) payloads() []notify.GenericPayload {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]notify.GenericPayload(nil), r.got...)
}

type env struct {
	st    *store.Store
	svc   *alerts.Service
	logs  *syncBuf
	clock *clock
	admin *domain.Principal
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// clock runs with real time (deliveries fall due by it) and jumps ahead
// on advance (cooldowns).
type clock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().UTC().Add(c.off)
}
func (c *clock) advance(d time.Duration) { c.mu.Lock(); c.off += d; c.mu.Unlock() }

func newEnv(t *testing.T, url string, backoff []time.Duration) *env {
	t.Helper()
	st := storetest.Open(t, url)
	logs := &syncBuf{}
	c := &clock{}
	svc := alerts.New(st, alerts.Options{Log: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Backoff: backoff, Now: c.now, Poll: 50 * time.Millisecond})
	t.Cleanup(svc.Close)
	return &env{st: st, svc: svc, logs: logs, clock: c, admin: &domain.Principal{UserID: "admin", Username: "admin", Roles: []string{domain.RoleAdmin}}}
}

func (e *env) server(t *testing.T, name string, groups ...string) string {
	t.Helper()
	srv, err := e.st.CreateServer(context.Background(), store.NewServer{Server: domain.Server{Name: name, Host: "192.0.2.1", Port: 22,
		Transport: domain.TransportSSH, Status: domain.ServerUnknown, AuthMethod: domain.AuthKey, HostKey: "k", Joined: true, GroupIDs: groups}})
	if err != nil {
		t.Fatal(err)
	}
	return srv.ID
}

func (e *env) unreachable(t *testing.T, id string, down bool) {
	t.Helper()
	n := 1
	if down {
		n = 2
	}
	for range n {
		if err := e.st.RecordContact(context.Background(), id, !down, "connection refused", e.clock.now()); err != nil {
			t.Fatal(err)
		}
	}
}

func (e *env) webhook(t *testing.T, r *receiver, name string) alerts.Channel {
	t.Helper()
	ch, err := e.svc.CreateChannel(context.Background(), alerts.ChannelInput{Name: &name, Type: ptr(notify.TypeWebhook),
		URL: ptr(r.srv.URL + "/hooks/secret-token-path"), CAPEM: &r.ca.CertPEM, SigningSecret: &r.secret})
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

func ptr[T any](v T) *T { return &v }

func (e *env) rule(t *testing.T, typ string, chans ...string) alerts.Rule {
	t.Helper()
	r, err := e.svc.CreateRule(context.Background(), e.admin, alerts.RuleInput{Name: ptr(typ + "-" + uuid.NewString()[:6]), Type: &typ,
		AllServers: ptr(true), ChannelIDs: &chans, Severity: ptr(alerts.SeverityCritical)})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (e *env) evaluate(t *testing.T) alerts.Report {
	t.Helper()
	rep, err := e.svc.Evaluate(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func (e *env) deliveries(t *testing.T, f store.AlertEventFilter) []store.AlertEvent {
	t.Helper()
	evs, err := e.svc.Events(context.Background(), e.admin, f)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// deliveryCount counts the stored deliveries with the given status ("":
// all of them).
func (e *env) deliveryCount(t *testing.T, status string) int {
	t.Helper()
	n := 0
	for _, ev := range e.deliveries(t, store.AlertEventFilter{}) {
		for _, d := range ev.Deliveries {
			if status == "" || d.Status == status {
				n++
			}
		}
	}
	return n
}

func TestFireRepeatResolve(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			e := newEnv(t, db.URL, []time.Duration{10 * time.Millisecond})
			r := newReceiver(t, "hmac-secret-for-tests")
			ch := e.webhook(t, r, "ops-hook")
			id := e.server(t, "web-1")
			rule := e.rule(t, alerts.TypeServerUnreachable, ch.ID)
			e.unreachable(t, id, true)

			rep := e.evaluate(t)
			if rep.Fired != 1 || rep.Open != 1 {
				t.Fatalf("report %+v", rep)
			}
			testutil.WaitFor(t, 5*time.Second, "the firing notification", func() bool { return len(r.payloads()) == 1 })
			p := r.payloads()[0]
			if p.Type != "alert.firing" || p.Server == nil || p.Server.Name != "web-1" || p.Rule.ID != rule.ID || !strings.Contains(p.Message, "connection refused") {
				t.Fatalf("payload %+v", p)
			}
			if rep := e.evaluate(t); rep.Fired+rep.Repeated+rep.Resolved != 0 {
				t.Fatalf("second evaluation within the cooldown notified: %+v", rep)
			}
			e.clock.advance(alerts.DefaultCooldown)
			if rep := e.evaluate(t); rep.Repeated != 1 {
				t.Fatalf("no repeat after the default cooldown: %+v", rep)
			}
			e.unreachable(t, id, false)
			if rep := e.evaluate(t); rep.Resolved != 1 || rep.Open != 0 {
				t.Fatalf("no resolution: %+v", rep)
			}
			// The queue is the alert_deliveries table: once its three rows
			// are sent, nothing is left to send, and the receiver has what
			// it will ever get.
			testutil.WaitFor(t, 15*time.Second, "three deliveries sent", func() bool {
				return e.deliveryCount(t, store.DeliverySent) == 3
			})
			if all := e.deliveryCount(t, ""); all != 3 {
				t.Fatalf("%d deliveries stored, want 3: %+v", all, e.deliveries(t, store.AlertEventFilter{}))
			}
			if n := len(r.payloads()); n != 3 {
				t.Fatalf("%d notifications: %+v\nhistory: %+v", n, r.payloads(), e.deliveries(t, store.AlertEventFilter{}))
			}
			kinds := map[string]int{}
			for _, p := range r.payloads() {
				kinds[p.Type]++ // deliveries are asynchronous: any order
			}
			if kinds["alert.firing"] != 1 || kinds["alert.repeat"] != 1 || kinds["alert.resolved"] != 1 {
				t.Fatalf("notifications %v", kinds)
			}
			if r.badSigs != 0 {
				t.Fatalf("%d requests with a bad signature", r.badSigs)
			}
			if err := e.svc.DeleteChannel(context.Background(), ch.ID); err != nil {
				t.Fatal(err)
			}
			rules, _ := e.svc.ListRules(context.Background(), e.admin)
			for _, x := range rules {
				if x.ID == rule.ID && len(x.ChannelIDs) != 0 {
					t.Fatalf("deleted channel still named by the rule: %+v", x)
				}
			}
			if len(rules) != 1+len(store.DefaultVulnDBRules) {
				t.Fatalf("rules %+v", rules)
			}
			testutil.WaitFor(t, 5*time.Second, "deliveries stored as sent", func() bool {
				evs := e.deliveries(t, store.AlertEventFilter{DeliveryStatus: store.DeliverySent})
				return len(evs) == 3
			})
			evs := e.deliveries(t, store.AlertEventFilter{Kind: store.AlertResolved})
			if len(evs) != 1 || evs[0].Deliveries[0].ChannelName != "ops-hook" || !strings.Contains(evs[0].Deliveries[0].Response, "received") {
				t.Fatalf("history %+v", evs)
			}
			if len(e.deliveries(t, store.AlertEventFilter{Subject: "nope"})) != 0 {
				t.Fatal("filter by server ignored")
			}
		})
	}
}

func TestRetriesThenRecovers(t *testing.T) {
	e := newEnv(t, "", []time.Duration{20 * time.Millisecond, 20 * time.Millisecond, 20 * time.Millisecond})
	r := newReceiver(t, "k-0123456789")
	r.fail = 2
	ch := e.webhook(t, r, "flaky")
	e.unreachable(t, e.server(t, "db-1"), true)
	e.rule(t, alerts.TypeServerUnreachable, ch.ID)
	e.evaluate(t)
	var d store.AlertDelivery
	testutil.WaitFor(t, 5*time.Second, "the delivery sent after retries", func() bool {
		evs := e.deliveries(t, store.AlertEventFilter{})
		if len(evs) == 1 && len(evs[0].Deliveries) == 1 {
			d = evs[0].Deliveries[0]
		}
		return d.Status == store.DeliverySent
	})
	if d.Attempts != 3 || len(r.payloads()) != 1 {
		t.Fatalf("delivery %+v, %d payloads", d, len(r.payloads()))
	}
	if !strings.Contains(e.logs.String(), "retrying") || !strings.Contains(e.logs.String(), "503") {
		t.Fatalf("retries not logged:\n%s", e.logs.String())
	}
}

func TestGivesUp(t *testing.T) {
	e := newEnv(t, "", []time.Duration{5 * time.Millisecond, 5 * time.Millisecond})
	r := newReceiver(t, "k-0123456789")
	r.fail = 1000
	ch := e.webhook(t, r, "dead")
	e.unreachable(t, e.server(t, "db-2"), true)
	e.rule(t, alerts.TypeServerUnreachable, ch.ID)
	e.evaluate(t)
	testutil.WaitFor(t, 5*time.Second, "the delivery given up", func() bool {
		return len(e.deliveries(t, store.AlertEventFilter{DeliveryStatus: store.DeliveryGivenUp})) == 1
	})
	d := e.deliveries(t, store.AlertEventFilter{})[0].Deliveries[0]
	if d.Attempts != 3 || !strings.Contains(d.LastError, "503") || !strings.Contains(d.Response, "maintenance") {
		t.Fatalf("delivery %+v", d)
	}
}

// A receiver that hangs delays neither the evaluation nor another channel.
func TestSlowReceiverIsolated(t *testing.T) {
	e := newEnv(t, "", []time.Duration{time.Second})
	slow, fast := newReceiver(t, "slow-key-0123"), newReceiver(t, "fast-key-0123")
	slow.delay = 4 * time.Second
	cs, cf := e.webhook(t, slow, "slow"), e.webhook(t, fast, "fast")
	for i := range 3 {
		e.unreachable(t, e.server(t, "app-"+strconv.Itoa(i)), true)
	}
	e.rule(t, alerts.TypeServerUnreachable, cs.ID, cf.ID)
	start := time.Now()
	rep := e.evaluate(t)
	if took := time.Since(start); took > time.Second || rep.Fired != 3 {
		t.Fatalf("evaluation took %v, report %+v", took, rep)
	}
	testutil.WaitFor(t, 3*time.Second, "the fast channel's notifications", func() bool { return len(fast.payloads()) == 3 })
	if n := len(slow.payloads()); n != 0 {
		t.Fatalf("slow receiver answered %d already", n)
	}
}

func TestRuleTypes(t *testing.T) {
	e := newEnv(t, "", nil)
	ctx := context.Background()
	g, err := e.st.CreateGroup(ctx, domain.Group{Name: "prod"})
	if err != nil {
		t.Fatal(err)
	}
	in, out := e.server(t, "in-group", g.ID), e.server(t, "outside")
	for _, id := range []string{in, out} {
		if err := e.st.SetFindings(ctx, id, []store.Finding{{CVE: "CVE-2026-0001", Package: "openssl", Severity: "high"}}); err != nil {
			t.Fatal(err)
		}
	}
	scoped, err := e.svc.CreateRule(ctx, e.admin, alerts.RuleInput{Name: ptr("cve prod"), Type: ptr(alerts.TypeSecurityCVE), GroupIDs: &[]string{g.ID}})
	if err != nil {
		t.Fatal(err)
	}
	critical, err := e.svc.CreateRule(ctx, e.admin, alerts.RuleInput{Name: ptr("cve critical"), Type: ptr(alerts.TypeSecurityCVE), AllServers: ptr(true),
		Params: &alerts.Params{MinSeverity: "critical"}})
	if err != nil {
		t.Fatal(err)
	}
	if scoped.Params.MinSeverity != "high" || scoped.Cooldown() != 360*time.Minute {
		t.Fatalf("defaults not applied: %+v", scoped)
	}
	rep := e.evaluate(t)
	if rep.Fired != 1 {
		t.Fatalf("report %+v", rep)
	}
	evs := e.deliveries(t, store.AlertEventFilter{RuleID: scoped.ID})
	if len(evs) != 1 || evs[0].Subject != in || evs[0].ServerName != "in-group" {
		t.Fatalf("events %+v", evs)
	}
	if len(e.deliveries(t, store.AlertEventFilter{RuleID: critical.ID})) != 0 {
		t.Fatal("critical rule fired on a high finding")
	}
	// A manager holding alerts:manage sees only rules of its groups.
	u, err := e.st.CreateUser(ctx, store.NewUser{Username: "mia", Active: true})
	if err != nil {
		t.Fatal(err)
	}
	mgr := &domain.Principal{UserID: u.ID, Username: "mia", Roles: []string{domain.RoleManager}}
	if err := e.st.AddGroupManager(ctx, g.ID, mgr.UserID); err != nil {
		t.Fatal(err)
	}
	rules, err := e.svc.ListRules(ctx, mgr)
	if err != nil {
		t.Fatal(err)
	}
	if len(rules) != 1 || rules[0].ID != scoped.ID {
		t.Fatalf("manager sees %+v", rules)
	}
	if _, err := e.svc.CreateRule(ctx, mgr, alerts.RuleInput{Name: ptr("all"), Type: ptr(alerts.TypeRebootRequired), AllServers: ptr(true)}); err == nil {
		t.Fatal("manager created an all-servers rule")
	}
	evs, err = e.svc.Events(ctx, mgr, store.AlertEventFilter{})
	if err != nil || len(evs) != 1 || evs[0].Subject != in {
		t.Fatalf("manager's history %+v %v", evs, err)
	}
}

func TestSecretsEncryptedAndMasked(t *testing.T) {
	e := newEnv(t, "", nil)
	ctx := context.Background()
	r := newReceiver(t, "hmac-never-shown")
	ch := e.webhook(t, r, "hook")
	mailCh, err := e.svc.SaveSystemMail(ctx, alerts.ChannelInput{Host: ptr("127.0.0.1"), Username: ptr("u"), Password: ptr("smtp-pass-never-shown")})
	if err != nil {
		t.Fatal(err)
	}
	list, err := e.svc.ListChannels(ctx)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(list)
	for _, s := range []string{"secret-token-path", "hmac-never-shown", "smtp-pass-never-shown"} {
		if strings.Contains(string(body), s) {
			t.Fatalf("listing shows %q: %s", s, body)
		}
	}
	if !ch.URLSet || !ch.SigningSecretSet || !strings.HasSuffix(ch.URLMasked, "/…") || !mailCh.PasswordSet {
		t.Fatalf("masks %+v %+v", ch, mailCh)
	}
	db, err := e.st.SQL()
	if err != nil {
		t.Fatal(err)
	}
	rows, err := db.Query("SELECT config, secrets FROM notification_channels")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var cfg string
		var sec []byte
		if err := rows.Scan(&cfg, &sec); err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{"secret-token-path", "hmac-never-shown", "smtp-pass-never-shown"} {
			if strings.Contains(cfg, s) || bytes.Contains(sec, []byte(s)) {
				t.Fatalf("%q stored in plain text", s)
			}
		}
	}
	mc, err := e.svc.SystemMailConfig(ctx)
	if err != nil || mc.Password != "smtp-pass-never-shown" || mc.Host != "127.0.0.1" {
		t.Fatalf("system mail config %+v %v", mc, err)
	}
	res, err := e.svc.TestChannel(ctx, ch.ID, "admin")
	if err != nil || !res.OK {
		t.Fatalf("test send %+v %v", res, err)
	}
	if strings.Contains(e.logs.String(), "secret-token-path") || strings.Contains(e.logs.String(), "hmac-never-shown") {
		t.Fatal("a secret reached the log")
	}
}

func TestImportMailConfig(t *testing.T) {
	e := newEnv(t, "", nil)
	ctx := context.Background()
	sink := testutil.StartSMTPSinkWith(t, testutil.SMTPSinkOptions{STARTTLS: true, User: "mailer", Password: "from-config-json"})
	cfg := mailConfig(sink.Port)
	ok, err := e.svc.ImportMailConfig(ctx, cfg)
	if err != nil || !ok {
		t.Fatalf("import %v %v", ok, err)
	}
	if ok, _ := e.svc.ImportMailConfig(ctx, cfg); ok {
		t.Fatal("imported twice")
	}
	// The CA of the sink is private: set it like an operator would.
	if _, err := e.svc.SaveSystemMail(ctx, alerts.ChannelInput{CAPEM: &sink.CAPEM}); err != nil {
		t.Fatal(err)
	}
	res, err := e.svc.TestSystemMail(ctx, "someone@example.test", "admin")
	if err != nil || !res.OK {
		t.Fatalf("test mail %+v %v", res, err)
	}
	if m := sink.WaitFor(t, "someone@example.test", 5*time.Second); !m.TLS || m.User != "mailer" {
		t.Fatalf("mail %+v", m)
	}
}

// TestSecretsSurviveKeyRotation: the channel secrets column is in the
// rotation registry; after rotate-db-key they still open.
func TestSecretsSurviveKeyRotation(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st := storetest.OpenIn(t, "", dir)
	svc := alerts.New(st, alerts.Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	t.Cleanup(svc.Close)
	if _, err := svc.SaveSystemMail(ctx, alerts.ChannelInput{Host: ptr("mail.example.test"), Username: ptr("u"), Password: ptr("rotate-me-pass")}); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range store.EncryptedColumns() {
		found = found || (c.Table == "notification_channels" && c.Column == "secrets")
	}
	if !found {
		t.Fatal("notification_channels.secrets is not in the rotation registry")
	}
	stats, err := st.RotateMasterKey(ctx, dir)
	if err != nil || stats.Fields < 1 {
		t.Fatalf("rotate: %+v %v", stats, err)
	}
	kr, _, err := st.ResolveMasterKey(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	st.SetKeyring(kr)
	mc, err := svc.SystemMailConfig(ctx)
	if err != nil || mc.Password != "rotate-me-pass" {
		t.Fatalf("after rotation: %+v %v", mc, err)
	}
}

// TestStaleDeliveryResumed: a replica stops while a delivery hangs; the
// next evaluation elsewhere, once the lease and the stale time ran out,
// sends it once.
func TestStaleDeliveryResumed(t *testing.T) {
	e := newEnv(t, "", []time.Duration{time.Hour})
	r := newReceiver(t, "resume-key-0123")
	r.delay = 30 * time.Second
	ch := e.webhook(t, r, "resumed")
	e.unreachable(t, e.server(t, "cache-1"), true)
	e.rule(t, alerts.TypeServerUnreachable, ch.ID)
	e.evaluate(t)
	testutil.WaitFor(t, 10*time.Second, "the attempt hangs at the receiver", func() bool { return r.requests() == 1 })
	e.svc.Close() // the replica stops: the delivery stays pending
	if d := e.deliveries(t, store.AlertEventFilter{})[0].Deliveries[0]; d.Status != store.DeliveryPending {
		t.Fatalf("delivery after the stop: %+v", d)
	}
	r.mu.Lock()
	r.delay = 0
	r.mu.Unlock()
	other := alerts.New(e.st, alerts.Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: func() time.Time { return e.clock.now().Add(5 * time.Minute) }}) // lease (2 min) + stale (2 min) passed
	t.Cleanup(other.Close)
	if _, err := other.Evaluate(context.Background()); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 5*time.Second, "the resumed delivery", func() bool {
		return len(e.deliveries(t, store.AlertEventFilter{DeliveryStatus: store.DeliverySent})) == 1
	})
	if _, err := other.Evaluate(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The second evaluation queued nothing (an evaluation stores its
	// deliveries before it returns), so nothing else can be sent.
	if all, sent := e.deliveryCount(t, ""), e.deliveryCount(t, store.DeliverySent); all != 1 || sent != 1 {
		t.Fatalf("%d deliveries stored (%d sent), want the one, sent", all, sent)
	}
	if n := len(r.payloads()); n != 1 {
		t.Fatalf("%d deliveries received, want 1", n)
	}
}

// TestDefaultVulnDBRules: a fresh installation has the two freshness
// rules of the vulnerability database (a migration creates them once):
// enabled, fleet-wide, warning from 48 hours and critical from 7 days.
// Evaluated against a database 3 days old only the warning fires; 8 days
// old, both.
func TestDefaultVulnDBRules(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			e := newEnv(t, db.URL, nil)
			rules, err := e.svc.ListRules(context.Background(), e.admin)
			if err != nil {
				t.Fatal(err)
			}
			var vuln []alerts.Rule
			for _, r := range rules {
				if r.Type == alerts.TypeVulnDBOutdated {
					vuln = append(vuln, r)
				}
			}
			if len(vuln) != 2 {
				t.Fatalf("default rules %+v", rules)
			}
			by := map[int]alerts.Rule{}
			for _, r := range vuln {
				if !r.Enabled || !r.AllServers {
					t.Fatalf("default rule not enabled fleet-wide: %+v", r)
				}
				by[r.Params.Hours] = r
			}
			if by[48].Severity != alerts.SeverityWarning || by[168].Severity != alerts.SeverityCritical {
				t.Fatalf("tiers %+v", by)
			}
			now := time.Now()
			for _, tc := range []struct {
				age  time.Duration
				want int
			}{{time.Hour, 0}, {72 * time.Hour, 1}, {8 * 24 * time.Hour, 2}} {
				got := alerts.Evaluate(vuln, alerts.Snapshot{Fleet: alerts.FleetState{VulnDBKnown: true, VulnDBUpdatedAt: now.Add(-tc.age)}, Now: now})
				fired := 0
				for _, msgs := range got {
					fired += len(msgs)
				}
				if fired != tc.want {
					t.Fatalf("database %s old: %d rules fire, want %d (%v)", tc.age, fired, tc.want, got)
				}
			}
		})
	}
}

// TestManyAlertsOneDeadReceiver: 2,000 alerts fire at once to three
// channels — a receiver that accepts connections and never answers, a
// healthy one, and an address that refuses connections. The dead receiver
// costs a bounded number of goroutines and attempts (perChannel workers,
// a few claimed deliveries), its waiting deliveries are never written, the
// healthy channel gets all 2,000 meanwhile, the refusing one retries each
// delivery with backoff and gives it up; once the dead receiver answers,
// every delivery reaches it.
func TestManyAlertsOneDeadReceiver(t *testing.T) {
	const n = 2000
	e := newEnv(t, "", []time.Duration{100 * time.Millisecond, 100 * time.Millisecond})
	ctx := context.Background()
	dead, healthy := newReceiver(t, "dead-key-0123456"), newReceiver(t, "healthy-key-0123")
	dead.hold = make(chan struct{})
	released := false
	defer func() {
		if !released {
			close(dead.hold)
		}
	}()
	cd, ch := e.webhook(t, dead, "dead"), e.webhook(t, healthy, "healthy")
	closed := testutil.FreePort(t)
	cr, err := e.svc.CreateChannel(ctx, alerts.ChannelInput{Name: ptr("refusing"), Type: ptr(notify.TypeWebhook),
		URL: ptr("https://127.0.0.1:" + strconv.Itoa(closed) + "/hook"), SigningSecret: ptr("refusing-key-012")})
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, 0, n)
	if err := e.st.InTx(ctx, func(tx *store.Store) error {
		for i := range n {
			srv, err := tx.CreateServer(ctx, store.NewServer{Server: domain.Server{Name: "many-" + strconv.Itoa(i), Host: "192.0.2.1", Port: 22,
				Transport: domain.TransportSSH, Status: domain.ServerUnknown, AuthMethod: domain.AuthKey, HostKey: "k", Joined: true}})
			if err != nil {
				return err
			}
			ids = append(ids, srv.ID)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	contacts := make([]store.Contact, 0, 2*n)
	for _, id := range ids {
		contacts = append(contacts, store.Contact{ServerID: id, Reason: "connection refused"}, store.Contact{ServerID: id, Reason: "connection refused"})
	}
	if err := e.st.RecordContacts(ctx, contacts, e.clock.now()); err != nil {
		t.Fatal(err)
	}
	e.rule(t, alerts.TypeServerUnreachable, cd.ID, ch.ID, cr.ID)
	created := e.clock.now()
	if rep := e.evaluate(t); rep.Fired != n {
		t.Fatalf("report %+v", rep)
	}
	evaluated := time.Now()
	testutil.WaitFor(t, 120*time.Second, "the first notifications of the healthy channel", func() bool { return len(healthy.payloads()) >= 100 })
	db, err := e.st.SQL()
	if err != nil {
		t.Fatal(err)
	}
	count := func(q string, args ...any) int {
		t.Helper()
		var c int
		if err := db.QueryRow(q, args...).Scan(&c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	// The dead channel: its waiting deliveries were never written (their
	// next attempt is still the alert's time). Only claimed ones moved: at
	// most a lane's worth (4 attempting, 8 queued) plus, per webhook
	// timeout (10 s) that passed, the 4 attempts that timed out.
	elapsed := time.Since(evaluated)
	untouched := count(`SELECT COUNT(*) FROM alert_deliveries WHERE channel_id = ? AND status = 'pending' AND attempts = 0 AND next_attempt_at <= ?`,
		cd.ID, created.Add(time.Second))
	bound := 12 + 4*int(elapsed/(10*time.Second)+1)
	if touched := n - untouched; touched > bound {
		t.Fatalf("dead channel: %d of %d deliveries written after %s, want at most %d", touched, n, elapsed.Round(time.Millisecond), bound)
	}
	// The service's own goroutines: the pump and perChannel workers per
	// channel (the in-process receivers' goroutines are not the service's).
	if g := serviceGoroutines(); g > 1+3*4 {
		t.Fatalf("%d goroutines of the alerts service with 2,000 deliveries waiting for a dead receiver, want at most %d", g, 1+3*4)
	}
	testutil.WaitFor(t, 240*time.Second, "the healthy channel's 2,000 notifications", func() bool { return len(healthy.payloads()) == n })
	t.Logf("the healthy channel got %d notifications in %s", n, time.Since(evaluated).Round(time.Millisecond))
	testutil.WaitFor(t, 240*time.Second, "the refusing channel's deliveries given up", func() bool {
		return count(`SELECT COUNT(*) FROM alert_deliveries WHERE channel_id = ? AND status = 'given_up' AND attempts = 3`, cr.ID) == n
	})
	if !strings.Contains(e.logs.String(), "connection refused") {
		t.Fatal("the refusals are not logged")
	}
	// The dead receiver comes back: everything reaches it.
	dead.mu.Lock()
	close(dead.hold)
	dead.hold, released = nil, true
	dead.mu.Unlock()
	testutil.WaitFor(t, 240*time.Second, "every delivery to the receiver that came back", func() bool {
		return count(`SELECT COUNT(*) FROM alert_deliveries WHERE channel_id = ? AND status = 'sent'`, cd.ID) == n
	})
	if got := len(dead.payloads()); got != n || dead.badSigs != 0 {
		t.Fatalf("the receiver got %d notifications (%d bad signatures), want %d", got, dead.badSigs, n)
	}
	t.Logf("alerts service goroutines at the end: %d (process: %d)", serviceGoroutines(), runtime.NumGoroutine())
}

// serviceGoroutines counts the goroutines running code of the alerts
// service (from a dump of every goroutine's stack).
func serviceGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "internal/alerts.(*Service)") {
			count++
		}
	}
	return count
}

package httpapi

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/lcmproject/lcm/internal/alerts"
	"github.com/lcmproject/lcm/internal/testutil"
)

type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *lockedBuf) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// TestAlertsAPISecrets drives channels, rules, test sends, evaluation and
// history through the router and proves the secrets never come back: not
// in any answer, not in the log (debug level, access log on), not in the
// audit log, not in any NATS stream or KV bucket.
func TestAlertsAPISecrets(t *testing.T) {
	e := newFullEnv(t, "")
	logs := &lockedBuf{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	svc := alerts.New(e.st, alerts.Options{Log: log, Backoff: []time.Duration{10 * time.Millisecond}})
	t.Cleanup(svc.Close)
	d := e.srv.deps
	d.Log, d.AccessLog, d.Debug = log, true, true
	d.Services.Alerts = svc
	e.srv = New(d)

	ca := testutil.NewTestCA(t)
	var mu sync.Mutex
	var hits []string
	rcv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		hits = append(hits, string(b))
		mu.Unlock()
		_, _ = io.WriteString(w, "thanks")
	}))
	rcv.TLS = &tls.Config{Certificates: []tls.Certificate{ca.ServerCert(t, "127.0.0.1")}}
	rcv.StartTLS()
	t.Cleanup(rcv.Close)

	secrets := []string{"T0KEN-IN-THE-PATH", "SIGNING-SECRET-XYZ", "SMTP-PASSWORD-QRS", "GOTIFY-TOKEN-ABC"}
	adm := e.login("admin", adminPW)
	var answers []string
	call := func(want int, r req) resp {
		t.Helper()
		r.token = adm
		out := e.do(r)
		if out.code != want {
			t.Fatalf("%s %s: %d %s, want %d", r.method, r.path, out.code, out.body, want)
		}
		answers = append(answers, string(out.body))
		return out
	}
	hook := call(201, req{method: http.MethodPost, path: "/api/v1/notification-channels", body: map[string]any{"name": "hook", "type": "webhook",
		"url": rcv.URL + "/hooks/" + secrets[0], "signingSecret": secrets[1], "caPem": ca.CertPEM}})
	hookID := e.jsonField(hook, "id")
	call(201, req{method: http.MethodPost, path: "/api/v1/notification-channels", body: map[string]any{"name": "gotify", "type": "webhook",
		"format": "gotify", "url": rcv.URL + "/g", "token": secrets[3], "caPem": ca.CertPEM}})
	mailCh := call(201, req{method: http.MethodPost, path: "/api/v1/notification-channels", body: map[string]any{"name": "mail", "type": "smtp",
		"host": "127.0.0.1", "port": e.sink.Port, "tls": "none", "username": "u", "password": secrets[2], "to": []string{"ops@example.test"}}})
	call(200, req{method: http.MethodPatch, path: "/api/v1/notification-channels/" + e.jsonField(mailCh, "id"), body: map[string]any{"password": secrets[2]}})
	call(200, req{method: http.MethodGet, path: "/api/v1/notification-channels"})
	test := call(200, req{method: http.MethodPost, path: "/api/v1/notification-channels/" + hookID + "/test"})
	if !strings.Contains(string(test.body), `"ok":true`) || !strings.Contains(string(test.body), "HTTP 200 thanks") {
		t.Fatalf("test send: %s", test.body)
	}
	call(200, req{method: http.MethodPut, path: "/api/v1/settings/mail-channel", body: map[string]any{"host": "127.0.0.1", "port": e.sink.Port,
		"tls": "none", "username": "u", "password": secrets[2]}})
	call(200, req{method: http.MethodGet, path: "/api/v1/settings/mail-channel"})

	srv := e.server(t)
	for range 2 {
		if err := e.st.RecordContact(context.Background(), srv.ID, false, "connection refused", time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	call(201, req{method: http.MethodPost, path: "/api/v1/alert-rules", body: map[string]any{"name": "down", "type": "server_unreachable",
		"allServers": true, "severity": "critical", "channelIds": []string{hookID}}})
	ev := call(200, req{method: http.MethodPost, path: "/api/v1/alerts/evaluate"})
	if !strings.Contains(string(ev.body), `"fired":1`) {
		t.Fatalf("evaluate: %s", ev.body)
	}
	testutil.WaitFor(t, 5*time.Second, "the delivery", func() bool {
		r := e.do(req{method: http.MethodGet, path: "/api/v1/alert-events?deliveryStatus=sent", token: adm})
		return strings.Contains(string(r.body), `"status":"sent"`)
	})
	call(200, req{method: http.MethodGet, path: "/api/v1/alert-events?kind=firing&serverId=" + srv.ID})

	// Client errors are 4xx with a code.
	for _, c := range []struct {
		r    req
		code string
	}{
		{req{method: http.MethodPost, path: "/api/v1/notification-channels", body: map[string]any{"name": "x", "type": "webhook", "url": "http://insecure.example.test/"}}, "https_required"},
		{req{method: http.MethodPost, path: "/api/v1/notification-channels", body: map[string]any{"name": "x", "type": "smtp", "host": "m", "to": []string{"nope"}}}, "invalid_to"},
		{req{method: http.MethodPost, path: "/api/v1/alert-rules", body: map[string]any{"name": "x", "type": "disk_capacity"}}, "invalid_scope"},
		{req{method: http.MethodPost, path: "/api/v1/alert-rules", body: map[string]any{"name": "x", "type": "disk_capacity", "allServers": true, "channelIds": []string{"missing"}}}, "unknown_channel"},
		{req{method: http.MethodGet, path: "/api/v1/alert-events?kind=bogus"}, "invalid_kind"},
		{req{method: http.MethodGet, path: "/api/v1/alert-events?since=yesterday"}, "invalid_since"},
	} {
		c.r.token = adm
		out := e.do(c.r)
		if out.code != http.StatusBadRequest || out.code2(t) != c.code {
			t.Fatalf("%s %s: %d %s, want 400 %s", c.r.method, c.r.path, out.code, out.body, c.code)
		}
	}

	// Nowhere to be found.
	mu.Lock()
	received := strings.Join(hits, "\n")
	mu.Unlock()
	check := func(where, text string) {
		t.Helper()
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Fatalf("%s contains the secret %q", where, s)
			}
		}
	}
	check("API answers", strings.Join(answers, "\n"))
	check("log", logs.String())
	check("notification payloads", received)
	db, err := e.st.SQL()
	if err != nil {
		t.Fatal(err)
	}
	var audit strings.Builder
	rows, err := db.Query("SELECT action, target, details FROM audit_log")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var a, tg, det string
		if err := rows.Scan(&a, &tg, &det); err != nil {
			t.Fatal(err)
		}
		audit.WriteString(a + " " + tg + " " + det + "\n")
	}
	rows.Close()
	if !strings.Contains(audit.String(), "notification_channel.create") || !strings.Contains(audit.String(), `"password":"set"`) {
		t.Fatalf("audit entries missing:\n%s", audit.String())
	}
	check("audit log", audit.String())
	dump := natsDump(t, e)
	if dump == "" {
		t.Fatal("read nothing from NATS: the check would prove nothing")
	}
	check("NATS", dump)
}

// natsDump reads every message of every stream and every value of every
// KV bucket (a bucket is the stream KV_<name>) of the control plane's NATS.
func natsDump(t *testing.T, e *fullEnv) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	js := e.p.Bus.JS
	var out strings.Builder
	names := js.StreamNames(ctx)
	for name := range names.Name() {
		s, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
			m, err := s.GetMsg(ctx, seq)
			if err != nil {
				continue // deleted or acked away
			}
			out.Write(m.Data)
			out.WriteByte('\n')
		}
	}
	if err := names.Err(); err != nil && !errors.Is(err, jetstream.ErrEndOfData) {
		t.Fatal(err)
	}
	return out.String()
}

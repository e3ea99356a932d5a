package notify_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/notify"
	"github.com/lcmproject/lcm/internal/testutil"
)

func msg() notify.Message {
	return notify.Message{Kind: "firing", EventID: "ev-1", RuleID: "r-1", RuleName: "Disk full", RuleType: "disk_capacity",
		Severity: "critical", ServerID: "s-1", Server: "web-1", Text: "The root filesystem is 97 % full.", CreatedAt: time.Now()}
}

func TestSMTPStartTLSWithAuth(t *testing.T) {
	sink := testutil.StartSMTPSinkWith(t, testutil.SMTPSinkOptions{STARTTLS: true, User: "alerts", Password: "s3cret-Pass"})
	c := notify.Config{Host: "127.0.0.1", Port: sink.Port, TLS: notify.TLSStartTLS, Username: "alerts", From: "lcm@example.test",
		To: []string{"ops@example.test", "oncall@example.test"}, CAPEM: sink.CAPEM}
	if err := notify.Validate(notify.TypeSMTP, &c, notify.Secrets{Password: "s3cret-Pass"}, false); err != nil {
		t.Fatal(err)
	}
	res, err := notify.Send(context.Background(), notify.TypeSMTP, c, notify.Secrets{Password: "s3cret-Pass"}, msg())
	if err != nil {
		t.Fatal(err)
	}
	m := sink.WaitFor(t, "oncall@example.test", 5*time.Second)
	// The answer is the server's own reply to the message, with its queue id.
	if want := "250 2.0.0 Ok: queued as " + m.QueueID; !strings.HasSuffix(res.Answer, want) || m.QueueID == "" {
		t.Fatalf("answer %q, want the server's reply %q", res.Answer, want)
	}
	if !m.TLS || m.User != "alerts" || len(m.To) != 2 {
		t.Fatalf("mail not sent over STARTTLS with auth: %+v", m)
	}
	if !strings.Contains(m.Data, "Subject: [LCM ALERT] Disk full on web-1") || !strings.Contains(m.Text(), "97 % full") {
		t.Fatalf("mail content: %s", m.Data)
	}
}

func TestSMTPImplicitTLS(t *testing.T) {
	sink := testutil.StartSMTPSinkWith(t, testutil.SMTPSinkOptions{Implicit: true, User: "u", Password: "p4ss"})
	c := notify.Config{Host: "127.0.0.1", Port: sink.Port, TLS: notify.TLSImplicit, Username: "u", To: []string{"a@example.test"}, CAPEM: sink.CAPEM}
	if _, err := notify.Send(context.Background(), notify.TypeSMTP, c, notify.Secrets{Password: "p4ss"}, msg()); err != nil {
		t.Fatal(err)
	}
	if m := sink.WaitFor(t, "a@example.test", 5*time.Second); !m.TLS {
		t.Fatal("not encrypted")
	}
}

func TestSMTPRefusals(t *testing.T) {
	sink := testutil.StartSMTPSinkWith(t, testutil.SMTPSinkOptions{STARTTLS: true, User: "u", Password: "right-one"})
	base := notify.Config{Host: "127.0.0.1", Port: sink.Port, TLS: notify.TLSStartTLS, Username: "u", To: []string{"a@example.test"}, CAPEM: sink.CAPEM}
	t.Run("wrong password", func(t *testing.T) {
		_, err := notify.Send(context.Background(), notify.TypeSMTP, base, notify.Secrets{Password: "wrong-one"}, msg())
		if err == nil || !strings.Contains(err.Error(), "535") || strings.Contains(err.Error(), "wrong-one") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("untrusted certificate", func(t *testing.T) {
		c := base
		c.CAPEM = testutil.NewTestCA(t).CertPEM
		_, err := notify.Send(context.Background(), notify.TypeSMTP, c, notify.Secrets{Password: "right-one"}, msg())
		if err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Fatalf("err = %v", err)
		}
	})
	if n := sink.Count("a@example.test"); n != 0 {
		t.Fatalf("%d mails accepted", n)
	}
}

// receiver is a real HTTPS server with its own CA that records requests.
type receiver struct {
	srv  *httptest.Server
	ca   *testutil.TestCA
	mu   sync.Mutex
	reqs []recorded
	fail int // answer 503 to this many requests first
}

type recorded struct {
	path   string
	header http.Header
	body   []byte
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{ca: testutil.NewTestCA(t)}
	r.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.reqs = append(r.reqs, recorded{req.URL.Path, req.Header.Clone(), b})
		failing := r.fail > 0
		r.fail--
		r.mu.Unlock()
		if failing {
			http.Error(w, "try later", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	r.srv.TLS = &tls.Config{Certificates: []tls.Certificate{r.ca.ServerCert(t, "127.0.0.1")}}
	r.srv.StartTLS()
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) last(t *testing.T) recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.reqs) == 0 {
		t.Fatal("no request received")
	}
	return r.reqs[len(r.reqs)-1]
}

func TestGenericWebhookSigned(t *testing.T) {
	r := newReceiver(t)
	c := notify.Config{Format: notify.FormatGeneric, CAPEM: r.ca.CertPEM}
	sec := notify.Secrets{URL: r.srv.URL + "/hook/very-secret-path", SigningSecret: "hmac-key-0123456789"}
	if err := notify.Validate(notify.TypeWebhook, &c, sec, false); err != nil {
		t.Fatal(err)
	}
	res, err := notify.Send(context.Background(), notify.TypeWebhook, c, sec, msg())
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer != "HTTP 200 ok" {
		t.Fatalf("answer %q", res.Answer)
	}
	got := r.last(t)
	ts, err := strconv.ParseInt(got.header.Get(notify.HeaderTimestamp), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if !notify.VerifySignature("hmac-key-0123456789", ts, got.body, got.header.Get(notify.HeaderSignature)) {
		t.Fatalf("signature %q does not verify", got.header.Get(notify.HeaderSignature))
	}
	if notify.VerifySignature("other-key", ts, got.body, got.header.Get(notify.HeaderSignature)) {
		t.Fatal("signature verifies with the wrong key")
	}
	var p notify.GenericPayload
	if err := json.Unmarshal(got.body, &p); err != nil {
		t.Fatal(err)
	}
	if p.Version != 1 || p.Type != "alert.firing" || p.Rule.Name != "Disk full" || p.Server == nil || p.Server.Name != "web-1" || p.Severity != "critical" {
		t.Fatalf("payload %+v", p)
	}
}

func TestWebhookFormats(t *testing.T) {
	r := newReceiver(t)
	for _, f := range notify.Formats {
		t.Run(f, func(t *testing.T) {
			c := notify.Config{Format: f, CAPEM: r.ca.CertPEM, Topic: "alerts"}
			sec := notify.Secrets{URL: r.srv.URL + "/" + f, Token: "tok-" + f}
			if err := notify.Validate(notify.TypeWebhook, &c, sec, false); err != nil {
				t.Fatal(err)
			}
			if _, err := notify.Send(context.Background(), notify.TypeWebhook, c, sec, msg()); err != nil {
				t.Fatal(err)
			}
			got := r.last(t)
			var v map[string]any
			if err := json.Unmarshal(got.body, &v); err != nil {
				t.Fatalf("body is not JSON: %s", got.body)
			}
			want := map[string]string{notify.FormatSlack: "text", notify.FormatMattermost: "text", notify.FormatDiscord: "content",
				notify.FormatTeams: "attachments", notify.FormatNtfy: "topic", notify.FormatGotify: "message", notify.FormatGeneric: "rule"}[f]
			if _, ok := v[want]; !ok {
				t.Fatalf("%s body lacks %q: %s", f, want, got.body)
			}
			switch f {
			case notify.FormatGotify:
				if got.path != "/gotify/message" || got.header.Get("X-Gotify-Key") != "tok-gotify" {
					t.Fatalf("gotify path %q key %q", got.path, got.header.Get("X-Gotify-Key"))
				}
			case notify.FormatNtfy:
				if got.header.Get("Authorization") != "Bearer tok-ntfy" || v["topic"] != "alerts" {
					t.Fatalf("ntfy auth %q body %s", got.header.Get("Authorization"), got.body)
				}
			}
		})
	}
}

func TestWebhookRefusals(t *testing.T) {
	r := newReceiver(t)
	secretURL := r.srv.URL + "/hook/path-is-a-credential"
	t.Run("wrong CA", func(t *testing.T) {
		c := notify.Config{Format: notify.FormatSlack, CAPEM: testutil.NewTestCA(t).CertPEM}
		_, err := notify.Send(context.Background(), notify.TypeWebhook, c, notify.Secrets{URL: secretURL}, msg())
		if err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Fatalf("err = %v", err)
		}
		if strings.Contains(err.Error(), "path-is-a-credential") {
			t.Fatalf("error leaks the URL: %v", err)
		}
	})
	t.Run("system roots do not trust a private CA", func(t *testing.T) {
		_, err := notify.Send(context.Background(), notify.TypeWebhook, notify.Config{Format: notify.FormatSlack}, notify.Secrets{URL: secretURL}, msg())
		if err == nil {
			t.Fatal("sent to an unverified receiver")
		}
	})
	t.Run("error answer", func(t *testing.T) {
		r.fail = 1
		res, err := notify.Send(context.Background(), notify.TypeWebhook, notify.Config{Format: notify.FormatSlack, CAPEM: r.ca.CertPEM}, notify.Secrets{URL: secretURL}, msg())
		if err == nil || !strings.Contains(res.Answer, "503") || strings.Contains(err.Error(), "path-is-a-credential") {
			t.Fatalf("answer %q err %v", res.Answer, err)
		}
	})
	t.Run("plain http", func(t *testing.T) {
		c := notify.Config{}
		err := notify.Validate(notify.TypeWebhook, &c, notify.Secrets{URL: "http://hooks.example.test/x"}, false)
		var de *domain.Error
		if !errors.As(err, &de) || de.Code != "https_required" {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name, typ string
		c         notify.Config
		s         notify.Secrets
		code      string
	}{
		{"smtp ok", notify.TypeSMTP, notify.Config{Host: "mail.example.test", To: []string{"a@example.test"}}, notify.Secrets{}, ""},
		{"smtp no host", notify.TypeSMTP, notify.Config{To: []string{"a@example.test"}}, notify.Secrets{}, "invalid_host"},
		{"smtp bad tls", notify.TypeSMTP, notify.Config{Host: "m", TLS: "ssl", To: []string{"a@example.test"}}, notify.Secrets{}, "invalid_tls"},
		{"smtp no rcpt", notify.TypeSMTP, notify.Config{Host: "m"}, notify.Secrets{}, "invalid_to"},
		{"smtp bad rcpt", notify.TypeSMTP, notify.Config{Host: "m", To: []string{"not an address"}}, notify.Secrets{}, "invalid_to"},
		{"smtp bad port", notify.TypeSMTP, notify.Config{Host: "m", Port: 70000, To: []string{"a@example.test"}}, notify.Secrets{}, "invalid_port"},
		{"smtp bad ca", notify.TypeSMTP, notify.Config{Host: "m", To: []string{"a@example.test"}, CAPEM: "nope"}, notify.Secrets{}, "invalid_ca"},
		{"webhook ok", notify.TypeWebhook, notify.Config{}, notify.Secrets{URL: "https://hooks.example.test/x"}, ""},
		{"webhook http", notify.TypeWebhook, notify.Config{}, notify.Secrets{URL: "http://hooks.example.test/x"}, "https_required"},
		{"webhook no url", notify.TypeWebhook, notify.Config{}, notify.Secrets{}, "invalid_url"},
		{"webhook userinfo", notify.TypeWebhook, notify.Config{}, notify.Secrets{URL: "https://u:p@hooks.example.test/"}, "invalid_url"},
		{"webhook format", notify.TypeWebhook, notify.Config{Format: "irc"}, notify.Secrets{URL: "https://h.example.test/"}, "invalid_format"},
		{"ntfy topic", notify.TypeWebhook, notify.Config{Format: notify.FormatNtfy}, notify.Secrets{URL: "https://ntfy.example.test/"}, "invalid_topic"},
		{"gotify token", notify.TypeWebhook, notify.Config{Format: notify.FormatGotify}, notify.Secrets{URL: "https://g.example.test/"}, "invalid_token"},
		{"type", "sms", notify.Config{}, notify.Secrets{}, "invalid_type"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := notify.Validate(tc.typ, &tc.c, tc.s, false)
			code := ""
			var de *domain.Error
			if errors.As(err, &de) {
				code = de.Code
			} else if err != nil {
				t.Fatalf("uncategorised error %v", err)
			}
			if code != tc.code {
				t.Fatalf("code %q, want %q (%v)", code, tc.code, err)
			}
		})
	}
	c := notify.Config{Host: "m", TLS: notify.TLSImplicit, To: []string{"a@example.test"}}
	if err := notify.Validate(notify.TypeSMTP, &c, notify.Secrets{}, false); err != nil || c.Port != 465 {
		t.Fatalf("default port %d err %v", c.Port, err)
	}
}

func FuzzValidateWebhook(f *testing.F) {
	for _, s := range []string{"https://hooks.example.test/x", "http://a", "", "https://", "https://u@h/", "ftp://x", "https://[::1]:99/p?q"} {
		f.Add(s, "generic", "topic")
	}
	f.Fuzz(func(t *testing.T, url, format, topic string) {
		c := notify.Config{Format: format, Topic: topic}
		err := notify.Validate(notify.TypeWebhook, &c, notify.Secrets{URL: url, Token: "t"}, false)
		var de *domain.Error
		if err != nil && !errors.As(err, &de) {
			t.Fatalf("uncategorised error %v", err)
		}
		if err == nil && !strings.HasPrefix(strings.ToLower(strings.TrimSpace(url)), "https://") {
			t.Fatalf("accepted %q", url)
		}
		_ = notify.MaskURL(url)
	})
}

func FuzzCertPool(f *testing.F) {
	f.Add("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, pemText string) {
		_, err := notify.CertPool(pemText)
		var de *domain.Error
		if err != nil && !errors.As(err, &de) {
			t.Fatalf("uncategorised error %v", err)
		}
	})
}

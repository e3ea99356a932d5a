package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/testutil"
)

// TestSMTPPasswordMovesIntoStore: config.json's smtp.* becomes the
// encrypted system mail channel on the first start, smtp.password is
// deleted from the file, and account mails keep authenticating with it
// after a restart (read from the database).
func TestSMTPPasswordMovesIntoStore(t *testing.T) {
	const pw = "Config-Json-Smtp-Pass-1"
	sink := testutil.StartSMTPSinkWith(t, testutil.SMTPSinkOptions{User: "mailer", Password: pw, AuthWithoutTLS: true})
	dir := t.TempDir()
	cfg := map[string]any{"smtp": map[string]any{"host": "127.0.0.1", "port": sink.Port, "from": "lcm@example.test", "tls": "none",
		"username": "mailer", "password": pw}}
	a := testutil.StartAPI(t, testutil.APIOptions{Dir: dir, Dev: true, Config: cfg})
	raw, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), pw) || strings.Contains(string(raw), `"password"`) {
		t.Fatalf("smtp.password still in config.json:\n%s", raw)
	}
	var file map[string]any
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	if smtp, _ := file["smtp"].(map[string]any); smtp["host"] != "127.0.0.1" || smtp["username"] != "mailer" {
		t.Fatalf("other smtp keys lost: %v", file["smtp"])
	}
	lr, _ := e2eLoginAs(t, a, "admin", a.AdminPassword)
	var mc struct {
		Configured bool `json:"configured"`
		Channel    struct {
			PasswordSet bool `json:"passwordSet"`
			System      bool `json:"system"`
		} `json:"channel"`
	}
	if resp, body := a.Do("GET", "/api/v1/settings/mail-channel", lr.Token, nil, &mc); resp.StatusCode != 200 || !mc.Configured || !mc.Channel.PasswordSet || !mc.Channel.System {
		t.Fatalf("mail channel: %d %s", resp.StatusCode, body)
	}
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	b := testutil.StartAPI(t, testutil.APIOptions{Dir: dir, Dev: true})
	lr, _ = e2eLoginAs(t, b, "admin", a.AdminPassword)
	if resp, body := b.Do("POST", "/api/v1/users", lr.Token, map[string]any{"username": "otto", "email": "otto@example.test", "roles": []string{"manager"}}, nil); resp.StatusCode != 201 {
		t.Fatalf("invite: %d %s", resp.StatusCode, body)
	}
	if m := sink.WaitFor(t, "otto@example.test", 15*time.Second); m.User != "mailer" {
		t.Fatalf("invitation not sent with the stored credentials: %+v", m)
	}
	if strings.Contains(a.Stderr()+b.Stderr(), pw) {
		t.Fatal("the SMTP password reached the log")
	}
	if !strings.Contains(a.Stderr(), "removed smtp.password from config.json") {
		t.Fatalf("no log line about the migration:\n%s", a.Stderr())
	}
}

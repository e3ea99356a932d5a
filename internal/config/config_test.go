package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadCreatesSecureFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.json")
	cfg, created, err := Load(path)
	if err != nil || !created {
		t.Fatalf("Load: created=%v err=%v", created, err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", st.Mode().Perm())
	}
	if len(cfg.JWTSecret) != 64 {
		t.Fatalf("jwt secret length %d, want 64 (48 bytes base64url)", len(cfg.JWTSecret))
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	again, created, err := Load(path)
	if err != nil || created || again.JWTSecret != cfg.JWTSecret {
		t.Fatalf("second Load changed things: created=%v err=%v", created, err)
	}
}

func TestLoadErrorsNameFilePositionKey(t *testing.T) {
	tests := []struct {
		name, body string
		want       []string
	}{
		{"syntax", "{\n  \"port\": 9310,\n  \"host\" \"x\"\n}", []string{"config.json:3:", "malformed JSON"}},
		{"type", "{\n  \"port\": \"high\"\n}", []string{"config.json:2:", `key "port"`, "expected int"}},
		{"unknown key", "{\n  \"prot\": 1\n}", []string{"config.json:2:", `key "prot"`, "unknown configuration key"}},
		{"truncated", "{\"port\": 1", []string{"config.json", "malformed JSON"}},
		{"trailing", "{} {}", []string{"config.json:1:", "unexpected data"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.json")
			if err := os.WriteFile(path, []byte(tt.body), 0o600); err != nil {
				t.Fatal(err)
			}
			_, _, err := Load(path)
			if err == nil {
				t.Fatal("want error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if b, _ := os.ReadFile(path); string(b) != tt.body {
				t.Fatal("file was modified")
			}
		})
	}
}

func TestValidate(t *testing.T) {
	cfg := Defaults()
	cfg.JWTSecret = strings.Repeat("x", 31)
	cfg.LogLevel = "loud"
	cfg.Port = 0
	cfg.StorageHistoryDays = 30
	err := cfg.Validate()
	for _, key := range []string{"jwt_secret", "log_level", `"port"`, "storage_history_days"} {
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("error %v does not name %s", err, key)
		}
	}
	cfg = Defaults()
	cfg.JWTSecret = strings.Repeat("x", 32)
	if err := cfg.Validate(); err != nil {
		t.Fatalf("32-char secret refused: %v", err)
	}
	var ce *Error
	cfg.JWTSecret = "short"
	if !errors.As(cfg.Validate(), &ce) {
		t.Fatal("want *Error")
	}
}

func TestApplyEnv(t *testing.T) {
	cfg := Defaults()
	env := map[string]string{"LCM_PORT": "9999", "LCM_DATABASE_URL": "postgres://u:p@h/db", "LCM_ALLOWED_IPS": "localhost, 10.0.0.0/8", "LCM_ACCESS_LOG": "false"}
	if err := cfg.ApplyEnv(func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if cfg.Port != 9999 || cfg.Database.URL != "postgres://u:p@h/db" || len(cfg.AllowedIPs) != 2 || cfg.AccessLog {
		t.Fatalf("env not applied: %+v", cfg)
	}
	if got := cfg.Redacted().Database.URL; got != "postgres://u:***@h/db" {
		t.Fatalf("redacted url %q", got)
	}
	secretFile := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secretFile, []byte(strings.Repeat("f", 40)+"\n"), 0o600)
	env = map[string]string{"LCM_JWT_SECRET_FILE": secretFile}
	if err := cfg.ApplyEnv(func(k string) string { return env[k] }); err != nil || cfg.JWTSecret != strings.Repeat("f", 40) {
		t.Fatalf("_FILE not applied: %v", err)
	}
	env = map[string]string{"LCM_PORT": "x"}
	if err := cfg.ApplyEnv(func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), "LCM_PORT") {
		t.Fatalf("want error naming LCM_PORT, got %v", err)
	}
}

func TestRemoveSMTPPassword(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.json")
	orig := `{"jwt_secret": "` + strings.Repeat("x", 40) + `", "port": 9999, "smtp": {"host": "mail.example.test", "port": 587, "password": "in-plain-text", "tls": "starttls"}}`
	if err := os.WriteFile(path, []byte(orig), 0o640); err != nil {
		t.Fatal(err)
	}
	removed, err := RemoveSMTPPassword(path)
	if err != nil || !removed {
		t.Fatalf("removed %v err %v", removed, err)
	}
	data, _ := os.ReadFile(path)
	if strings.Contains(string(data), "in-plain-text") || strings.Contains(string(data), "password") {
		t.Fatalf("password still in the file:\n%s", data)
	}
	cfg, _, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Port != 9999 || cfg.SMTP.Host != "mail.example.test" || cfg.SMTP.TLS != "starttls" || cfg.SMTP.Password != "" {
		t.Fatalf("other keys changed: %+v", cfg)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v", st.Mode().Perm())
	}
	if removed, err := RemoveSMTPPassword(path); removed || err != nil {
		t.Fatalf("second run: %v %v", removed, err)
	}
}

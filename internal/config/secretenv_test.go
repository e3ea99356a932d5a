package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSecretEnv(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	withNL, crlf, empty, spaced := write("nl", "s3cret\n"), write("crlf", "s3cret\r\n"), write("empty", "\n"), write("sp", " s3cret \n")
	tests := []struct {
		name    string
		env     map[string]string
		want    string
		ok      bool
		wantErr string
	}{
		{"unset", nil, "", false, ""},
		{"value", map[string]string{"X": "s3cret"}, "s3cret", true, ""},
		{"file, newline dropped", map[string]string{"X_FILE": withNL}, "s3cret", true, ""},
		{"file, CRLF dropped", map[string]string{"X_FILE": crlf}, "s3cret", true, ""},
		{"file, spaces kept", map[string]string{"X_FILE": spaced}, " s3cret ", true, ""},
		{"both refused", map[string]string{"X": "a", "X_FILE": withNL}, "", false, "set X or X_FILE, not both"},
		{"empty file refused", map[string]string{"X_FILE": empty}, "", false, "is empty"},
		{"missing file", map[string]string{"X_FILE": filepath.Join(dir, "nope")}, "", false, "X_FILE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, ok, err := SecretEnv(func(k string) string { return tt.env[k] }, "X")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "s3cret") {
					t.Fatalf("error leaks the secret: %v", err)
				}
				return
			}
			if err != nil || v != tt.want || ok != tt.ok {
				t.Fatalf("got %q %v %v, want %q %v", v, ok, err, tt.want, tt.ok)
			}
		})
	}
}

func TestFirstSecretEnv(t *testing.T) {
	f := filepath.Join(t.TempDir(), "pw")
	os.WriteFile(f, []byte("from-file\n"), 0o600)
	get := func(env map[string]string) func(string) string { return func(k string) string { return env[k] } }
	if v, ok, err := FirstSecretEnv(get(map[string]string{"OLD": "old"}), "NEW", "OLD"); err != nil || !ok || v != "old" {
		t.Fatalf("fallback: %q %v %v", v, ok, err)
	}
	if v, ok, err := FirstSecretEnv(get(map[string]string{"NEW_FILE": f}), "NEW", "OLD"); err != nil || !ok || v != "from-file" {
		t.Fatalf("new _FILE: %q %v %v", v, ok, err)
	}
	if _, _, err := FirstSecretEnv(get(map[string]string{"NEW_FILE": f, "OLD": "x"}), "NEW", "OLD"); err == nil {
		t.Fatal("two names of one secret must be refused")
	}
	if _, ok, err := FirstSecretEnv(get(nil), "NEW", "OLD"); ok || err != nil {
		t.Fatalf("unset: %v %v", ok, err)
	}
}

// TestApplyEnvSecretsFromFiles: every secret of lcm-api comes from
// LCM_<KEY>_FILE, and the database password from its own file goes into the
// URL (and out of every dump).
func TestApplyEnvSecretsFromFiles(t *testing.T) {
	dir := t.TempDir()
	file := func(name, body string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body+"\n"), 0o600)
		return p
	}
	env := map[string]string{
		"LCM_JWT_SECRET_FILE":        file("jwt", strings.Repeat("j", 40)),
		"LCM_DATABASE_URL":           "postgres://lcm@postgres:5432/lcm?sslmode=disable",
		"LCM_DATABASE_PASSWORD_FILE": file("pg", "p@ss:w/rd"),
		"LCM_NATS_PASSWORD_FILE":     file("nats", "nats-pw"),
		"LCM_SMTP_PASSWORD_FILE":     file("smtp", "smtp-pw"),
		"LCM_NATS_REPLICAS":          "3",
		"LCM_NATS_URL":               "nats://nats-1:4222,nats://nats-2:4222",
		"LCM_WORKER_DISABLED":        "true",
		"LCM_SCANNER_DISABLED":       "true",
		"LCM_TLS_CERT_FILE":          "/run/secrets/api.crt",
		"LCM_TLS_KEY_FILE":           "/run/secrets/api.key",
	}
	cfg := Defaults()
	if err := cfg.ApplyEnv(func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if cfg.JWTSecret != strings.Repeat("j", 40) || cfg.NATS.Password != "nats-pw" || cfg.SMTP.Password != "smtp-pw" {
		t.Fatalf("secrets not applied: %+v", cfg)
	}
	if cfg.Database.URL != "postgres://lcm:p%40ss%3Aw%2Frd@postgres:5432/lcm?sslmode=disable" {
		t.Fatalf("database url %q", cfg.Database.URL)
	}
	if cfg.NATS.ReplicaCount() != 3 || !cfg.Worker.Disabled || !cfg.Scanner.Disabled || cfg.TLSCertFile != "/run/secrets/api.crt" || cfg.TLSKeyFile != "/run/secrets/api.key" {
		t.Fatalf("settings not applied: %+v", cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	r := cfg.Redacted()
	if strings.Contains(r.Database.URL, "p%40ss") || r.NATS.Password != "***" || r.SMTP.Password != "***" || r.JWTSecret != "***" {
		t.Fatalf("redacted dump leaks: %+v", r)
	}

	for name, bad := range map[string]map[string]string{
		"password without url":    {"LCM_DATABASE_PASSWORD": "x"},
		"password and url holder": {"LCM_DATABASE_URL": "postgres://u:p@h/db", "LCM_DATABASE_PASSWORD": "x"},
		"url without user":        {"LCM_DATABASE_URL": "postgres://h/db", "LCM_DATABASE_PASSWORD": "x"},
		"value and file":          {"LCM_JWT_SECRET": strings.Repeat("a", 40), "LCM_JWT_SECRET_FILE": env["LCM_JWT_SECRET_FILE"]},
	} {
		cfg := Defaults()
		if err := cfg.ApplyEnv(func(k string) string { return bad[k] }); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestValidateReplicasAndTLSFiles(t *testing.T) {
	base := Defaults()
	base.JWTSecret = strings.Repeat("x", 32)
	tests := []struct {
		name    string
		edit    func(*Config)
		wantKey string
	}{
		{"default", func(*Config) {}, ""},
		{"3 on a cluster", func(c *Config) { c.NATS.URL, c.NATS.Replicas = "nats://n1:4222", 3 }, ""},
		{"3 embedded", func(c *Config) { c.NATS.Replicas = 3 }, "nats.replicas"},
		{"6", func(c *Config) { c.NATS.URL, c.NATS.Replicas = "nats://n1:4222", 6 }, "nats.replicas"},
		{"negative", func(c *Config) { c.NATS.Replicas = -1 }, "nats.replicas"},
		{"cert without key", func(c *Config) { c.TLSCertFile = "/x.crt" }, "tls_cert_file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base
			tt.edit(&c)
			err := c.Validate()
			if tt.wantKey == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantKey) {
				t.Fatalf("err %v, want key %s", err, tt.wantKey)
			}
		})
	}
}

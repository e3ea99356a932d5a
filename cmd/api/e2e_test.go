package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/secret"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
)

func TestVersionFlag(t *testing.T) {
	out, err := exec.Command(testutil.APIBinary(t), "-version").CombinedOutput()
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^lcm-api \d+\.\d+\.\d+(-[0-9A-Za-z.]+)? \(Build \d+, [0-9a-f]{7}(-dirty)?|unknown\)\n$`).Match(out) {
		t.Fatalf("-version printed %q", out)
	}
}

func TestFirstStartAndRestart(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			dir := t.TempDir()
			a := testutil.StartAPI(t, testutil.APIOptions{Dir: dir, DatabaseURL: db.URL})
			if !strings.HasPrefix(a.BaseURL, "https://") {
				t.Fatal("not HTTPS by default")
			}
			if a.AdminPassword == "" || strings.Count(a.Stdout(), "password:") != 1 {
				t.Fatalf("admin password not printed once:\n%s", a.Stdout())
			}
			if strings.Contains(a.Stderr(), a.AdminPassword) {
				t.Fatal("admin password appears in the log")
			}
			// The health check also answers outside /api/v1, as JSON, not
			// with the web UI's page.
			for _, p := range []string{"/health", "/healthz", "/api/v1/health"} {
				var h map[string]any
				resp, body := a.Do("GET", p, "", nil, &h)
				if resp.StatusCode != 200 || len(h) != 1 || h["status"] != "ok" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
					t.Fatalf("anonymous %s: %d %s", p, resp.StatusCode, body)
				}
			}
			resp, _ := a.Do("GET", "/api/v1/health", "", nil, nil)
			for _, hdr := range []string{"X-Content-Type-Options", "X-Frame-Options", "Referrer-Policy", "Permissions-Policy"} {
				if resp.Header.Get(hdr) == "" {
					t.Errorf("missing security header %s", hdr)
				}
			}
			var info map[string]any
			a.Do("GET", "/api/v1/system/info", "", nil, &info)
			if _, ok := info["commit"].(string); !ok {
				t.Fatalf("system info without commit: %v", info)
			}
			if _, ok := info["dirty"].(bool); !ok {
				t.Fatalf("system info without dirty: %v", info)
			}
			for _, p := range []string{"/api/v1/does-not-exist", "/api/other", "/healthz/ready"} {
				resp, body := a.Do("GET", p, "", nil, nil)
				if resp.StatusCode != 404 || !strings.Contains(string(body), `"error"`) {
					t.Fatalf("unknown API route %s: %d %s", p, resp.StatusCode, body)
				}
			}
			if db.URL == "" {
				for _, f := range []string{"config.json", "data/lcm.key"} {
					st, err := os.Stat(filepath.Join(dir, f))
					if err != nil || st.Mode().Perm() != 0o600 {
						t.Fatalf("%s: %v %v", f, err, st.Mode())
					}
				}
			}
			if v, _ := store.ReadVersionFile(filepath.Join(dir, "data")); v == "" {
				t.Fatal("version.json not written")
			}
			start := time.Now()
			if err := a.Stop(); err != nil {
				t.Fatalf("graceful stop: %v\n%s", err, a.Stderr())
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Fatalf("shutdown took %s", d)
			}
			if !strings.Contains(a.Stderr(), "=== LCM service stopped ===") {
				t.Fatalf("no clean shutdown marker:\n%s", a.Stderr())
			}
			// Second start: clean, no new password, same key.
			key1, _ := os.ReadFile(filepath.Join(dir, "data", "lcm.key"))
			b := testutil.StartAPI(t, testutil.APIOptions{Dir: dir, DatabaseURL: db.URL})
			if b.AdminPassword != "" || strings.Contains(b.Stdout(), "password") {
				t.Fatal("admin password printed again")
			}
			if strings.Contains(b.Stderr(), "schema migration applied") {
				t.Fatal("second start re-applied migrations")
			}
			key2, _ := os.ReadFile(filepath.Join(dir, "data", "lcm.key"))
			if db.URL == "" && string(key1) != string(key2) {
				t.Fatal("master key changed")
			}
		})
	}
}

func TestRefusesBadStarts(t *testing.T) {
	bin := testutil.APIBinary(t)
	runFail := func(t *testing.T, args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, args...)
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Fatalf("lcm-api %v started; output:\n%s", args, out)
		}
		return string(out)
	}
	t.Run("malformed config", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "config.json")
		body := "{\n  \"port\": 9310,\n  \"host\": \"127.0.0.1\"\n  \"x\": 1\n}\n"
		os.WriteFile(path, []byte(body), 0o600)
		out := runFail(t, "-config", path)
		if !strings.Contains(out, path+":4:") {
			t.Fatalf("error does not name file and line: %s", out)
		}
		if b, _ := os.ReadFile(path); string(b) != body {
			t.Fatal("config.json was modified")
		}
	})
	t.Run("wrong type names key", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "config.json")
		os.WriteFile(path, []byte(`{"port": "9310"}`), 0o600)
		if out := runFail(t, "-config", path); !strings.Contains(out, `key "port"`) {
			t.Fatalf("error does not name the key: %s", out)
		}
	})
	t.Run("short jwt secret", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "config.json")
		os.WriteFile(path, []byte(`{"jwt_secret": "too-short"}`), 0o600)
		if out := runFail(t, "-config", path); !strings.Contains(out, "jwt_secret") {
			t.Fatalf("short secret: %s", out)
		}
	})
	t.Run("port in use", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		dir := t.TempDir()
		cfg := fmt.Sprintf(`{"jwt_secret": %q, "port": %d, "agent_port": 0}`, strings.Repeat("s", 40), ln.Addr().(*net.TCPAddr).Port)
		os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o600)
		if out := runFail(t, "-config", filepath.Join(dir, "config.json")); !strings.Contains(out, "UI listener") || !strings.Contains(out, "already in use") {
			t.Fatalf("port in use: %s", out)
		}
	})
	t.Run("agent port in use", func(t *testing.T) {
		ln, _ := net.Listen("tcp", "127.0.0.1:0")
		defer ln.Close()
		dir := t.TempDir()
		cfg := fmt.Sprintf(`{"jwt_secret": %q, "port": %d, "agent_host": "127.0.0.1", "agent_port": %d}`,
			strings.Repeat("s", 40), testutil.FreePort(t), ln.Addr().(*net.TCPAddr).Port)
		os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o600)
		if out := runFail(t, "-config", filepath.Join(dir, "config.json")); !strings.Contains(out, "agent listener") {
			t.Fatalf("agent port in use: %s", out)
		}
	})
	t.Run("unwritable data dir", func(t *testing.T) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "file"), nil, 0o600)
		cfg := fmt.Sprintf(`{"jwt_secret": %q, "port": %d, "agent_port": 0, "data_dir": %q}`,
			strings.Repeat("s", 40), testutil.FreePort(t), filepath.Join(dir, "file", "data"))
		os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o600)
		if out := runFail(t, "-config", filepath.Join(dir, "config.json")); !strings.Contains(out, "data dir") {
			t.Fatalf("unwritable data dir: %s", out)
		}
	})
	t.Run("missing and corrupted key", func(t *testing.T) {
		dir := t.TempDir()
		a := testutil.StartAPI(t, testutil.APIOptions{Dir: dir})
		a.Stop()
		keyPath := filepath.Join(dir, "data", "lcm.key")
		orig, _ := os.ReadFile(keyPath)
		os.Remove(keyPath)
		if out := runFail(t, "-config", filepath.Join(dir, "config.json")); !strings.Contains(out, "lcm.key is missing") {
			t.Fatalf("missing key: %s", out)
		}
		if _, err := os.Stat(keyPath); err == nil {
			t.Fatal("a new key was created over encrypted data")
		}
		os.WriteFile(keyPath, []byte("lcm-master-key-v1:AAAA\n"), 0o600)
		if out := runFail(t, "-config", filepath.Join(dir, "config.json")); !strings.Contains(out, "corrupted") {
			t.Fatalf("corrupted key: %s", out)
		}
		os.WriteFile(keyPath, orig, 0o600)
		testutil.StartAPI(t, testutil.APIOptions{Dir: dir})
	})
}

func TestSIGINTGracefulShutdown(t *testing.T) {
	a := testutil.StartAPI(t, testutil.APIOptions{Dev: true})
	start := time.Now()
	if err := syscallKill(a, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := a.Wait(10 * time.Second); code != 0 {
		t.Fatalf("exit code %d\n%s", code, a.Stderr())
	}
	t.Logf("shutdown in %s", time.Since(start))
}

func TestAccessLogNeverHasSecrets(t *testing.T) {
	a := testutil.StartAPI(t, testutil.APIOptions{Dev: true, Args: []string{"-debug"}})
	a.Do("GET", "/api/v1/health?token=abcdef123456&x=1", "Bearer-secret-token", nil, nil)
	a.Do("POST", "/api/v1/does-not-exist", "", map[string]string{"password": "hunter2hunter2"}, nil)
	// The access-log line is written after the response: wait for it.
	testutil.WaitFor(t, 5*time.Second, "access log line of the 404", func() bool {
		return strings.Contains(a.Stderr(), "path=/api/v1/does-not-exist")
	})
	logs := a.Stderr()
	for _, secretText := range []string{"abcdef123456", "hunter2hunter2", "Bearer-secret-token"} {
		if strings.Contains(logs, secretText) {
			t.Fatalf("log contains %q:\n%s", secretText, logs)
		}
	}
	var sawWarn bool
	for _, l := range testutil.Lines(logs) {
		if strings.Contains(l, "path=/api/v1/does-not-exist") && strings.Contains(l, "level=WARN") && strings.Contains(l, "status=404") {
			sawWarn = true
		}
	}
	if !sawWarn {
		t.Fatalf("4xx not logged at WARN:\n%s", logs)
	}
}

// TestRotateKilledMidway kills rotate-db-key at different moments and proves
// that afterwards every encrypted field is readable with exactly one key.
func TestRotateKilledMidway(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			dir := t.TempDir()
			a := testutil.StartAPI(t, testutil.APIOptions{Dir: dir, DatabaseURL: db.URL, Dev: true})
			a.Stop()
			const rows = 20000
			seedCertificates(t, dir, db.URL, rows)
			bin := testutil.APIBinary(t)
			delays := []time.Duration{20 * time.Millisecond, 150 * time.Millisecond, 400 * time.Millisecond, 900 * time.Millisecond, 0}
			for _, delay := range delays {
				cmd := exec.Command(bin, "rotate-db-key", "-config", filepath.Join(dir, "config.json"))
				out := &strings.Builder{}
				cmd.Stdout, cmd.Stderr = out, out
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				if delay > 0 {
					time.Sleep(delay)
					cmd.Process.Kill()
					cmd.Wait()
				} else if err := cmd.Wait(); err != nil {
					t.Fatalf("rotation: %v\n%s", err, out)
				}
				checkOneKey(t, dir, db.URL, rows)
			}
		})
	}
}

func seedCertificates(t *testing.T, dir, url string, n int) {
	ctx := context.Background()
	s, err := store.Open(ctx, store.Options{URL: url, DataDir: filepath.Join(dir, "data")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	kr, _, err := s.ResolveMasterKey(ctx, filepath.Join(dir, "data"))
	if err != nil {
		t.Fatal(err)
	}
	s.SetKeyring(kr)
	err = s.InTx(ctx, func(tx *store.Store) error {
		for i := 0; i < n; i++ {
			if err := tx.CreateCertificate(ctx, store.Certificate{Name: fmt.Sprintf("c%06d", i), CertPEM: "c", KeyPEM: fmt.Sprintf("secret-%d", i)}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func checkOneKey(t *testing.T, dir, url string, n int) {
	t.Helper()
	ctx := context.Background()
	data := filepath.Join(dir, "data")
	s, err := store.Open(ctx, store.Options{URL: url, DataDir: data})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	kr, _, err := s.ResolveMasterKey(ctx, data)
	if err != nil {
		t.Fatalf("after kill: %v", err)
	}
	if _, err := os.Stat(filepath.Join(data, secret.NextKeyFileName)); err == nil {
		t.Fatal("lcm.key.next left after resolution")
	}
	sqlDB, _ := s.SQL()
	rows, err := sqlDB.Query(`SELECT key_pem FROM certificates`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	count := 0
	for rows.Next() {
		var ct []byte
		rows.Scan(&ct)
		if id, _ := secret.KeyIDOf(ct); id != kr.ID() {
			t.Fatalf("mixed state: a field sealed with key %s, the key is %s", id, kr.ID())
		}
		if _, err := kr.Open(ct, "certificates.key_pem"); err != nil {
			t.Fatal(err)
		}
		count++
	}
	if count < n {
		t.Fatalf("%d rows, want ≥ %d", count, n)
	}
}

func syscallKill(a *testutil.API, sig syscall.Signal) error {
	return a.Signal(sig)
}

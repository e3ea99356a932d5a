package main

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/lcmproject/lcm/internal/backup"
	"github.com/lcmproject/lcm/internal/testutil"
)

// TestBackupRefusalsThroughTheAPI: a backup made by a newer major version
// of LCM (a real lcm-api linked as 99.0.0) is refused on upload with
// backup_newer_version and nothing is staged; and a manager (no
// backups:manage) gets 403 on every backup route, which changes nothing.
func TestBackupRefusalsThroughTheAPI(t *testing.T) {
	root, err := testutil.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	newer := filepath.Join(t.TempDir(), "lcm-api-99")
	cmd := exec.Command("go", "build", "-ldflags", "-X github.com/lcmproject/lcm/internal/version.semver=99.0.0", "-o", newer, "./cmd/api")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build (version 99.0.0): %v\n%s", err, out)
	}
	env := []string{backup.EnvPassphrase + "=" + backupPassE2E}
	n := testutil.StartAPI(t, testutil.APIOptions{Dev: true, Env: env, Bin: newer})
	ntok := login(t, n, "admin", n.AdminPassword)
	var info struct{ Version string }
	n.Do("GET", "/api/v1/system/info", "", nil, &info)
	if info.Version != "99.0.0" {
		t.Fatalf("the newer build says it is %q", info.Version)
	}
	var made backup.Info
	if resp, body := n.Do("POST", "/api/v1/system/backups/trigger-now", ntok, nil, &made); resp.StatusCode != http.StatusCreated {
		t.Fatalf("trigger-now on 99.0.0: %d %s", resp.StatusCode, body)
	}
	file := download(t, n, ntok, made.Name)
	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}

	a := testutil.StartAPI(t, testutil.APIOptions{Dev: true, Env: env})
	tok := login(t, a, "admin", a.AdminPassword)
	if got := uploadCode(t, a, tok, file); got != "backup_newer_version" {
		t.Fatalf("upload of a 99.0.0 backup: %q, want backup_newer_version", got)
	}
	if _, err := os.Stat(filepath.Join(a.Dir, "data", backup.StagedDirName)); !os.IsNotExist(err) {
		t.Fatalf("a refused upload left a staged restore: %v", err)
	}

	// A manager may not touch backups.
	if resp, body := a.Do("POST", "/api/v1/users", tok, map[string]any{"username": "mona", "first_name": "Mona", "last_name": "M",
		"email": "mona@example.com", "password": tinaPassword, "roles": []string{"manager"}}, nil); resp.StatusCode != http.StatusCreated {
		t.Fatalf("create manager: %d %s", resp.StatusCode, body)
	}
	mtok := login(t, a, "mona", tinaPassword)
	if resp, body := a.Do("POST", "/api/v1/system/backups/trigger-now", tok, nil, &made); resp.StatusCode != http.StatusCreated {
		t.Fatalf("trigger-now: %d %s", resp.StatusCode, body)
	}
	for _, r := range []struct{ method, path string }{
		{"GET", "/api/v1/system/backups"},
		{"POST", "/api/v1/system/backups/trigger-now"},
		{"PATCH", "/api/v1/system/backups/settings"},
		{"POST", "/api/v1/system/backups/restore-upload"},
		{"GET", "/api/v1/system/backups/" + made.Name + "/download"},
		{"DELETE", "/api/v1/system/backups/" + made.Name},
		{"POST", "/api/v1/system/backups/" + made.Name + "/restore"},
	} {
		var body any
		if r.method == "PATCH" {
			body = map[string]any{"retention_count": 1}
		}
		resp, raw := a.Do(r.method, r.path, mtok, body, nil)
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("manager %s %s: %d %s, want 403", r.method, r.path, resp.StatusCode, raw)
		}
	}
	var st backup.Status
	a.Do("GET", "/api/v1/system/backups", tok, nil, &st)
	if len(st.Backups) != 1 || st.Backups[0].Name != made.Name {
		t.Fatalf("backups after the manager's attempts: %+v", st.Backups)
	}
	if _, err := os.Stat(filepath.Join(a.Dir, "data", backup.StagedDirName)); !os.IsNotExist(err) {
		t.Fatalf("a manager's restore was staged: %v", err)
	}
}

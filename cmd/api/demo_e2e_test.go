package main

import (
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lcmproject/lcm/internal/selfreg"
	"github.com/lcmproject/lcm/internal/testutil"
)

// TestDemoModeE2E starts the real binary with --demo: the example servers
// are listed with their traffic light, a demo server's reboot job is
// simulated (no connection) and reports how long the server took, and a
// self-registration handover key left in the data directory is deleted
// even though demo mode skips the registration.
func TestDemoModeE2E(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "data", selfreg.HandoverFile)
	if err := os.MkdirAll(filepath.Dir(key), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, []byte("-----BEGIN OPENSSH PRIVATE KEY-----\nnot a real key\n-----END OPENSSH PRIVATE KEY-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a := testutil.StartAPI(t, testutil.APIOptions{Dir: dir, Dev: true, Args: []string{"--demo"}})
	if _, err := os.Stat(key); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("handover key after a demo start: %v, want it deleted", err)
	}
	tok := login(t, a, "admin", a.AdminPassword)
	var servers []struct {
		ID, Name, Status string
	}
	if resp, body := a.Do("GET", "/api/v1/servers", tok, nil, &servers); resp.StatusCode != http.StatusOK || len(servers) == 0 {
		t.Fatalf("servers: %d %s", resp.StatusCode, body)
	}
	var id string
	for _, s := range servers {
		if s.Status == "" || s.Status == "unknown" {
			t.Errorf("demo server %s has no traffic light: %q", s.Name, s.Status)
		}
		id = s.ID
	}
	var job struct {
		JobID string `json:"job_id"`
	}
	if resp, body := a.Do("POST", "/api/v1/servers/"+id+"/reboot", tok, nil, &job); resp.StatusCode != http.StatusAccepted || job.JobID == "" {
		t.Fatalf("reboot: %d %s", resp.StatusCode, body)
	}
	waitJob(t, a, tok, job.JobID, "success")
	_, out := a.Do("GET", "/api/v1/jobs/"+job.JobID+"/ssh-output", tok, nil, nil)
	for _, want := range []string{"simulated, no connection made", "Server is back after"} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("reboot output %s, want %q in it", out, want)
		}
	}
}

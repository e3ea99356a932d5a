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
// are listed with their traffic light and the counters of their inventory
// (list, server page and inventory agree), a simulated security upgrade
// changes the simulated state (packages, counters, findings, traffic
// light), a demo server's reboot job is simulated (no connection), reports
// how long the server took and clears "reboot required", and a
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
	servers := demoServers(t, a, tok)
	if len(servers) != 8 {
		t.Fatalf("%d demo servers, want 8", len(servers))
	}
	for name, s := range servers {
		if s.Status == "" || s.Status == "unknown" {
			t.Errorf("demo server %s has no traffic light: %q", name, s.Status)
		}
	}
	// The seeded counters are the inventory's (issue 24: they read 0).
	app, mail := servers["app-01"], servers["mail-01"]
	if app.Updates != 2 || app.Security != 1 || !app.Reboot {
		t.Fatalf("app-01 listed with %d updates, %d security, reboot %v; want 2, 1, true", app.Updates, app.Security, app.Reboot)
	}
	if mail.Updates != 1 || mail.Security != 1 || mail.Status != "yellow" {
		t.Fatalf("mail-01 listed %+v, want 1 update, 1 security, yellow", mail)
	}

	// A simulated security upgrade changes the simulated state: postfix
	// is upgraded, the counters drop, the fixed finding goes, and the
	// traffic light turns green.
	job := startJob(t, a, tok, "/api/v1/servers/"+mail.ID+"/packages/upgrade-security", "upgrade-security", "Install security updates")
	out := jobOutput(t, a, tok, job)
	for _, want := range []string{"simulated, no connection made", "Upgrading postfix 2:3.5.9-24.el9 -> 2:3.5.25-1.el9", "0 upgradable"} {
		if !strings.Contains(out, want) {
			t.Fatalf("upgrade output %s, want %q in it", out, want)
		}
	}
	servers = demoServers(t, a, tok)
	if m := servers["mail-01"]; m.Updates != 0 || m.Security != 0 || m.Status != "green" {
		t.Fatalf("mail-01 after the security upgrade: %+v, want 0 updates, green", m)
	}
	var pkgs []struct{ Name, Version string }
	a.Do("GET", "/api/v1/servers/"+mail.ID+"/packages", tok, nil, &pkgs)
	for _, p := range pkgs {
		if p.Name == "postfix" && p.Version != "2:3.5.25-1.el9" {
			t.Fatalf("postfix %s after the upgrade, want 2:3.5.25-1.el9", p.Version)
		}
	}
	// app-01: libc6 is upgraded (still a reboot), snapd stays; a simulated
	// reboot clears the flag.
	startJob(t, a, tok, "/api/v1/servers/"+app.ID+"/packages/upgrade-security", "upgrade-security", "Install security updates")
	if s := demoServers(t, a, tok)["app-01"]; s.Updates != 1 || s.Security != 0 || !s.Reboot {
		t.Fatalf("app-01 after the security upgrade: %+v, want 1 update, 0 security, reboot", s)
	}
	job = startJob(t, a, tok, "/api/v1/servers/"+app.ID+"/reboot", "reboot", "Reboot")
	if out = jobOutput(t, a, tok, job); !strings.Contains(out, "Server is back after") {
		t.Fatalf("reboot output %s", out)
	}
	if s := demoServers(t, a, tok)["app-01"]; s.Updates != 1 || s.Reboot {
		t.Fatalf("app-01 after the reboot: %+v, want 1 update, no reboot", s)
	}
}

type demoServer struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	Updates  int    `json:"updates_available"`
	Security int    `json:"security_updates"`
	Reboot   bool   `json:"reboot_required"`
}

// demoServers lists the servers by name and checks every one against its
// detail page and its inventory: the list, the server page and the
// outdated list must agree.
func demoServers(t *testing.T, a *testutil.API, tok string) map[string]demoServer {
	t.Helper()
	var list []struct {
		demoServer
		Name string `json:"name"`
	}
	if resp, body := a.Do("GET", "/api/v1/servers", tok, nil, &list); resp.StatusCode != http.StatusOK {
		t.Fatalf("servers: %d %s", resp.StatusCode, body)
	}
	out := map[string]demoServer{}
	for _, s := range list {
		var one demoServer
		a.Do("GET", "/api/v1/servers/"+s.ID, tok, nil, &one)
		var od []struct {
			Security bool `json:"security"`
		}
		a.Do("GET", "/api/v1/servers/"+s.ID+"/outdated-packages", tok, nil, &od)
		var hw struct {
			Facts struct {
				Reboot struct {
					Required bool `json:"required"`
				} `json:"reboot"`
			} `json:"facts"`
		}
		a.Do("GET", "/api/v1/servers/"+s.ID+"/hardware", tok, nil, &hw)
		sec := 0
		for _, u := range od {
			if u.Security {
				sec++
			}
		}
		if one != s.demoServer || s.Updates != len(od) || s.Security != sec || s.Reboot != hw.Facts.Reboot.Required {
			t.Fatalf("%s: listed %+v, page %+v, inventory %d outdated, %d security, reboot %v",
				s.Name, s.demoServer, one, len(od), sec, hw.Facts.Reboot.Required)
		}
		out[s.Name] = s.demoServer
	}
	return out
}

func jobOutput(t *testing.T, a *testutil.API, tok, job string) string {
	t.Helper()
	var out struct {
		Output string `json:"output"`
	}
	if resp, body := a.Do("GET", "/api/v1/jobs/"+job+"/ssh-output", tok, nil, &out); resp.StatusCode != http.StatusOK {
		t.Fatalf("output of %s: %d %s", job, resp.StatusCode, body)
	}
	return out.Output
}

// startJob starts a job, checks its names and waits for its success.
func startJob(t *testing.T, a *testutil.API, tok, path, kind, name string) string {
	t.Helper()
	var job struct {
		JobID   string `json:"job_id"`
		JobName string `json:"job_name"`
		Kind    string `json:"kind"`
	}
	if resp, body := a.Do("POST", path, tok, nil, &job); resp.StatusCode != http.StatusAccepted || job.JobID == "" ||
		job.Kind != kind || job.JobName != name {
		t.Fatalf("POST %s: %d %s, want kind %s named %q", path, resp.StatusCode, body, kind, name)
	}
	waitJob(t, a, tok, job.JobID, "success")
	return job.JobID
}

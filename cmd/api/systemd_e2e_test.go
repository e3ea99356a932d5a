package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/health"
	"github.com/lcmproject/lcm/internal/testutil"
)

// TestSystemdSupervisesAPI runs lcm-api under a real systemd (a user
// manager confined to its own cgroup subtree, testutil.StartSystemd) with
// the supervision of deploy/systemd/lcm-api.service: start returns only
// after READY=1 (Type=notify) and the API answers at once; systemd's
// watchdog reaches the process (WatchdogSec=90); ten recovered panics end
// it with exit code 70 and systemd starts it again; and the crash-loop
// brake (5 starts in 300 s) leaves the unit failed after repeated kills
// until an operator resets it.
func TestSystemdSupervisesAPI(t *testing.T) {
	sd := testutil.StartSystemd(t)
	bin := testutil.APITestBinary(t)
	dir := t.TempDir()
	port := testutil.FreePort(t)
	cfg := filepath.Join(dir, "config.json")
	b, _ := json.Marshal(map[string]any{"jwt_secret": strings.Repeat("s", 48), "agent_port": 0, "data_dir": "data", "port": port})
	if err := os.WriteFile(cfg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "lcm-api.log")
	sd.InstallDerived("lcm-api", filepath.Join("..", "..", "deploy", "systemd", "lcm-api.service"),
		fmt.Sprintf("%s -config %s --dev", bin, cfg), nil, logPath)
	logs := func() string { b, _ := os.ReadFile(logPath); return string(b) }
	defer func() {
		if t.Failed() {
			t.Logf("lcm-api output:\n%s", logs())
		}
	}()
	a := testutil.ClientFor(t, fmt.Sprintf("http://127.0.0.1:%d", port))

	// Type=notify: start returns once lcm-api sent READY=1, i.e. with its
	// listeners up.
	sd.MustCtl("start", "lcm-api")
	p := sd.Show("lcm-api")
	if p["ActiveState"] != "active" || p["Type"] != "notify" || p["WatchdogUSec"] != "1min 30s" || p["NRestarts"] != "0" {
		t.Fatalf("after start: ActiveState=%s Type=%s WatchdogUSec=%s NRestarts=%s", p["ActiveState"], p["Type"], p["WatchdogUSec"], p["NRestarts"])
	}
	if resp, body := a.Do("GET", "/api/v1/health", "", nil, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("health right after start returned: %d %s", resp.StatusCode, body)
	}
	m := regexp.MustCompile(`password: (\S+)`).FindStringSubmatch(logs())
	if m == nil {
		t.Fatal("no admin password in the output")
	}
	tok := login(t, a, "admin", m[1])
	var h map[string]any
	a.Do("GET", "/api/v1/health", tok, nil, &h)
	if h["watchdog_active"] != true {
		t.Fatalf("lcm-api does not see systemd's watchdog: %v", h)
	}

	// Exit 70 after ten panics; systemd starts it again.
	first := sd.MainPID("lcm-api")
	for range health.MaxPanics {
		a.Do("POST", "/api/v1/lcmtest/panic?in=goroutine", "", nil, nil)
	}
	testutil.WaitFor(t, 60*time.Second, "systemd restarted lcm-api after exit 70", func() bool {
		p := sd.Show("lcm-api")
		return p["NRestarts"] == "1" && p["ActiveState"] == "active" && p["MainPID"] != fmt.Sprint(first) && p["MainPID"] != "0"
	})
	if !strings.Contains(logs(), "too many recovered panics: restarting the process") {
		t.Fatal("no controlled restart in the output")
	}
	if resp, _ := a.Do("GET", "/api/v1/health", "", nil, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("health after the restart: %d", resp.StatusCode)
	}

	// The crash-loop brake: kill -9 until systemd stops restarting.
	sd.MustCtl("reset-failed", "lcm-api") // a fresh start-rate window
	kills := 0
	for kills < 10 {
		pid := sd.MainPID("lcm-api")
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatalf("kill %d: %v", pid, err)
		}
		kills++
		var state string
		testutil.WaitFor(t, 60*time.Second, "lcm-api restarted or given up", func() bool {
			p := sd.Show("lcm-api")
			state = p["ActiveState"]
			return state == "failed" || (state == "active" && p["MainPID"] != fmt.Sprint(pid) && p["MainPID"] != "0")
		})
		if state == "failed" {
			break
		}
	}
	// reset-failed emptied the window: five restarts are allowed within
	// 300 s (StartLimitBurst=5), the sixth start is refused.
	if kills != 6 {
		t.Fatalf("the unit failed after %d kills, want 6 (StartLimitBurst=5 in StartLimitIntervalSec=300)", kills)
	}
	if out, err := sd.Ctl("start", "lcm-api"); err == nil {
		t.Fatalf("a start within the brake's window was accepted: %s", out)
	}
	sd.MustCtl("reset-failed", "lcm-api")
	sd.MustCtl("start", "lcm-api")
	if resp, _ := a.Do("GET", "/api/v1/health", "", nil, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("health after reset-failed and start: %d", resp.StatusCode)
	}
}

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/testutil"
)

// simHost is one line of cmd/fleetsim's output.
type simHost struct {
	Index       int    `json:"index"`
	Addr        string `json:"addr"`
	HostKey     string `json:"host_key"`
	Fingerprint string `json:"fingerprint"`
}

// startFleetsim builds and starts the real cmd/fleetsim with n pristine
// hosts and returns them.
func startFleetsim(t *testing.T, n int, args ...string) []simHost {
	t.Helper()
	hosts, _ := startFleetsimStoppable(t, n, args...)
	return hosts
}

// startFleetsimStoppable is startFleetsim that also returns a function
// ending the process (its hosts then refuse connections).
func startFleetsimStoppable(t *testing.T, n int, args ...string) ([]simHost, func()) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "fleetsim")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/lcmproject/lcm/cmd/fleetsim").CombinedOutput(); err != nil {
		t.Fatalf("build fleetsim: %v\n%s", err, out)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, append([]string{"-n", strconv.Itoa(n)}, args...)...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); _ = cmd.Wait() }) }
	t.Cleanup(stop)
	var hosts []simHost
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for len(hosts) < n && sc.Scan() {
		var h simHost
		if err := json.Unmarshal(sc.Bytes(), &h); err != nil {
			t.Fatalf("fleetsim line %q: %v", sc.Text(), err)
		}
		hosts = append(hosts, h)
	}
	if len(hosts) != n {
		t.Fatalf("fleetsim printed %d of %d hosts", len(hosts), n)
	}
	go func() { _, _ = bufio.NewReader(stdout).WriteTo(discard{}) }()
	return hosts, stop
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// e2eServer is the part of a Server the fleetsim tests read.
type e2eServer struct {
	ID               string `json:"id"`
	Name             string `json:"name"`
	Joined           bool   `json:"joined"`
	OSName           string `json:"os_name"`
	Hostname         string `json:"hostname"`
	UpdatesAvailable int    `json:"updates_available"`
	SecurityUpdates  int    `json:"security_updates"`
}

// onboardSim probes and joins every simulated host through the API (as the
// bootstrap user "debian" with a password, the way an operator onboards a
// fresh VM) and waits until every join succeeded. It returns the server
// ids in host order.
func onboardSim(t *testing.T, a *testutil.API, token string, hosts []simHost) []string {
	t.Helper()
	join := func(i int) (string, string, error) {
		h := hosts[i]
		host, port, _ := net.SplitHostPort(h.Addr)
		p, _ := strconv.Atoi(port)
		var probe struct {
			FingerprintSHA256 string `json:"fingerprint_sha256"`
			HostKey           string `json:"host_key"`
		}
		resp, body := a.Do("POST", "/api/v1/servers/probe", token, map[string]any{"host": host, "port": p}, &probe)
		if resp.StatusCode != http.StatusOK || probe.FingerprintSHA256 != h.Fingerprint {
			return "", "", errors.New("probe " + h.Addr + ": " + string(body))
		}
		var joined struct {
			JobID  string `json:"job_id"`
			Server struct {
				ID string `json:"id"`
			} `json:"server"`
		}
		resp, body = a.Do("POST", "/api/v1/servers/join", token, map[string]any{
			"name": "sim-" + strconv.Itoa(h.Index), "host": host, "port": p, "username": "debian", "auth": "password",
			"password": "bootstrap-secret", "host_key": probe.HostKey,
		}, &joined)
		if resp.StatusCode != http.StatusAccepted {
			return "", "", errors.New("join " + h.Addr + ": " + string(body))
		}
		return joined.Server.ID, joined.JobID, nil
	}
	ids, jobs := testutil.JoinAll(t, len(hosts), 8, join)
	for _, j := range jobs {
		waitJob(t, a, token, j, "success")
	}
	return ids
}

// TestFleetsimOnboardAndUpgradeE2E: the real lcm-api binary onboards a
// simulated Debian fleet (the real cmd/fleetsim) through the API — probe,
// confirm the fingerprint, join with a bootstrap password — then refreshes
// every server (one bulk request on the selection) and security-upgrades
// them all ("update all", one request), checks the ingested inventory and
// the per-server counters move exactly as the hosts changed, and reboots
// one server.
// LCM_E2E_SIM_HOSTS sets the fleet size (default 12).
func TestFleetsimOnboardAndUpgradeE2E(t *testing.T) {
	n := 12
	if v, err := strconv.Atoi(os.Getenv("LCM_E2E_SIM_HOSTS")); err == nil && v > 0 {
		n = v
	}
	hosts := startFleetsim(t, n, "-latency", "50ms", "-packages", "300", "-upgradable", "20", "-security", "6")
	a := testutil.StartAPI(t, testutil.APIOptions{Dev: true})
	token := login(t, a, "admin", a.AdminPassword)
	ids := onboardSim(t, a, token, hosts)

	for i, id := range ids {
		var s e2eServer
		a.Do("GET", "/api/v1/servers/"+id, token, nil, &s)
		if !s.Joined || s.OSName != "Debian GNU/Linux 12 (bookworm)" || s.Hostname != "sim-"+pad4(hosts[i].Index) {
			t.Fatalf("server %d after join: %+v", i, s)
		}
	}
	// bulk starts one job per server with one request and waits until the
	// run's progress says done, every job a success.
	bulk := func(path string, req any) {
		t.Helper()
		var run struct {
			BulkID   string `json:"bulk_id"`
			Progress struct {
				Jobs   int            `json:"jobs"`
				Done   bool           `json:"done"`
				Counts map[string]int `json:"counts"`
			} `json:"progress"`
		}
		if resp, body := a.Do("POST", path, token, req, &run); resp.StatusCode != http.StatusAccepted || run.Progress.Jobs != len(ids) {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, body)
		}
		deadline := time.Now().Add(2 * time.Minute)
		for !run.Progress.Done {
			if time.Now().After(deadline) {
				t.Fatalf("bulk %s not done: %+v", run.BulkID, run.Progress)
			}
			time.Sleep(200 * time.Millisecond)
			a.Do("GET", "/api/v1/jobs/bulk/"+run.BulkID, token, nil, &run)
		}
		if run.Progress.Counts["success"] != len(ids) {
			t.Fatalf("bulk %s: %+v", run.BulkID, run.Progress)
		}
	}
	checkCounters := func(wantUpdates, wantSecurity int) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			bad := ""
			for _, id := range ids {
				var s e2eServer
				a.Do("GET", "/api/v1/servers/"+id, token, nil, &s)
				if s.UpdatesAvailable != wantUpdates || s.SecurityUpdates != wantSecurity {
					bad = s.Name + ": updates " + strconv.Itoa(s.UpdatesAvailable) + ", security " + strconv.Itoa(s.SecurityUpdates)
					break
				}
			}
			if bad == "" {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("counters: want %d/%d, %s", wantUpdates, wantSecurity, bad)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	bulk("/api/v1/jobs/bulk", map[string]any{"action": "refresh", "server_ids": ids})
	checkCounters(20, 6)
	var pkgs []struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	a.Do("GET", "/api/v1/servers/"+ids[0]+"/packages", token, nil, &pkgs)
	if len(pkgs) != 300 {
		t.Fatalf("packages of %s: %d", ids[0], len(pkgs))
	}
	bulk("/api/v1/security/update-all", nil)
	checkCounters(14, 0)

	// A reboot through the API: the host drops its connections, refuses
	// SSH for a moment and comes back with a new boot id.
	var rb struct {
		JobID string `json:"job_id"`
	}
	if resp, body := a.Do("POST", "/api/v1/servers/"+ids[0]+"/reboot", token, nil, &rb); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("reboot: %d %s", resp.StatusCode, body)
	}
	waitJob(t, a, token, rb.JobID, "success")
	var out struct {
		Output string `json:"output"`
	}
	a.Do("GET", "/api/v1/jobs/"+rb.JobID+"/ssh-output", token, nil, &out)
	if !strings.Contains(out.Output, "server is back") {
		t.Fatalf("reboot output:\n%s", out.Output)
	}
}

func pad4(i int) string {
	s := strconv.Itoa(i)
	for len(s) < 4 {
		s = "0" + s
	}
	return s
}

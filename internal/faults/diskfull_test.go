//go:build faults

package faults

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/lcmproject/lcm/internal/store" // database/sql driver "sqlite"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/topology"
)

// tmpfsDir mounts a tmpfs of size MiB (a small data disk) and unmounts it
// when the test ends.
func tmpfsDir(t *testing.T, mib int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		testutil.Unavailable(t, "root, to mount a small tmpfs as the data disk")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%dm,mode=0700", mib), "tmpfs", dir).CombinedOutput(); err != nil {
		testutil.Unavailable(t, "mount tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() {
		for i := 0; i < 50; i++ {
			if exec.Command("umount", dir).Run() == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Errorf("umount %s failed", dir)
	})
	return dir
}

// fill writes a file until the disk is full and returns its path.
func fill(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "filler")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	// The last partial block too.
	for {
		if _, err := f.Write(buf[:512]); err != nil {
			break
		}
	}
	return p
}

// TestDataDiskFull: the all-in-one lcm-api (SQLite and the embedded NATS
// store in its data directory) on a 64 MiB disk that fills up. Writes
// answer a clear error (503 storage_full, or bus_unavailable for a job
// whose stream cannot store it) — never a 500 or a hang; reads keep
// working; nothing is half-written and the database is not corrupted
// (SQLite integrity_check); once space returns, writes work again without
// a restart, and a restart finds everything.
func TestDataDiskFull(t *testing.T) {
	dir := tmpfsDir(t, 64)
	a := testutil.StartAPI(t, testutil.APIOptions{Dir: dir, Dev: true})
	password := a.AdminPassword
	tok := login(t, a, password)
	group := func(name string) (int, string) {
		resp, body := a.Do("POST", "/api/v1/server-groups/create", tok, map[string]any{"name": name}, nil)
		return resp.StatusCode, string(body)
	}
	for i := 0; i < 20; i++ {
		if code, body := group(fmt.Sprintf("before-%02d", i)); code != http.StatusOK {
			t.Fatalf("group before the disk filled: %d %s", code, body)
		}
	}
	// A server to run jobs on (its jobs' rows and stream messages need
	// the disk too).
	hosts := topology.StartFleetsim(t, t.TempDir(), 1, "-latency", "20ms")
	host, port, _ := net.SplitHostPort(hosts[0].Addr)
	var joined struct {
		JobID  string `json:"job_id"`
		Server struct {
			ID string `json:"id"`
		} `json:"server"`
	}
	if resp, body := a.Do("POST", "/api/v1/servers/join", tok, map[string]any{"name": "full-disk", "host": host, "port": atoi(port),
		"username": "debian", "auth": "password", "password": "bootstrap-secret", "host_key": hosts[0].HostKey}, &joined); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("join: %d %s", resp.StatusCode, body)
	}
	waitJob(t, a, tok, joined.JobID)
	filler := fill(t, dir)

	// Writes: a clear answer each, none a 500, none a hang; the code says
	// why. SQLite may still fit a few small writes into free pages of its
	// file: keep writing until one is refused.
	var refused, accepted int
	var codes []string
	for i := 0; i < 200 && refused < 10; i++ {
		code, body := group(fmt.Sprintf("during-%03d", i))
		switch {
		case code == http.StatusOK:
			accepted++
		case code == http.StatusServiceUnavailable && strings.Contains(body, `"code":"storage_full"`):
			refused++
		default:
			t.Fatalf("write with the disk full: %d %s", code, body)
		}
	}
	if refused == 0 {
		t.Fatalf("the disk is full but %d writes were accepted and none refused", accepted)
	}
	codes = append(codes, fmt.Sprintf("%d refused storage_full, %d fitted into free pages", refused, accepted))
	// A job: its row or its stream message cannot be stored. A clear
	// refusal, and no job left behind pending.
	resp, body := a.Do("POST", "/api/v1/servers/"+joined.Server.ID+"/connectivity-check", tok, nil, nil)
	switch {
	case resp.StatusCode == http.StatusServiceUnavailable && (strings.Contains(string(body), `"code":"storage_full"`) || strings.Contains(string(body), `"code":"bus_unavailable"`)):
		codes = append(codes, "job submit "+jsonCode(body))
	case resp.StatusCode == http.StatusAccepted:
		codes = append(codes, "job submit accepted (fitted)")
	default:
		t.Fatalf("job submit with the disk full: %d %s", resp.StatusCode, body)
	}
	// Reads keep working.
	if resp, body := a.Do("GET", "/api/v1/server-groups", tok, nil, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("read with the disk full: %d %s", resp.StatusCode, body)
	}
	resp, _ = a.Do("GET", "/api/v1/health", "", nil, nil)
	health := resp.StatusCode

	// Space returns: writes work again, without a restart.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 30*time.Second, "writes accepted again", func() bool {
		code, _ := group(fmt.Sprintf("after-%d", time.Now().UnixNano()))
		return code == http.StatusOK
	})
	// Jobs run again.
	var started struct {
		JobID string `json:"job_id"`
	}
	testutil.WaitFor(t, 30*time.Second, "jobs accepted again", func() bool {
		resp, _ := a.Do("POST", "/api/v1/servers/"+joined.Server.ID+"/connectivity-check", tok, nil, &started)
		return resp.StatusCode == http.StatusAccepted
	})
	waitJob(t, a, tok, started.JobID)
	if err := a.Stop(); err != nil {
		t.Fatalf("stop: %v\n%s", err, a.Stderr())
	}
	// Not corrupted, nothing half-written: the file checks out, and every
	// group is whole (a name, a row in the list) — the refused ones absent.
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "data", "lcm.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	var integrity string
	if err := db.QueryRowContext(context.Background(), "PRAGMA integrity_check").Scan(&integrity); err != nil || integrity != "ok" {
		t.Fatalf("integrity_check: %q %v", integrity, err)
	}
	db.Close()
	b := testutil.StartAPI(t, testutil.APIOptions{Dir: dir, Dev: true})
	tok = login(t, b, password)
	var groups []struct {
		Name string `json:"name"`
	}
	if resp, body := b.Do("GET", "/api/v1/server-groups", tok, nil, &groups); resp.StatusCode != http.StatusOK {
		t.Fatalf("groups after the restart: %d %s", resp.StatusCode, body)
	}
	names := map[string]bool{}
	for _, g := range groups {
		names[g.Name] = true
	}
	for i := 0; i < 20; i++ {
		if !names[fmt.Sprintf("before-%02d", i)] {
			t.Fatalf("group before-%02d lost", i)
		}
	}
	during := 0
	for n := range names {
		if strings.HasPrefix(n, "during-") {
			during++
		}
	}
	if during != accepted {
		t.Fatalf("%d groups written while full are stored, %d were answered 200", during, accepted)
	}
	figure(t, "data disk (64 MiB tmpfs) full under the all-in-one lcm-api: writes %s, never a 500; reads served, health %d; writes accepted again once space returned, no restart needed; SQLite integrity_check ok, every answered write stored and no refused one, restart clean",
		strings.Join(codes, ", "), health)
}

// login signs the admin in (all-in-one, --dev: no 2FA requirement).
func login(t *testing.T, a *testutil.API, password string) string {
	t.Helper()
	var res struct {
		Token string `json:"token"`
	}
	if resp, body := a.Do("POST", "/api/v1/auth/login", "", map[string]string{"username": "admin", "password": password}, &res); resp.StatusCode != http.StatusOK {
		t.Fatalf("login: %d %s", resp.StatusCode, body)
	}
	return res.Token
}

// waitJob waits until a job succeeded.
func waitJob(t *testing.T, a *testutil.API, tok, id string) {
	t.Helper()
	var job struct {
		Status string `json:"status"`
		Error  string `json:"error"`
	}
	testutil.WaitFor(t, 2*time.Minute, "job "+id+" final", func() bool {
		a.Do("GET", "/api/v1/jobs/"+id, tok, nil, &job)
		return job.Status == "success" || job.Status == "failed" || job.Status == "aborted"
	})
	if job.Status != "success" {
		t.Fatalf("job %s: %s %s", id, job.Status, job.Error)
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// jsonCode is the code of an error answer.
func jsonCode(body []byte) string {
	var e struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal(body, &e)
	return e.Code
}

package main

import (
	"bufio"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/testutil"
)

// TestFleetE2E drives the real binary against a real Debian test host:
// sign in, probe, confirm the fingerprint, join, upgrade-security, read the
// output by polling and by the live stream, history, and a manager who sees
// the server only once it is in one of its groups.
func TestFleetE2E(t *testing.T) {
	h := testutil.TestHostAt(t, 6)
	testutil.ResetTestHost(t, h)
	defer testutil.ResetTestHost(t, h)
	a := testutil.StartAPI(t, testutil.APIOptions{Dev: true})
	token := login(t, a, "admin", a.AdminPassword)

	var probe struct {
		FingerprintSHA256 string `json:"fingerprint_sha256"`
		HostKey           string `json:"host_key"`
	}
	resp, body := a.Do("POST", "/api/v1/servers/probe", token, map[string]any{"host": h.Host, "port": h.Port}, &probe)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(probe.FingerprintSHA256, "SHA256:") {
		t.Fatalf("probe: %d %s", resp.StatusCode, body)
	}
	var started struct {
		Status string `json:"status"`
		JobID  string `json:"job_id"`
		Server struct {
			ID string `json:"id"`
		} `json:"server"`
	}
	resp, body = a.Do("POST", "/api/v1/servers/join", token, map[string]any{
		"name": "e2e-web-01", "host": h.Host, "port": h.Port, "username": "root", "auth": "key",
		"private_key": string(h.PrivateKey), "host_key": probe.HostKey,
	}, &started)
	if resp.StatusCode/100 != 2 || started.Status != "started" || started.JobID == "" {
		t.Fatalf("join: %d %s", resp.StatusCode, body)
	}
	waitJob(t, a, token, started.JobID, "success")
	serverID := started.Server.ID

	resp, body = a.Do("POST", "/api/v1/servers/"+serverID+"/packages/upgrade-security", token, nil, &started)
	if resp.StatusCode/100 != 2 || started.Status != "started" {
		t.Fatalf("upgrade-security: %d %s", resp.StatusCode, body)
	}
	// The live stream: the first output event arrives while the job runs.
	req, _ := http.NewRequest("GET", a.BaseURL+"/api/v1/jobs/"+started.JobID+"/stream", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	stream, err := a.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stream.Body)
	sawOutput := false
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "event: output") {
			sawOutput = true
			break
		}
	}
	stream.Body.Close()
	if !sawOutput {
		t.Fatal("no output event on the live stream")
	}
	waitJob(t, a, token, started.JobID, "success")
	var out struct {
		Output   string `json:"output"`
		Complete bool   `json:"complete"`
	}
	a.Do("GET", "/api/v1/jobs/"+started.JobID+"/ssh-output", token, nil, &out)
	if !out.Complete || out.Output == "" {
		t.Fatalf("ssh-output: complete=%v %q", out.Complete, out.Output)
	}
	var hist struct {
		Items []struct {
			JobID string `json:"job_id"`
		} `json:"items"`
		Total int `json:"total"`
	}
	a.Do("GET", "/api/v1/jobs/history?server_id="+serverID, token, nil, &hist)
	if hist.Total < 2 {
		t.Fatalf("history: %+v", hist)
	}

	// A manager sees nothing outside its groups, then the server once its
	// group holds it.
	var mgr struct {
		ID string `json:"id"`
	}
	const mgrPassword = "Vq7#mLz2!pR9wXc4"
	resp, body = a.Do("POST", "/api/v1/users", token, map[string]any{"username": "mona", "first_name": "Mona",
		"last_name": "Manager", "email": "mona@example.com", "password": mgrPassword, "roles": []string{"manager"}}, &mgr)
	if resp.StatusCode/100 != 2 {
		t.Fatalf("create manager: %d %s", resp.StatusCode, body)
	}
	mtoken := login(t, a, "mona", mgrPassword)
	var servers []map[string]any
	a.Do("GET", "/api/v1/servers", mtoken, nil, &servers)
	if len(servers) != 0 {
		t.Fatalf("manager without groups sees %d servers", len(servers))
	}
	if resp, _ := a.Do("GET", "/api/v1/jobs/"+started.JobID+"/ssh-output", mtoken, nil, nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("manager read foreign output: %d", resp.StatusCode)
	}
	if resp, _ := a.Do("POST", "/api/v1/servers/"+serverID+"/packages/upgrade-security", mtoken, nil, nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("manager ran a job on a foreign server: %d", resp.StatusCode)
	}
	var group struct {
		ID string `json:"id"`
	}
	a.Do("POST", "/api/v1/server-groups/create", token, map[string]any{"name": "web"}, &group)
	a.Do("POST", "/api/v1/server-groups/"+group.ID+"/assign-server", token, map[string]any{"server_id": serverID}, nil)
	a.Do("POST", "/api/v1/server-groups/"+group.ID+"/assign-manager", token, map[string]any{"user_id": mgr.ID}, nil)
	a.Do("GET", "/api/v1/servers", mtoken, nil, &servers)
	if len(servers) != 1 || servers[0]["name"] != "e2e-web-01" {
		t.Fatalf("manager with group sees %v", servers)
	}
}

func login(t *testing.T, a *testutil.API, user, password string) string {
	t.Helper()
	var res struct {
		Token string `json:"token"`
	}
	resp, body := a.Do("POST", "/api/v1/auth/login", "", map[string]string{"username": user, "password": password}, &res)
	if resp.StatusCode != http.StatusOK || res.Token == "" {
		t.Fatalf("login %s: %d %s", user, resp.StatusCode, body)
	}
	return res.Token
}

func waitJob(t *testing.T, a *testutil.API, token, jobID, want string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	var job struct {
		Status string `json:"status"`
		Error  string `json:"error"`
	}
	for time.Now().Before(deadline) {
		a.Do("GET", "/api/v1/jobs/"+jobID, token, nil, &job)
		switch job.Status {
		case want:
			return
		case "failed", "aborted", "blocked", "success":
			var out struct {
				Output string `json:"output"`
			}
			a.Do("GET", "/api/v1/jobs/"+jobID+"/ssh-output", token, nil, &out)
			t.Fatalf("job %s ended %s (want %s): %s\n%s", jobID, job.Status, want, job.Error, out.Output)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("job %s still %s after 5 minutes", jobID, job.Status)
}

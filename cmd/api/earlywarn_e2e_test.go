package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/advisories/advisoriestest"
	"github.com/lcmproject/lcm/internal/testutil"
)

// TestEarlyWarningE2E drives the real binary: the early warning is off
// after installation, its 15-minute task is in the schedule registry,
// switching it on and polling a source (serving the real DSA-5724-1)
// works through the API, and a mirror run without refreshed servers
// reports why it fetched nothing.
func TestEarlyWarningE2E(t *testing.T) {
	dir := t.TempDir()
	src := advisoriestest.New(t)
	src.Publish(t, "Debian", "DSA-5724-1")
	a := testutil.StartAPI(t, testutil.APIOptions{Dev: true, Dir: dir})
	token := login(t, a, "admin", a.AdminPassword)

	var set struct {
		Enabled bool   `json:"enabled"`
		BaseURL string `json:"base_url"`
	}
	if resp, body := a.Do("GET", "/api/v1/security/advisories/settings", token, nil, &set); resp.StatusCode != http.StatusOK || set.Enabled ||
		set.BaseURL != "https://osv-vulnerabilities.storage.googleapis.com" {
		t.Fatalf("defaults: %d %s", resp.StatusCode, body)
	}
	resp, body := a.Do("GET", "/api/v1/settings/schedules", token, nil, nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"advisory_poll"`) || !strings.Contains(string(body), `*/15 * * * *`) {
		t.Fatalf("schedules: %d %s", resp.StatusCode, body)
	}
	if resp, body := a.Do("POST", "/api/v1/security/advisories/poll", token, nil, nil); resp.StatusCode != http.StatusConflict {
		t.Fatalf("poll while off: %d %s", resp.StatusCode, body)
	}
	if resp, body := a.Do("PUT", "/api/v1/security/advisories/settings", token, map[string]any{"enabled": true, "base_url": src.URL()}, &set); resp.StatusCode != http.StatusOK || !set.Enabled {
		t.Fatalf("enable: %d %s", resp.StatusCode, body)
	}
	if resp, body := a.Do("POST", "/api/v1/security/advisories/poll", token, nil, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("poll: %d %s", resp.StatusCode, body)
	}
	// No server was refreshed: the mirror has no ecosystem to fetch and
	// says so in the status.
	if resp, body := a.Do("POST", "/api/v1/security/advisories/mirror", token, nil, nil); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("mirror: %d %s", resp.StatusCode, body)
	}
	var st struct {
		LastPoll   *struct{ Error string } `json:"last_poll"`
		LastMirror *struct {
			Error string `json:"error"`
		} `json:"last_mirror"`
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		a.Do("GET", "/api/v1/security/advisories/status", token, nil, &st)
		if st.LastMirror != nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st.LastPoll == nil || st.LastMirror == nil || !strings.Contains(st.LastMirror.Error, "refresh the servers first") {
		t.Fatalf("status: %+v", st)
	}
	if resp, body := a.Do("GET", "/api/v1/security/caches", token, nil, nil); resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "scanner_match") {
		t.Fatalf("caches: %d %s", resp.StatusCode, body)
	}
}

package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/health"
	"github.com/lcmproject/lcm/internal/testutil"
)

// TestTenPanicsRestartTheAPI: the real lcm-api (built with the lcmtest tag,
// whose only difference is the panic trigger POST /api/v1/lcmtest/panic)
// recovers panics in an HTTP handler, in a background goroutine and in a
// NATS subscriber, answers and serves on, and counts each with its health
// monitor; the tenth within 15 minutes ends the process after a graceful
// shutdown with exit code 70, which the systemd unit restarts
// (RestartForceExitStatus=70). A production build has no such route.
func TestTenPanicsRestartTheAPI(t *testing.T) {
	a := testutil.StartAPI(t, testutil.APIOptions{Dev: true, Bin: testutil.APITestBinary(t)})
	tok := login(t, a, "admin", a.AdminPassword)
	recent := func() float64 {
		var h map[string]any
		a.Do("GET", "/api/v1/health", tok, nil, &h)
		v, _ := h["panics_recent"].(float64)
		return v
	}
	n := 0
	for _, in := range []string{"http", "goroutine", "bus"} {
		for range 3 {
			resp, body := a.Do("POST", "/api/v1/lcmtest/panic?in="+in, "", nil, nil)
			want := http.StatusAccepted
			if in == "http" {
				want = http.StatusInternalServerError
			}
			if resp.StatusCode != want || (in == "http" && !strings.Contains(string(body), `"code":"internal"`)) {
				t.Fatalf("panic in %s: %d %s", in, resp.StatusCode, body)
			}
			n++
			testutil.WaitFor(t, 10*time.Second, "the panic counted", func() bool { return recent() == float64(n) })
		}
	}
	if resp, _ := a.Do("GET", "/api/v1/servers", tok, nil, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("after %d panics the API answers %d", n, resp.StatusCode)
	}
	select {
	case <-a.Done():
		t.Fatalf("lcm-api ended after %d panics:\n%s", n, a.Stderr())
	default:
	}
	a.Do("POST", "/api/v1/lcmtest/panic?in=goroutine", "", nil, nil)
	if code := a.Wait(30 * time.Second); code != health.ExitSelfRestart {
		t.Fatalf("exit code %d after %d panics, want %d\n%s", code, health.MaxPanics, health.ExitSelfRestart, a.Stderr())
	}
	for _, want := range []string{"too many recovered panics: restarting the process", "=== LCM service stopped ==="} {
		if !strings.Contains(a.Stderr(), want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
	for _, where := range []string{`where=http`, `where="lcmtest goroutine"`, `where="bus subscriber lcm.lcmtest.panic"`} {
		if c := strings.Count(a.Stderr(), where); c < 3 {
			t.Errorf("%d panics logged with %s, want 3 or more", c, where)
		}
	}
}

// TestNoPanicTriggerInProduction: the binary the other tests and the
// packages use has no test route.
func TestNoPanicTriggerInProduction(t *testing.T) {
	a := testutil.StartAPI(t, testutil.APIOptions{Dev: true})
	if resp, body := a.Do("POST", "/api/v1/lcmtest/panic", "", nil, nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("production build: POST /api/v1/lcmtest/panic answered %d %s", resp.StatusCode, body)
	}
}

//go:build faults

package faults

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/topology"
)

// TestPostgresDown: PostgreSQL goes away from under two replicas, first
// refusing connections (down), later accepting them and answering nothing
// (hung). Each time: /health answers 503 at the first check on both
// replicas (within its 2 s budget); each replica ends itself with exit
// code 70 after five failed database checks; the supervisor (as systemd,
// Restart=always, 1 s) starts it again and again while the database is
// away; once it is back, both replicas are healthy without a manual step,
// the data is intact and jobs run.
func TestPostgresDown(t *testing.T) {
	interval := size(2, 15) // health_check_interval_seconds (15: the default)
	top := topology.Start(t, topology.Options{DBProxy: true, Config: map[string]any{"health_check_interval_seconds": interval}})
	token := top.Login()
	hosts := top.StartFleet(4, "-latency", "20ms")
	ids := top.Onboard(token, "dc1", hosts)
	var jobsBefore int
	if err := top.DB().QueryRowContext(context.Background(), "SELECT count(*) FROM jobs").Scan(&jobsBefore); err != nil {
		t.Fatal(err)
	}
	exits := make([]<-chan topology.Exit, len(top.APIs))
	for i, r := range top.APIs {
		exits[i], _ = r.Supervise(t, time.Second)
	}

	var figures []string
	for _, outage := range []struct {
		name string
		mode testutil.ProxyMode
	}{{"refusing connections", testutil.ProxyRefuse}, {"accepting connections and answering nothing", testutil.ProxyBlackHole}} {
		downAt := time.Now()
		top.DBProxy.SetMode(outage.mode)
		// One check: 503 from every replica, at once.
		var slowest time.Duration
		for _, r := range top.APIs {
			start := time.Now()
			resp, err := r.Direct.Get(r.URL() + "/api/v1/health")
			if err != nil {
				t.Fatalf("%s, %s: health: %v", outage.name, r.Name, err)
			}
			resp.Body.Close()
			d := time.Since(start)
			if resp.StatusCode != http.StatusServiceUnavailable || d > 3*time.Second {
				t.Fatalf("%s, %s: health %d after %s", outage.name, r.Name, resp.StatusCode, d)
			}
			slowest = max(slowest, d)
		}
		// Exit 70 after five failed checks (each bounded by the monitor's
		// 5 s ping timeout).
		bound := time.Duration(5*max(interval, 5)+10) * time.Second
		var exitAfter []string
		for i, r := range top.APIs {
			select {
			case e := <-exits[i]:
				if e.Code != 70 {
					t.Fatalf("%s, %s: exit code %d, want 70\n%s", outage.name, r.Name, e.Code, r.Tail(3000))
				}
				exitAfter = append(exitAfter, e.At.Sub(downAt).Round(time.Second).String())
			case <-time.After(bound):
				t.Fatalf("%s, %s: still running %s after the database went away", outage.name, r.Name, bound)
			}
		}
		// The supervisor keeps starting it; each start fails while the
		// database is away, and is started again.
		time.Sleep(3 * time.Second)
		upAt := time.Now()
		top.DBProxy.SetMode(testutil.ProxyPass)
		for _, r := range top.APIs {
			testutil.WaitFor(t, 2*time.Minute, r.Name+" healthy again", r.Healthy)
		}
		recovered := time.Since(upAt)
		top.WaitProxyUp(30 * time.Second)
		// Drain the exits of the failed starts meanwhile.
		restarts := 0
		for i := range top.APIs {
		drain:
			for {
				select {
				case <-exits[i]:
					restarts++
				default:
					break drain
				}
			}
		}
		figures = append(figures, fmt.Sprintf("%s: health 503 at the first check (slowest %s), exit 70 after %s, %d failed starts while away, healthy %s after it was back",
			outage.name, slowest.Round(time.Millisecond), strings.Join(exitAfter, "/"), restarts, recovered.Round(100*time.Millisecond)))
	}

	// Intact and working: the jobs from before are there, new ones run.
	token = top.Login()
	var jobs []string
	for _, id := range ids {
		job, r := submit(top, token, id, "connectivity-check")
		if job == "" {
			t.Fatalf("submit after recovery: %d %v %s", r.Code, r.Err, r.Body)
		}
		jobs = append(jobs, job)
	}
	top.WaitJobs(jobs, 2*time.Minute, "success")
	var jobsAfter int
	if err := top.DB().QueryRowContext(context.Background(), "SELECT count(*) FROM jobs").Scan(&jobsAfter); err != nil {
		t.Fatal(err)
	}
	if jobsAfter != jobsBefore+len(jobs) {
		t.Fatalf("jobs: %d before, %d after %d new", jobsBefore, jobsAfter, len(jobs))
	}
	figure(t, "PostgreSQL down under 2 replicas (health_check_interval_seconds %d): %s", interval, strings.Join(figures, "; "))
}

//go:build faults

package faults

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/jobs/runner"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/topology"
)

// assertBudgets reports whether timing budgets are asserted: on the full
// run (make faults) or when LCM_FAULTS_BUDGETS=1, never in CI's short run
// on a shared machine, which reports the figures only.
func assertBudgets() bool { return full() || os.Getenv("LCM_FAULTS_BUDGETS") == "1" }

// loadResult is the outcome of an open-loop load run.
type loadResult struct {
	sent, errors, refused int64
	lat                   []time.Duration
	elapsed               time.Duration
	byKind                map[string]int
	samples               map[string]int // error kinds
}

func (r loadResult) pct(p float64) time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	return r.lat[min(len(r.lat)-1, int(float64(len(r.lat))*p))]
}

// TestBudgetMixedLoad: two replicas behind nginx sustain 500 mixed
// requests a second with p99 ≤ 100 ms. The load is open-loop (a request
// starts every 2 ms whatever the answers do, its latency measured from
// its scheduled start, so a stall is not hidden), through the proxy, with
// sessions of two users: 80 % reads (the server list of 200 servers, a
// server, its active job, job history, the signed-in user), 10 % health
// checks, 5 % job submits (connectivity checks on idle servers, run by the
// workers: 25 jobs a second, all through ingest and finish hooks) and 5 %
// setting writes (a group's description, audited). No 5xx is allowed.
func TestBudgetMixedLoad(t *testing.T) {
	const rate = 500
	duration := time.Duration(size(15, 60)) * time.Second
	top := topology.Start(t, topology.Options{WorkerConcurrency: 256})
	admin := top.Login()
	hosts := top.StartFleet(200, "-latency", "5ms")
	half := len(hosts) / 2
	ids := append(top.Onboard(admin, "dc1", hosts[:half]), top.Onboard(admin, "dc2", hosts[half:])...)
	top.Must(http.StatusCreated, "POST", "/api/v1/users", admin, map[string]any{"username": "load", "first_name": "Load", "last_name": "Gen",
		"email": "load@example.org", "password": "Quiet-Harbor-Lantern-55", "roles": []string{"admin"}}, nil)
	var lg struct {
		Token string `json:"token"`
	}
	top.Must(http.StatusOK, "POST", "/api/v1/auth/login", "", map[string]string{"username": "load", "password": "Quiet-Harbor-Lantern-55"}, &lg)
	tokens := []string{admin, lg.Token}
	var group struct {
		ID string `json:"id"`
	}
	top.Must(http.StatusOK, "POST", "/api/v1/server-groups/create", admin, map[string]any{"name": "load"}, &group)
	// Warm up: every connection and cache, the workers' SSH pools.
	warm := make([]string, 0, len(ids))
	for _, id := range ids {
		if j, _ := submit(top, admin, id, "connectivity-check"); j != "" {
			warm = append(warm, j)
		}
	}
	top.WaitJobs(warm, 2*time.Minute, "success")

	// Idle servers are handed out to submits and return when their job
	// is final (polled by a helper, off the measured path).
	idle := make(chan string, len(ids))
	for _, id := range ids {
		idle <- id
	}
	var busyMu sync.Mutex
	busy := map[string]string{} // job → server
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			busyMu.Lock()
			var jobs []string
			for j := range busy {
				jobs = append(jobs, j)
			}
			busyMu.Unlock()
			if len(jobs) == 0 {
				continue
			}
			st := top.JobStatuses(jobs)
			busyMu.Lock()
			for _, j := range jobs {
				if s := st[j]; s == "success" || s == "failed" || s == "aborted" {
					idle <- busy[j]
					delete(busy, j)
				}
			}
			busyMu.Unlock()
		}
	}()

	res := loadResult{byKind: map[string]int{}, samples: map[string]int{}}
	cpu := newCPUMeter(top)
	load0 := loadAvg()
	var mu sync.Mutex
	var sent, errs, refused atomic.Int64
	var wg sync.WaitGroup
	rng := rand.New(rand.NewPCG(42, 500))
	interval := time.Second / rate
	start := time.Now()
	n := int(duration / interval)
	for i := 0; i < n; i++ {
		at := start.Add(time.Duration(i) * interval)
		time.Sleep(time.Until(at))
		tok := tokens[i%len(tokens)]
		x := rng.IntN(100)
		srv := ids[rng.IntN(len(ids))]
		wg.Add(1)
		go func() {
			defer wg.Done()
			var kind string
			var r topology.Response
			switch {
			case x < 20:
				kind = "GET /servers"
				r = top.Do("GET", "/api/v1/servers", tok, nil, nil)
			case x < 40:
				kind = "GET /servers/{id}"
				r = top.Do("GET", "/api/v1/servers/"+srv, tok, nil, nil)
			case x < 55:
				kind = "GET /jobs/history"
				r = top.Do("GET", "/api/v1/jobs/history?limit=20", tok, nil, nil)
			case x < 70:
				kind = "GET /auth/me"
				r = top.Do("GET", "/api/v1/auth/me", tok, nil, nil)
			case x < 80:
				kind = "GET /health"
				r = top.Do("GET", "/api/v1/health", "", nil, nil)
			case x < 90:
				kind = "GET /servers/{id}/active-job"
				r = top.Do("GET", "/api/v1/servers/"+srv+"/active-job", tok, nil, nil)
				if r.Code == http.StatusNotFound {
					r.Code = http.StatusOK // no active job: an answer like any other
				}
			case x < 95:
				kind = "POST connectivity-check"
				select {
				case id := <-idle:
					var js jobStarted
					r = top.Do("POST", "/api/v1/servers/"+id+"/connectivity-check", tok, nil, &js)
					if r.Code == http.StatusAccepted {
						busyMu.Lock()
						busy[js.JobID] = id
						busyMu.Unlock()
					} else {
						idle <- id
					}
				default:
					kind = "GET /servers/{id}" // every server busy: a read instead
					r = top.Do("GET", "/api/v1/servers/"+srv, tok, nil, nil)
				}
			default:
				kind = "PATCH group settings"
				r = top.Do("PATCH", "/api/v1/server-groups/"+group.ID+"/settings", tok, map[string]any{"description": fmt.Sprintf("load %d", x)}, nil)
			}
			lat := time.Since(at)
			sent.Add(1)
			switch {
			case r.Err != nil || r.Code >= 500:
				errs.Add(1)
			case r.Code >= 400:
				refused.Add(1)
			}
			mu.Lock()
			res.lat = append(res.lat, lat)
			res.byKind[kind]++
			if r.Err != nil || r.Code >= 500 {
				e := fmt.Sprintf("%s: %d", kind, r.Code)
				if r.Err != nil {
					e += " " + r.Err.Error()
				} else {
					e += " " + string(r.Body[:min(len(r.Body), 80)])
				}
				res.samples[e[:min(len(e), 160)]]++
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	close(stop)
	res.sent, res.errors, res.refused = sent.Load(), errs.Load(), refused.Load()
	sort.Slice(res.lat, func(i, j int) bool { return res.lat[i] < res.lat[j] })
	achieved := float64(res.sent) / res.elapsed.Seconds()
	figure(t, "2 replicas, open-loop %d req/s for %s through nginx (%v): %d requests at %.0f/s, p50 %s, p95 %s, p99 %s, max %s, %d errors (5xx/transport), %d refused (4xx); CPU: %s; machine load %s → %s",
		rate, duration, res.byKind, res.sent, achieved, res.pct(.5).Round(100*time.Microsecond), res.pct(.95).Round(100*time.Microsecond),
		res.pct(.99).Round(100*time.Microsecond), res.lat[len(res.lat)-1].Round(time.Millisecond), res.errors, res.refused, cpu.since(), load0, loadAvg())
	if res.errors != 0 {
		t.Fatalf("%d requests failed: %v", res.errors, res.samples)
	}
	if assertBudgets() {
		if achieved < rate*0.95 {
			t.Errorf("achieved %.0f req/s, budget %d", achieved, rate)
		}
		if p99 := res.pct(.99); p99 > 100*time.Millisecond {
			t.Errorf("p99 %s, budget 100 ms", p99)
		}
	}
}

// TestBudgetFleetRunWithRestarts: a security upgrade of 2,000 simulated
// servers in two segments (one bulk request through the proxy) while one
// API replica is restarted and the NATS node leading the job events stream
// is killed and started again. Nothing is lost: every job ends success
// with all its output.
func TestBudgetFleetRunWithRestarts(t *testing.T) {
	servers := size(300, 2000)
	top := topology.Start(t, topology.Options{WorkerConcurrency: 512})
	token := top.Login()
	hosts := top.StartFleet(servers, "-latency", "20ms", "-upgrade-time", "10s", "-keep-pending", "-output-bytes", "8192")
	half := len(hosts) / 2
	onboardStart := time.Now()
	ids := append(top.Onboard(token, "dc1", hosts[:half]), top.Onboard(token, "dc2", hosts[half:])...)
	onboard := time.Since(onboardStart)

	start := time.Now()
	jobs := bulk(t, top, token, "upgrade-security", ids)
	submitted := time.Since(start)
	testutil.WaitFor(t, 2*time.Minute, "a quarter of the jobs running", func() bool {
		n := 0
		for _, st := range top.JobStatuses(jobs) {
			if st == "running" || st == "success" {
				n++
			}
		}
		return n >= len(jobs)/4
	})
	top.APIs[0].Restart(t)
	info, _ := top.Stream("JOBEVENTS")
	node := top.Node(info.Leader)
	node.Kill()
	time.Sleep(5 * time.Second)
	node.Restart(t)
	st := top.WaitJobs(jobs, 15*time.Minute, "success")
	wall := time.Since(start)
	chunks := checkOutput(t, top, jobs)
	if t.Failed() {
		t.FailNow()
	}
	figure(t, "upgrade-security of %d simulated servers in 2 segments (10 s each, 2 workers × 512 in flight), replica api-1 restarted and NATS node %s (JOBEVENTS leader) killed and restarted during the run: %s, 0 lost, %d output chunks gap-free; bulk submitted in %s, all final after %s (onboarding took %s)",
		servers, info.Leader, countStatuses(st), chunks, submitted.Round(10*time.Millisecond), wall.Round(time.Second), onboard.Round(time.Second))
}

// loadAvg is the machine's 1-minute load average (the machine is shared).
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b))[0]
}

// TestBudgetTenThousandServers: issue 22's fleet size. A security upgrade
// (1 s per server) of 10,000 simulated servers (300 in the short run) in
// two segments, one bulk request through the proxy, one lcm-worker per
// segment at the worker's default concurrency, two API replicas on
// PostgreSQL, the simulators on the same machine. Budget: request to every
// job final (stored, ingested) ≤ 60 s, asserted in the full run only. The
// fleet is simulated by two cmd/fleetsim processes of half the servers
// each: a process holds two descriptors per simulated server, and the
// machine's hard limit is 20,000.
func TestBudgetTenThousandServers(t *testing.T) {
	servers := size(300, 10000)
	top := topology.Start(t, topology.Options{WorkerConcurrency: runner.DefaultConcurrency})
	token := top.Login()
	half := servers / 2
	args := []string{"-latency", "5ms", "-upgrade-time", "1s"}
	dc1, dc2 := top.StartFleet(half, args...), top.StartFleet(servers-half, args...)
	onboardStart := time.Now()
	ids := append(top.Onboard(token, "dc1", dc1), top.Onboard(token, "dc2", dc2)...)
	onboard := time.Since(onboardStart)

	load0 := loadAvg()
	start := time.Now()
	jobs := bulk(t, top, token, "upgrade-security", ids)
	submitted := time.Since(start)
	st := top.WaitJobs(jobs, 15*time.Minute, "success")
	wall := time.Since(start)
	if t.Failed() {
		t.FailNow()
	}
	figure(t, "upgrade-security of %d simulated servers in 2 segments (1 s each, 2 workers × %d in flight, 2 replicas, PostgreSQL), one bulk request: %s; submitted in %s, all final after %s (onboarding took %s); load %s → %s",
		servers, runner.DefaultConcurrency, countStatuses(st), submitted.Round(10*time.Millisecond), wall.Round(100*time.Millisecond),
		onboard.Round(time.Second), load0, loadAvg())
	if assertBudgets() && wall > time.Minute {
		t.Errorf("%d servers took %s, budget 60 s", servers, wall.Round(100*time.Millisecond))
	}
}

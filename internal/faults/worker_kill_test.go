//go:build faults

package faults

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/bus"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/topology"
)

// reapBound is how long after a worker's death its jobs may stay active:
// the reaper's HeartbeatTimeout (30 s) plus its interval (5 s) plus the
// lock check and slack for the shared machine.
const reapBound = 50 * time.Second

// TestWorkerKilledMidJob: kill -9 of a worker in the middle of a job, 100
// times over (a fresh worker process each time, each running a security
// upgrade that takes two minutes on its simulated host). Every affected
// job ends `failed` with "worker vanished" in its history within
// reapBound of the kill, no server lock is left in NATS, no job is run
// twice (the killed job's queue message, redelivered to the next worker,
// is refused by the claim), and every server accepts and runs the next job.
func TestWorkerKilledMidJob(t *testing.T) {
	kills := size(100, 100)
	top := topology.Start(t, topology.Options{Segments: []string{"dc1"}, NoWorkers: true})
	token := top.Login()
	hosts := top.StartFleet(kills, "-latency", "10ms", "-upgrade-time", "120s", "-keep-pending")
	onboarder := top.StartWorker("dc1")
	ids := top.Onboard(token, "dc1", hosts)
	onboarder.Stop()

	type victim struct {
		job, worker string
		killed      time.Time
	}
	victims := make([]victim, kills)
	start := time.Now()
	for i := 0; i < kills; i++ {
		w := top.StartWorker("dc1")
		job, r := submit(top, token, ids[i], "packages/upgrade-security")
		if job == "" {
			t.Fatalf("kill %d: submit: %d %v %.200s", i, r.Code, r.Err, r.Body)
		}
		testutil.WaitFor(t, time.Minute, "the job runs on the worker", func() bool {
			return top.JobStatuses([]string{job})[job] == "running"
		})
		w.Kill()
		victims[i] = victim{job: job, worker: w.ID, killed: time.Now()}
	}
	killing := time.Since(start)
	// A live worker again: it receives the killed jobs' redelivered queue
	// messages, which the claim must refuse.
	top.StartWorker("dc1")

	var worst time.Duration
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, v := range victims {
		wg.Add(1)
		go func() {
			defer wg.Done()
			deadline := v.killed.Add(reapBound)
			for {
				st := top.JobStatuses([]string{v.job})[v.job]
				if st == "failed" {
					break
				}
				if st != "running" && st != "started" {
					t.Errorf("kill %d: job %s is %s", i, v.job, st)
					return
				}
				if time.Now().After(deadline) {
					t.Errorf("kill %d: job %s still %s %s after the kill", i, v.job, st, reapBound)
					return
				}
				time.Sleep(200 * time.Millisecond)
			}
			mu.Lock()
			worst = max(worst, time.Since(v.killed))
			mu.Unlock()
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	var reasons []string
	for _, v := range victims {
		var msg, by, worker string
		if err := top.DB().QueryRowContext(context.Background(),
			"SELECT error, final_by, worker_id FROM jobs WHERE id = $1", v.job).Scan(&msg, &by, &worker); err != nil {
			t.Fatal(err)
		}
		// The killed worker ran it, and only it (a claim by the next
		// worker of the redelivered message would have changed nothing
		// but is refused anyway).
		if !strings.Contains(msg, "worker vanished") || by != "control" || worker != v.worker {
			reasons = append(reasons, v.job+": "+msg+" ("+by+", worker "+worker+", killed "+v.worker+")")
		}
	}
	if len(reasons) > 0 {
		t.Fatalf("jobs failed without the reason in their history:\n%s", strings.Join(reasons, "\n"))
	}

	// No lock left behind in NATS.
	b, err := bus.Connect(context.Background(), bus.ClientOptions{URL: top.NATSURLs(), Name: "fault-test"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	locks, err := b.Locks(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	left := 0
	for _, id := range ids {
		if _, _, err := locks.Get(context.Background(), id); !errors.Is(err, bus.ErrLockGone) {
			left++
		}
	}
	if left != 0 {
		t.Fatalf("%d server locks left after the jobs failed", left)
	}
	// The server accepts the next job at once and runs it.
	var next []string
	for _, id := range ids {
		job, r := submit(top, token, id, "connectivity-check")
		if job == "" {
			t.Fatalf("next job on %s: %d %v %.200s", id, r.Code, r.Err, r.Body)
		}
		next = append(next, job)
	}
	top.WaitJobs(next, 2*time.Minute, "success")
	if r := top.Do("GET", "/api/v1/health", token, nil, nil); r.Code != http.StatusOK {
		t.Fatalf("health after the kills: %d %s", r.Code, r.Body)
	}
	figure(t, "%d × kill -9 of a worker mid-job (%s of kills): %d/%d jobs failed \"worker vanished\", slowest %s after its kill (bound %s), 0 locks left, %d/%d servers ran the next job",
		kills, killing.Round(time.Second), kills, kills, worst.Round(time.Second), reapBound, len(next), len(ids))
}

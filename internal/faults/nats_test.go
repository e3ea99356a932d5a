//go:build faults

package faults

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/topology"
)

// checkOutput fails for every job whose stored chunks are not the
// gap-free sequence 0…n-1 adding up to the bytes its worker reported, and
// returns the number of chunks.
func checkOutput(t *testing.T, top *topology.Topology, jobs []string) int64 {
	t.Helper()
	rows, err := top.DB().QueryContext(context.Background(), `
		SELECT j.id, j.output_bytes, count(o.seq), coalesce(max(o.seq), -1), coalesce(sum(o.size), 0)
		FROM jobs j LEFT JOIN job_output o ON o.job_id = j.id
		WHERE j.id = ANY($1) GROUP BY j.id, j.output_bytes`, jobs)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var chunks int64
	seen := 0
	for rows.Next() {
		var id string
		var want, n, maxSeq, sum int64
		if err := rows.Scan(&id, &want, &n, &maxSeq, &sum); err != nil {
			t.Fatal(err)
		}
		seen++
		if n != maxSeq+1 || sum != want || want == 0 {
			t.Errorf("job %s: %d chunks, last seq %d, %d of %d bytes", id, n, maxSeq, sum, want)
		}
		chunks += n
	}
	if seen != len(jobs) {
		t.Errorf("%d of %d jobs in the database", seen, len(jobs))
	}
	return chunks
}

// bulk starts one job per server with one request and returns the ids.
func bulk(t *testing.T, top *topology.Topology, token, action string, ids []string) []string {
	t.Helper()
	var run struct {
		Items []struct {
			JobID string `json:"job_id"`
		} `json:"items"`
	}
	top.Must(http.StatusAccepted, "POST", "/api/v1/jobs/bulk", token, map[string]any{"action": action, "server_ids": ids}, &run)
	var jobs []string
	for _, it := range run.Items {
		if it.JobID != "" {
			jobs = append(jobs, it.JobID)
		}
	}
	if len(jobs) != len(ids) {
		t.Fatalf("bulk %s: %d jobs for %d servers", action, len(jobs), len(ids))
	}
	return jobs
}

// TestNATSNodeDownDuringFleetRun: a security upgrade of the whole fleet
// (two segments, one bulk request) while the NATS node leading the job
// events stream is killed (-9) mid-run. The streams and buckets are
// replicated on all three nodes (R3), so no job is lost: every job ends
// success with all its output; the node comes back and the next run works
// on all three.
func TestNATSNodeDownDuringFleetRun(t *testing.T) {
	servers := size(200, 600)
	top := topology.Start(t, topology.Options{WorkerConcurrency: 256})
	token := top.Login()
	hosts := top.StartFleet(servers, "-latency", "20ms", "-upgrade-time", "8s", "-keep-pending", "-output-bytes", "16384")
	half := len(hosts) / 2
	ids := append(top.Onboard(token, "dc1", hosts[:half]), top.Onboard(token, "dc2", hosts[half:])...)
	for _, s := range []string{"JOBS", "JOBEVENTS", "KV_LCM_LOCKS"} {
		info, ok := top.Stream(s)
		if !ok || len(info.Replicas) != 2 {
			t.Fatalf("stream %s is not replicated on three nodes: %+v", s, info)
		}
	}

	jobs := bulk(t, top, token, "upgrade-security", ids)
	testutil.WaitFor(t, time.Minute, "jobs running", func() bool {
		n := 0
		for _, st := range top.JobStatuses(jobs) {
			if st == "running" {
				n++
			}
		}
		return n >= len(jobs)/4
	})
	info, _ := top.Stream("JOBEVENTS")
	victim := top.Node(info.Leader)
	if victim == nil {
		t.Fatalf("no node named %q", info.Leader)
	}
	killedAt := time.Now()
	victim.Kill()
	st := top.WaitJobs(jobs, 5*time.Minute, "success")
	runTime := time.Since(killedAt)
	chunks := checkOutput(t, top, jobs)
	if t.Failed() {
		t.FailNow()
	}
	after, _ := top.Stream("JOBEVENTS")

	victim.Restart(t)
	testutil.WaitFor(t, time.Minute, "the node rejoins the stream", func() bool {
		i, ok := top.Stream("JOBEVENTS")
		return ok && len(i.Replicas) == 2
	})
	again := bulk(t, top, token, "upgrade-security", ids)
	top.WaitJobs(again, 5*time.Minute, "success")
	checkOutput(t, top, again)
	figure(t, "NATS node %s (leader of JOBEVENTS) killed -9 during an upgrade of %d servers in 2 segments: %s, run finished %s after the kill with %s as leader, %d output chunks gap-free; after it rejoined, %d more jobs all success",
		info.Leader, servers, countStatuses(st), runTime.Round(time.Second), after.Leader, chunks, len(again))
}

// TestAllNATSDown: the whole NATS cluster stops while jobs run. Submits
// answer 503 bus_unavailable and write nothing (no job row, no bulk run);
// the API keeps answering reads; when the cluster is back, everything
// recovers without a manual step: the running jobs finish with all their
// output, and new submits are accepted and run.
func TestAllNATSDown(t *testing.T) {
	top := topology.Start(t, topology.Options{WorkerConcurrency: 64})
	token := top.Login()
	hosts := top.StartFleet(20, "-latency", "20ms", "-upgrade-time", "25s", "-keep-pending", "-output-bytes", "16384")
	ids := top.Onboard(token, "dc1", hosts)
	running := bulk(t, top, token, "upgrade-security", ids[:10])
	testutil.WaitFor(t, time.Minute, "jobs running", func() bool {
		for _, st := range top.JobStatuses(running) {
			if st != "running" {
				return false
			}
		}
		return true
	})
	count := func(table string) int {
		var n int
		if err := top.DB().QueryRowContext(context.Background(), "SELECT count(*) FROM "+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	jobsBefore, bulksBefore := count("jobs"), count("bulk_runs")

	downAt := time.Now()
	for _, n := range top.NATS {
		n.Stop()
	}
	// Every replica notices at once (the connections close).
	for i, id := range ids[10:] {
		r := top.Do("POST", "/api/v1/servers/"+id+"/connectivity-check", token, nil, nil)
		if r.Code != http.StatusServiceUnavailable || !strings.Contains(string(r.Body), `"code":"bus_unavailable"`) {
			t.Fatalf("submit %d with NATS down: %d %v %s", i, r.Code, r.Err, r.Body)
		}
	}
	if r := top.Do("POST", "/api/v1/jobs/bulk", token, map[string]any{"action": "refresh", "server_ids": ids[10:]}, nil); r.Code != http.StatusServiceUnavailable {
		t.Fatalf("bulk with NATS down: %d %s", r.Code, r.Body)
	}
	if r := top.Do("GET", "/api/v1/servers", token, nil, nil); r.Code != http.StatusOK {
		t.Fatalf("reads with NATS down: %d %s", r.Code, r.Body)
	}
	if j, b := count("jobs"), count("bulk_runs"); j != jobsBefore || b != bulksBefore {
		t.Fatalf("refused submits wrote: jobs %d → %d, bulk runs %d → %d", jobsBefore, j, bulksBefore, b)
	}
	time.Sleep(10 * time.Second) // an outage, not a blip
	for _, n := range top.NATS {
		n.Start()
	}
	for _, n := range top.NATS {
		n.WaitHealthy(t)
	}
	top.WaitCluster()
	upAt := time.Now()
	// No manual step: submits are accepted again once the replicas
	// reconnected.
	var next []string
	testutil.WaitFor(t, 2*time.Minute, "submits accepted again", func() bool {
		job, _ := submit(top, token, ids[10], "connectivity-check")
		if job != "" {
			next = append(next, job)
		}
		return job != ""
	})
	recovered := time.Since(upAt)
	for _, id := range ids[11:] {
		job, r := submit(top, token, id, "connectivity-check")
		if job == "" {
			t.Fatalf("submit after recovery: %d %v %s", r.Code, r.Err, r.Body)
		}
		next = append(next, job)
	}
	top.WaitJobs(running, 3*time.Minute, "success")
	chunks := checkOutput(t, top, running)
	top.WaitJobs(next, 3*time.Minute, "success")
	if t.Failed() {
		t.FailNow()
	}
	figure(t, "all 3 NATS nodes stopped for %s with 10 jobs running: submits 503 bus_unavailable with nothing written, reads served; submits accepted %s after the cluster was back; the 10 jobs finished success with all %d output chunks, %d new jobs success",
		upAt.Sub(downAt).Round(time.Second), recovered.Round(100*time.Millisecond), chunks, len(next))
}

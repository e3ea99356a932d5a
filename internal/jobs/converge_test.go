package jobs

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/lcmproject/lcm/internal/bus"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/storetest"
)

// permutations returns every order of n items (as index lists).
func permutations(n int) [][]int {
	if n == 0 {
		return [][]int{{}}
	}
	var out [][]int
	for _, p := range permutations(n - 1) {
		for i := 0; i <= len(p); i++ {
			q := append(append(append([]int{}, p[:i]...), n-1), p[i:]...)
			out = append(out, q)
		}
	}
	return out
}

// TestIngestConvergesInAnyOrder: whatever order a job's events take — the
// worker's `running` and `success` (each ingested in its own batch, as two
// replicas would), a control-plane announcement of a failure, the reaper
// failing the job for a missed heartbeat, a redelivered `running` — and
// whether or not the claim reached the row first, the job ends as its
// worker reported: success, exit code 0, no error, decided by the worker.
// Nothing is left active, and nothing but the worker's report wins.
func TestIngestConvergesInAnyOrder(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			ctx := context.Background()
			st := storetest.Open(t, db.URL)
			s := New(st, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
			at := time.Now().UTC()
			exit0 := 0
			type event struct {
				name  string
				apply func(t *testing.T, j domain.Job)
			}
			ingest := func(st bus.StateMsg) func(t *testing.T, j domain.Job) {
				return func(t *testing.T, j domain.Job) {
					st.JobID = j.ID
					if err := s.ingest(ctx, []bus.Msg{stateMsg(t, st)}); err != nil {
						t.Fatal(err)
					}
				}
			}
			events := []event{
				{"running", ingest(bus.StateMsg{WorkerID: "w1", Seq: 1, Status: string(domain.JobRunning), At: at})},
				{"success", ingest(bus.StateMsg{WorkerID: "w1", Seq: 2, Status: string(domain.JobSuccess), At: at, ExitCode: &exit0})},
				{"announced failure", ingest(bus.StateMsg{WorkerID: "w1", Origin: bus.OriginControl, Status: string(domain.JobFailed), At: at, Error: "worker vanished"})},
				{"reaper", func(t *testing.T, j domain.Job) {
					if _, err := s.finish(ctx, j.ID, store.JobUpdate{Status: domain.JobFailed, At: at, Error: "worker vanished (test)"}); err != nil {
						t.Fatal(err)
					}
				}},
				{"redelivered running", ingest(bus.StateMsg{WorkerID: "w1", Seq: 1, Status: string(domain.JobRunning), At: at})},
			}
			orders := permutations(len(events))
			for _, claimed := range []bool{true, false} {
				// Unclaimed: as if the claim's row change had not landed
				// before the worker's reports.
				jobs := pendingJobs(t, st, domain.JobUpgradeSecurity, len(orders), claimed)
				for i, order := range orders {
					j := jobs[i]
					var names []string
					for _, k := range order {
						names = append(names, events[k].name)
						events[k].apply(t, j)
					}
					got, err := st.JobState(ctx, j.ID)
					if err != nil {
						t.Fatal(err)
					}
					if got.Status != domain.JobSuccess || got.FinalBy != domain.FinalByWorker || got.Error != "" ||
						got.ExitCode == nil || *got.ExitCode != 0 || got.WorkerID != "w1" || got.StateSeq != 2 || got.FinishedAt == nil || got.StartedAt == nil {
						t.Fatalf("claimed %v, order %v: job ends %s (final_by %q, error %q, worker %q, seq %d, exit %v)", claimed, names,
							got.Status, got.FinalBy, got.Error, got.WorkerID, got.StateSeq, fmt.Sprint(got.ExitCode))
					}
				}
			}
		})
	}
}

// TestControlFinalNeverReplacesWorkerFinal: the reaper and an abort find
// a job the worker already finished and change nothing.
func TestControlFinalNeverReplacesWorkerFinal(t *testing.T) {
	ctx := context.Background()
	st := storetest.Open(t, "")
	s := New(st, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	j := runningJobs(t, st, domain.JobUpgradeSecurity, 1)[0]
	one := 1
	if err := s.ingest(ctx, []bus.Msg{stateMsg(t, bus.StateMsg{JobID: j.ID, WorkerID: "w1", Seq: 2, Status: string(domain.JobFailed), At: time.Now().UTC(), ExitCode: &one, Error: "apt failed"})}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.finish(ctx, j.ID, store.JobUpdate{Status: domain.JobFailed, At: time.Now().UTC(), Error: "worker vanished"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.finish(ctx, j.ID, store.JobUpdate{Status: domain.JobAborted, At: time.Now().UTC(), Error: "aborted"}); err != nil {
		t.Fatal(err)
	}
	got, err := st.JobState(ctx, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != domain.JobFailed || got.Error != "apt failed" || got.FinalBy != domain.FinalByWorker {
		t.Fatalf("job: %s %q %q", got.Status, got.Error, got.FinalBy)
	}
}

// pendingJobs stores n servers, each with a pending job of kind, claimed
// by worker w1 when claim is set.
func pendingJobs(t *testing.T, st *store.Store, kind domain.JobKind, n int, claim bool) []domain.Job {
	t.Helper()
	if claim {
		return runningJobs(t, st, kind, n)
	}
	ctx := context.Background()
	var out []domain.Job
	for range n {
		srv, err := st.CreateServer(ctx, store.NewServer{Server: domain.Server{Name: "srv-" + uuid.NewString()[:8], Host: "192.0.2.1", Port: 22,
			Transport: domain.TransportSSH, Status: domain.ServerUnknown, AuthMethod: domain.AuthKey, HostKey: "k", Joined: true}})
		if err != nil {
			t.Fatal(err)
		}
		j := domain.Job{ID: uuid.NewString(), Kind: kind, ServerID: srv.ID, Segment: "default", Status: domain.JobPending, CreatedAt: time.Now().UTC()}
		if err := st.CreateJob(ctx, j); err != nil {
			t.Fatal(err)
		}
		out = append(out, j)
	}
	return out
}

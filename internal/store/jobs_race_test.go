package store

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/testutil"
)

// TestFinalStateSurvivesRacingReplicas: two replicas (two stores on one
// PostgreSQL database) ingest events of the same jobs at the same time —
// one stores `running`, the other `success`, in either order. Every job
// must end `success`: the final state is never dropped because the row
// moved between a replica's read and its conditional update (seen as about
// 1 job in 1,000 left `running` and later failed as "worker vanished").
func TestFinalStateSurvivesRacingReplicas(t *testing.T) {
	url := testutil.PostgresURL(t)
	a, dir := openTest(t, testutil.DB{Name: "postgres", URL: url})
	b, err := Open(context.Background(), Options{URL: url, DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	b.SetKeyring(a.Keyring())
	ctx := context.Background()
	srv, err := a.CreateServer(ctx, NewServer{Server: domain.Server{Name: "race", Host: "192.0.2.9", Port: 22,
		Transport: domain.TransportSSH, Status: domain.ServerUnknown, AuthMethod: domain.AuthKey, HostKey: "k"}})
	if err != nil {
		t.Fatal(err)
	}
	const n = 400
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("race-%04d", i)
		if err := a.CreateJob(ctx, domain.Job{ID: id, Kind: domain.JobUpgradeSecurity, ServerID: srv.ID, Segment: "default", Status: domain.JobPending}); err != nil {
			t.Fatal(err)
		}
		if _, err := a.ClaimJob(ctx, id, srv.ID, "w1", time.Now()); err != nil {
			t.Fatal(err)
		}
		// Finish the job so the next one can be claimed on the same server.
		var wg sync.WaitGroup
		wg.Add(2)
		code := 0
		go func() {
			defer wg.Done()
			if _, err := a.TransitionJobs(ctx, []JobTransition{{JobID: id, Update: JobUpdate{Status: domain.JobRunning, WorkerID: "w1", At: time.Now()}}}); err != nil {
				t.Error(err)
			}
		}()
		go func() {
			defer wg.Done()
			if _, err := b.TransitionJobs(ctx, []JobTransition{{JobID: id, Update: JobUpdate{Status: domain.JobSuccess, WorkerID: "w1", At: time.Now(), ExitCode: &code}}}); err != nil {
				t.Error(err)
			}
		}()
		wg.Wait()
		j, err := a.GetJob(ctx, SystemScope, id)
		if err != nil {
			t.Fatal(err)
		}
		if j.Status != domain.JobSuccess {
			t.Fatalf("job %d ended %s, want success", i, j.Status)
		}
	}
}

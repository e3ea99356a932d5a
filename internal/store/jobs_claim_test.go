package store

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/testutil"
)

// TestClaimJobs: one transaction claims many jobs with ClaimJob's rules,
// on SQLite and PostgreSQL.
func TestClaimJobs(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			s, _ := openTest(t, db)
			ctx := context.Background()
			var srvs []domain.Server
			for i := range 3 {
				srv, err := s.CreateServer(ctx, NewServer{Server: domain.Server{Name: fmt.Sprintf("s%d", i), Host: "h", Port: 22, HostKey: "k"},
					Secrets: ServerSecrets{PrivateKey: fmt.Sprintf("KEY-%d", i)}})
				if err != nil {
					t.Fatal(err)
				}
				srvs = append(srvs, srv)
				if err := s.CreateJob(ctx, domain.Job{ID: fmt.Sprintf("job-%d", i), Kind: domain.JobRefresh, ServerID: srv.ID,
					Segment: "default", Status: domain.JobPending}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.ClaimJob(ctx, "job-2", srvs[2].ID, "w2", o2t()); err != nil {
				t.Fatal(err)
			}
			res, err := s.ClaimJobs(ctx, []Claim{
				{JobID: "job-0", ServerID: srvs[0].ID, WorkerID: "w1"}, // pending: claimed
				{JobID: "job-0", ServerID: srvs[0].ID, WorkerID: "w1"}, // the same worker again: answered
				{JobID: "job-0", ServerID: srvs[0].ID, WorkerID: "w9"}, // another worker: refused
				{JobID: "job-1", ServerID: srvs[0].ID, WorkerID: "w1"}, // wrong server
				{JobID: "job-2", ServerID: srvs[2].ID, WorkerID: "w1"}, // runs on w2
				{JobID: "job-2", ServerID: srvs[2].ID, WorkerID: "w2"}, // w2's retry
				{JobID: "nope", ServerID: srvs[0].ID, WorkerID: "w1"},
			}, o2t())
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"ok", "ok", "not_claimable", "not_claimable", "not_claimable", "ok", "not_found"}
			for i, r := range res {
				got := "ok"
				var de *domain.Error
				switch {
				case errors.Is(r.Err, domain.ErrNotFound):
					got = "not_found"
				case errors.As(r.Err, &de):
					got = de.Code
				case r.Err != nil:
					got = r.Err.Error()
				}
				if got != want[i] {
					t.Errorf("claim %d: %s, want %s", i, got, want[i])
				}
			}
			if res[0].Job.Status != domain.JobStarted || res[0].Job.WorkerID != "w1" {
				t.Errorf("claimed job: %+v", res[0].Job)
			}
			if j, _ := s.JobState(ctx, "job-0"); j.Status != domain.JobStarted || j.WorkerID != "w1" || j.StartedAt == nil {
				t.Errorf("stored: %+v", j)
			}
			if j, _ := s.JobState(ctx, "job-1"); j.Status != domain.JobPending {
				t.Errorf("job-1 changed: %+v", j)
			}
			_, secs, err := s.ServerSecretsOfMany(ctx, []string{srvs[0].ID, srvs[1].ID, "missing"})
			if err != nil || len(secs) != 2 || secs[srvs[1].ID].PrivateKey != "KEY-1" {
				t.Fatalf("secrets: %v %+v", err, secs)
			}
		})
	}
}

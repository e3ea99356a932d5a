package status_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/status"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/storetest"
)

// TestJobsFinishedMatchesJobFinished: the batch hook stores what the
// single hook stores job by job, and a server deleted meanwhile fails
// alone.
func TestJobsFinishedMatchesJobFinished(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			ctx := context.Background()
			st := storetest.Open(t, db.URL)
			now := time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)
			svc := status.New(st, slog.New(slog.NewTextHandler(io.Discard, nil)))
			svc.SetClock(func() time.Time { return now })
			jobsOf := func(prefix string) []domain.Job {
				var out []domain.Job
				for i, c := range []struct {
					status      domain.JobStatus
					unreachable bool
				}{{domain.JobSuccess, false}, {domain.JobFailed, true}, {domain.JobFailed, false}, {domain.JobAborted, false}} {
					srv, err := st.CreateServer(ctx, store.NewServer{Server: domain.Server{Name: fmt.Sprintf("%s-%d", prefix, i), Host: "192.0.2.1",
						Port: 22, Transport: domain.TransportSSH, Status: domain.ServerUnknown, AuthMethod: domain.AuthKey, HostKey: "k"}})
					if err != nil {
						t.Fatal(err)
					}
					out = append(out, domain.Job{ID: fmt.Sprint(i), Kind: domain.JobRefresh, ServerID: srv.ID, Status: c.status,
						Error: "dial tcp: timeout", Unreachable: c.unreachable})
				}
				return out
			}
			single, batch := jobsOf("single"), jobsOf("batch")
			for round := range 2 { // the second round sees stored statuses
				for _, j := range single {
					if err := svc.JobFinished(ctx, j, j.Unreachable); err != nil {
						t.Fatal(err)
					}
				}
				for i, err := range svc.JobsFinished(ctx, batch) {
					if err != nil {
						t.Fatalf("round %d, job %d: %v", round, i, err)
					}
				}
				for i := range single {
					a, _ := st.LoadStatusInputs(ctx, single[i].ServerID)
					b, _ := st.LoadStatusInputs(ctx, batch[i].ServerID)
					if fmt.Sprint(a.FailedContacts, a.ContactError, a.UnreachableSince, a.LastSeenAt, a.Previous.Status, a.Previous.InsightsJSON) !=
						fmt.Sprint(b.FailedContacts, b.ContactError, b.UnreachableSince, b.LastSeenAt, b.Previous.Status, b.Previous.InsightsJSON) {
						t.Fatalf("round %d, job %d: single stored %+v %s, batch %+v %s", round, i, a, a.Previous.InsightsJSON, b, b.Previous.InsightsJSON)
					}
				}
			}
			if err := st.DeleteServer(ctx, batch[1].ServerID); err != nil {
				t.Fatal(err)
			}
			errs := svc.JobsFinished(ctx, batch)
			for i, err := range errs {
				if (i == 1) != (err != nil) {
					t.Fatalf("after deleting server 1: errors %v", errs)
				}
			}
			if !errors.Is(errs[1], domain.ErrNotFound) {
				t.Fatalf("deleted server: %v", errs[1])
			}
			if in, _ := st.LoadStatusInputs(ctx, batch[0].ServerID); in.LastSeenAt == nil || in.Previous == nil {
				t.Fatalf("the others were not stored: %+v", in)
			}
		})
	}
}

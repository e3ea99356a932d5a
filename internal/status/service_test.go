package status_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
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

// TestOnChange: the hook runs when a recompute stored a changed outcome
// (new findings), not when nothing changed.
func TestOnChange(t *testing.T) {
	ctx := context.Background()
	st := storetest.Open(t, "")
	svc := status.New(st, slog.New(slog.NewTextHandler(io.Discard, nil)))
	calls := 0
	svc.OnChange(func() { calls++ })
	srv, err := st.CreateServer(ctx, store.NewServer{Server: domain.Server{Name: "hooked", Host: "192.0.2.1",
		Port: 22, Transport: domain.TransportSSH, Status: domain.ServerUnknown, AuthMethod: domain.AuthKey, HostKey: "k"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.RecordContact(ctx, srv.ID, true, ""); err != nil {
		t.Fatal(err)
	}
	first := calls
	if _, err := svc.Recompute(ctx, srv.ID); err != nil || calls != first {
		t.Fatalf("unchanged recompute called the hook (%d → %d, %v)", first, calls, err)
	}
	if _, err := svc.SetFindings(ctx, srv.ID, []status.Finding{{CVE: "CVE-2026-2", Package: "p", Severity: "critical"}}); err != nil {
		t.Fatal(err)
	}
	if calls != first+1 {
		t.Fatalf("findings stored without the hook: %d calls", calls)
	}
}

// TestExcellentFromStoredHardening: the proven SSH hardening and the
// read-back firewall stored on the server make a healthy server excellent;
// a firewall read back inactive takes it back to green, naming why. On
// SQLite and PostgreSQL.
func TestExcellentFromStoredHardening(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			ctx := context.Background()
			st := storetest.Open(t, db.URL)
			svc := status.New(st, slog.New(slog.NewTextHandler(io.Discard, nil)))
			srv, err := st.CreateServer(ctx, store.NewServer{Server: domain.Server{Name: fmt.Sprintf("excellent-%d", time.Now().UnixNano()), Host: "192.0.2.1",
				Port: 22, Transport: domain.TransportSSH, Status: domain.ServerUnknown, AuthMethod: domain.AuthKey, HostKey: "k"}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.DeleteServer(ctx, srv.ID) })
			r, err := svc.RecordContact(ctx, srv.ID, true, "")
			if err != nil || r.Status != domain.ServerGreen {
				t.Fatalf("contacted: %+v %v", r, err)
			}
			yes := true
			if err := st.RecordSSHProof(ctx, srv.ID, store.SSHProof{Hardened: &yes, Lines: []string{"passwordauthentication no"}, At: time.Now()}); err != nil {
				t.Fatal(err)
			}
			if err := st.RecordFirewall(ctx, srv.ID, "ufw", true, []byte(`[{"port":22,"proto":"tcp"}]`), time.Now()); err != nil {
				t.Fatal(err)
			}
			r, err = svc.Recompute(ctx, srv.ID)
			if err != nil || r.Status != domain.ServerExcellent || r.Insights[0].Code != "excellent" {
				t.Fatalf("hardened and firewalled: %+v %v", r, err)
			}
			if s, _ := st.GetServer(ctx, store.SystemScope, srv.ID); s.Status != domain.ServerExcellent || !s.Hardening.FirewallActive || s.Hardening.FirewallTool != "ufw" {
				t.Fatalf("server record: %s %+v", s.Status, s.Hardening)
			}
			if err := st.RecordFirewall(ctx, srv.ID, "ufw", false, nil, time.Now()); err != nil {
				t.Fatal(err)
			}
			r, err = svc.Recompute(ctx, srv.ID)
			last := r.Insights[len(r.Insights)-1]
			if err != nil || r.Status != domain.ServerGreen || last.Code != "not_excellent" || !strings.Contains(last.Text, "the firewall (ufw) is not active") {
				t.Fatalf("firewall off: %+v %v", r, err)
			}
		})
	}
}

package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/lcmproject/lcm/internal/bus"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/storetest"
)

// fakeMsg is a fetched event.
type fakeMsg struct {
	subject string
	data    []byte
}

func (m fakeMsg) Subject() string                { return m.subject }
func (m fakeMsg) Data() []byte                   { return m.data }
func (fakeMsg) Ack() error                       { return nil }
func (fakeMsg) DoubleAck(context.Context) error  { return nil }
func (fakeMsg) Nak() error                       { return nil }
func (fakeMsg) NakWithDelay(time.Duration) error { return nil }
func (fakeMsg) InProgress() error                { return nil }
func (fakeMsg) Term() error                      { return nil }
func stateMsg(t *testing.T, st bus.StateMsg) bus.Msg {
	t.Helper()
	st.V = bus.MessageVersion
	if st.Type == "" {
		st.Type = bus.TypeState
	}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	return fakeMsg{subject: bus.JobStateSubject(st.JobID), data: b}
}

// runningJobs stores n servers, each with a running job of kind claimed
// by worker w1.
func runningJobs(t *testing.T, st *store.Store, kind domain.JobKind, n int) []domain.Job {
	t.Helper()
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
		if j, err = st.ClaimJob(ctx, j.ID, srv.ID, "w1", time.Now().UTC()); err != nil {
			t.Fatal(err)
		}
		out = append(out, j)
	}
	return out
}

// TestIngestRunsBatchHooks: the final states of one fetched batch reach a
// kind's batch hook in one call, in registration order with the single
// hooks; no job reads as final before its hooks ran; a job whose hook
// failed still finishes; a repeated final state and an unknown job are
// ignored.
func TestIngestRunsBatchHooks(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			ctx := context.Background()
			st := storetest.Open(t, db.URL)
			s := New(st, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
			refreshes := runningJobs(t, st, domain.JobRefresh, 3)
			checks := runningJobs(t, st, domain.JobConnectivity, 1)

			var mu sync.Mutex
			var events []string // "<hook> <job id>"
			var batches [][]string
			note := func(hook, id string) {
				mu.Lock()
				defer mu.Unlock()
				events = append(events, hook+" "+id)
			}
			notFinal := func(id string) {
				if j, err := st.JobState(ctx, id); err != nil || j.Status.Terminal() {
					t.Errorf("job %s reads %s in its finish hook (%v)", id, j.Status, err)
				}
			}
			s.OnFinish(domain.JobRefresh, func(_ context.Context, j domain.Job) error { note("first", j.ID); return nil })
			s.OnFinishBatch(domain.JobRefresh, func(_ context.Context, jobs []domain.Job) []error {
				ids := make([]string, len(jobs))
				errs := make([]error, len(jobs))
				for i, j := range jobs {
					ids[i] = j.ID
					note("batch", j.ID)
					notFinal(j.ID)
					if j.Status != domain.JobSuccess || string(j.Data) != "data-"+j.ID {
						t.Errorf("batch hook sees %s with data %q", j.Status, j.Data)
					}
					if j.ID == refreshes[1].ID {
						errs[i] = errors.New("hook failed")
					}
				}
				mu.Lock()
				batches = append(batches, ids)
				mu.Unlock()
				return errs
			})
			s.OnFinish(domain.JobRefresh, func(_ context.Context, j domain.Job) error { note("last", j.ID); return nil })
			s.OnFinishBatch(domain.JobConnectivity, func(_ context.Context, jobs []domain.Job) []error {
				for _, j := range jobs {
					note("check", j.ID)
					notFinal(j.ID)
				}
				return nil
			})

			at := time.Now().UTC()
			exit0 := 0
			final := func(j domain.Job) bus.Msg {
				return stateMsg(t, bus.StateMsg{JobID: j.ID, WorkerID: "w1", Status: string(domain.JobSuccess), At: at, ExitCode: &exit0,
					Data: []byte("data-" + j.ID)})
			}
			msgs := []bus.Msg{
				stateMsg(t, bus.StateMsg{JobID: refreshes[0].ID, WorkerID: "w1", Status: string(domain.JobRunning), At: at}),
				stateMsg(t, bus.StateMsg{Type: bus.TypeHeartbeat, JobID: refreshes[2].ID, WorkerID: "w1", At: at}),
				final(refreshes[0]), final(checks[0]), final(refreshes[1]),
				final(refreshes[0]), // redelivered
				stateMsg(t, bus.StateMsg{JobID: refreshes[0].ID, WorkerID: "w1", Status: string(domain.JobRunning), At: at}), // after its end
				final(refreshes[2]),
				final(domain.Job{ID: uuid.NewString()}), // unknown
			}
			if err := s.ingest(ctx, msgs); err != nil {
				t.Fatal(err)
			}
			for _, j := range append(slices.Clone(refreshes), checks...) {
				got, err := st.JobState(ctx, j.ID)
				if err != nil || got.Status != domain.JobSuccess {
					t.Fatalf("job %s: %s %v", j.ID, got.Status, err)
				}
			}
			want := [][]string{{refreshes[0].ID, refreshes[1].ID, refreshes[2].ID}}
			if fmt.Sprint(batches) != fmt.Sprint(want) {
				t.Fatalf("batch hook calls %v, want %v", batches, want)
			}
			var wantEvents []string
			for _, hook := range []string{"first", "batch", "last"} {
				for _, j := range refreshes {
					wantEvents = append(wantEvents, hook+" "+j.ID)
				}
			}
			wantEvents = append(wantEvents, "check "+checks[0].ID)
			// Per job, the hooks ran in registration order.
			pos := map[string]int{}
			for i, e := range events {
				pos[e] = i
			}
			for _, j := range refreshes {
				if !(pos["first "+j.ID] < pos["batch "+j.ID] && pos["batch "+j.ID] < pos["last "+j.ID]) {
					t.Errorf("job %s: hooks out of registration order: %v", j.ID, events)
				}
			}
			slices.Sort(events)
			slices.Sort(wantEvents)
			if fmt.Sprint(events) != fmt.Sprint(wantEvents) {
				t.Fatalf("hooks ran\n%v\nwant\n%v", events, wantEvents)
			}
		})
	}
}

// TestIngestHookPanicIsRecovered: a finish hook that panics while the
// ingest stores a batch (here on the second job of a kind) is recovered,
// logged and counted for the health monitor; every job of the batch still
// finishes and the other kinds' hooks run, so a redelivered batch does not
// meet the same panic again.
func TestIngestHookPanicIsRecovered(t *testing.T) {
	ctx := context.Background()
	st := storetest.Open(t, "")
	s := New(st, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	panics := testutil.CountPanics(t)
	refreshes := runningJobs(t, st, domain.JobRefresh, 2)
	checks := runningJobs(t, st, domain.JobConnectivity, 1)
	var seen []string
	s.OnFinish(domain.JobRefresh, func(_ context.Context, j domain.Job) error {
		if j.ID == refreshes[1].ID {
			var m map[string]bool
			m[j.ID] = true // the hook met data it did not expect
		}
		seen = append(seen, "refresh")
		return nil
	})
	s.OnFinishBatch(domain.JobConnectivity, func(_ context.Context, jobs []domain.Job) []error {
		panic("batch hook broke")
	})
	s.OnFinish(domain.JobConnectivity, func(_ context.Context, j domain.Job) error { seen = append(seen, "check"); return nil })
	exit0 := 0
	var msgs []bus.Msg
	for _, j := range append(slices.Clone(refreshes), checks...) {
		msgs = append(msgs, stateMsg(t, bus.StateMsg{JobID: j.ID, WorkerID: "w1", Status: string(domain.JobSuccess), At: time.Now().UTC(), ExitCode: &exit0}))
	}
	if err := s.ingest(ctx, msgs); err != nil {
		t.Fatal(err)
	}
	if got := panics(); got != 2 {
		t.Fatalf("%d panics counted, want 2 (one single hook, one batch hook)", got)
	}
	if fmt.Sprint(seen) != "[refresh check]" {
		t.Fatalf("hooks that ran: %v", seen)
	}
	for _, j := range append(slices.Clone(refreshes), checks...) {
		if got, err := st.JobState(ctx, j.ID); err != nil || got.Status != domain.JobSuccess {
			t.Fatalf("job %s after a panicking hook: %s %v", j.ID, got.Status, err)
		}
	}
}

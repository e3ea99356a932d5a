package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/fleetsim"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/plane"
)

// TestManagerSeesOnlyItsGroups: a manager can neither see, run, read nor
// abort anything of a server outside its groups, on every endpoint.
func TestManagerSeesOnlyItsGroups(t *testing.T) {
	f := startSim(t, 2, 2*time.Second, "apt output\n")
	p := plane.Start(t, plane.Options{})
	ctx := context.Background()
	g1, err := p.Fleet.CreateGroup(ctx, domain.Group{Name: "team-a"})
	if err != nil {
		t.Fatal(err)
	}
	g2, _ := p.Fleet.CreateGroup(ctx, domain.Group{Name: "team-b"})
	mine := simServer(t, p, f.Instances[0], g1.ID)
	other := simServer(t, p, f.Instances[1], g2.ID)
	m := p.Manager(t, "manager-a")
	if _, err := p.Fleet.AssignManager(ctx, g1.ID, m.UserID); err != nil {
		t.Fatal(err)
	}
	otherJob, err := p.Fleet.UpgradeSecurity(ctx, p.Admin, other.ID)
	if err != nil {
		t.Fatal(err)
	}

	list, err := p.Fleet.List(ctx, m, storeFilter())
	if err != nil || len(list) != 1 || list[0].ID != mine.ID {
		t.Fatalf("manager lists %v %+v", err, list)
	}
	if all, _ := p.Fleet.List(ctx, p.Admin, storeFilter()); len(all) != 2 {
		t.Fatalf("admin must see all servers, sees %d", len(all))
	}
	groups, _ := p.Fleet.ListGroups(ctx, m)
	if len(groups) != 1 || groups[0].ID != g1.ID {
		t.Fatalf("manager groups %+v", groups)
	}
	notFound := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("%s outside the manager's groups: want not found, got %v", what, err)
		}
	}
	_, err = p.Fleet.Get(ctx, m, other.ID)
	notFound("get server", err)
	_, err = p.Fleet.UpgradeSecurity(ctx, m, other.ID)
	notFound("upgrade-security", err)
	_, err = p.Fleet.Reconnect(ctx, m, other.ID)
	notFound("reconnect", err)
	_, err = p.Fleet.RotateKey(ctx, m, other.ID)
	notFound("rotate-key", err)
	_, err = p.Fleet.Decommission(ctx, m, other.ID)
	notFound("decommission", err)
	name := "x"
	_, err = p.Fleet.UpdateSettings(ctx, m, other.ID, settingsName(&name))
	notFound("settings", err)
	_, err = p.Jobs.ActiveJob(ctx, m, other.ID)
	notFound("active job", err)
	_, err = p.Jobs.Get(ctx, m, otherJob.ID)
	notFound("job", err)
	_, err = p.Jobs.Output(ctx, m, otherJob.ID, 0)
	notFound("ssh-output", err)
	_, err = p.Jobs.Follow(ctx, m, otherJob.ID)
	notFound("stream", err)
	_, err = p.Jobs.Abort(ctx, m, otherJob.ID)
	notFound("abort", err)
	_, err = p.Fleet.GetGroup(ctx, m, g2.ID)
	notFound("group", err)
	hist, total, err := p.Jobs.History(ctx, m, domain.JobFilter{})
	if err != nil || total != 0 || len(hist) != 0 {
		t.Fatalf("manager history shows foreign jobs: %v %d", err, total)
	}
	hist, total, _ = p.Jobs.History(ctx, m, domain.JobFilter{ServerID: other.ID})
	if total != 0 || len(hist) != 0 {
		t.Fatal("history filtered by a foreign server id leaks its jobs")
	}
	// Its own server works end to end.
	own, err := p.Fleet.UpgradeSecurity(ctx, m, mine.ID)
	if err != nil {
		t.Fatal(err)
	}
	if j := p.WaitJob(t, own.ID, 20*time.Second); j.Status != domain.JobSuccess || j.CreatedBy != m.UserID {
		t.Fatalf("manager's job %+v", j)
	}
	if _, total, _ := p.Jobs.History(ctx, m, domain.JobFilter{}); total != 1 {
		t.Fatalf("manager history: %d jobs, want 1", total)
	}
	// A manager that leaves the group loses the server.
	if _, err := p.Fleet.RemoveManager(ctx, g1.ID, m.UserID); err != nil {
		t.Fatal(err)
	}
	_, err = p.Fleet.Get(ctx, m, mine.ID)
	notFound("server after removal from the group", err)
}

// TestTwoSegmentsEachGetOnlyTheirJobs: two workers in two segments each
// run only the jobs of their segment's servers.
func TestTwoSegmentsEachGetOnlyTheirJobs(t *testing.T) {
	f := startSim(t, 4, 50*time.Millisecond, "ok\n")
	p := plane.Start(t, plane.Options{NoWorker: true})
	ctx := context.Background()
	east := p.StartWorker(t, []string{"east"}, 4)
	west := p.StartWorker(t, []string{"west"}, 4)
	gEast, _ := p.Fleet.CreateGroup(ctx, domain.Group{Name: "east", Segment: "east"})
	want := map[string]string{}
	for i, inst := range f.Instances {
		var srv domain.Server
		if i%2 == 0 {
			srv = simServer(t, p, inst, gEast.ID) // segment from the group
			want[srv.ID] = east.ID()
		} else {
			srv = simServer(t, p, inst)
			seg := "west" // segment from the server's own field
			if _, err := p.Fleet.UpdateSettings(ctx, p.Admin, srv.ID, settingsSegment(&seg)); err != nil {
				t.Fatal(err)
			}
			want[srv.ID] = west.ID()
		}
	}
	var ids []string
	for srvID := range want {
		j, err := p.Fleet.UpgradeSecurity(ctx, p.Admin, srvID)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.ID)
	}
	for _, id := range ids {
		j := p.WaitJob(t, id, 20*time.Second)
		if j.Status != domain.JobSuccess || j.WorkerID != want[j.ServerID] {
			t.Fatalf("job of server %s ran on %q (status %s), want worker %s", j.ServerID, j.WorkerID, j.Status, want[j.ServerID])
		}
	}
}

// TestHostKeyChangedSendsNothing: a server whose host key differs from the
// pinned one fails the job with a clear reason before any command runs.
func TestHostKeyChangedSendsNothing(t *testing.T) {
	f := startSim(t, 2, 0, "ok\n")
	p := plane.Start(t, plane.Options{})
	key := simServer(t, p, f.Instances[0]) // for its key only
	_, sec, _ := p.Store.ServerSecretsOf(context.Background(), key.ID)
	// The server at instance 1's address, pinned to instance 0's host key.
	srv := p.AddServer(t, "moved", f.Instances[1].Addr, f.Instances[0].AuthorizedHostKey(), sec.PrivateKey)
	j, err := p.Fleet.UpgradeSecurity(context.Background(), p.Admin, srv.ID)
	if err != nil {
		t.Fatal(err)
	}
	done := p.WaitJob(t, j.ID, 20*time.Second)
	if done.Status != domain.JobFailed || !strings.Contains(done.Error, "host key changed") || !strings.Contains(done.Error, "no command was sent") {
		t.Fatalf("job %s: %q", done.Status, done.Error)
	}
	if n := f.Instances[1].Execs(); n != 0 {
		t.Fatalf("%d commands reached the host with the changed key", n)
	}
	if _, err := p.Jobs.ActiveJob(context.Background(), p.Admin, srv.ID); !errors.Is(err, domain.ErrNotFound) {
		t.Fatal("the lock of the failed job is still held")
	}
}

// TestAbortKillsRunningJob aborts a long command.
func TestAbortKillsRunningJob(t *testing.T) {
	f := startSim(t, 1, time.Minute, "never\n")
	p := plane.Start(t, plane.Options{})
	srv := simServer(t, p, f.Instances[0])
	ctx := context.Background()
	j, err := p.Fleet.UpgradeSecurity(ctx, p.Admin, srv.ID)
	if err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, "job running", func() bool {
		cur, _ := p.Jobs.Get(ctx, p.Admin, j.ID)
		return cur.Status == domain.JobRunning
	})
	got, err := p.Jobs.Abort(ctx, p.Admin, j.ID)
	if err != nil || got.Status != domain.JobAborted {
		t.Fatalf("abort: %v %+v", err, got)
	}
	if _, err := p.Fleet.UpgradeSecurity(ctx, p.Admin, srv.ID); err != nil {
		t.Fatalf("after abort the server must accept a job: %v", err)
	}
}

// startNATS runs a NATS JetStream server on a fixed port and store dir, so
// it can be stopped and started again like an external cluster.
func startNATS(t *testing.T, port int, dir string) *server.Server {
	t.Helper()
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: port, JetStream: true,
		StoreDir: filepath.Join(dir, "js"), NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats not ready")
	}
	return ns
}

// TestNATSDownAnswers503AndLosesNothing: while NATS is down submissions
// answer 503 bus_unavailable and write nothing; a job running through the
// outage completes with every output byte once NATS is back.
func TestNATSDownAnswers503AndLosesNothing(t *testing.T) {
	port, dir := testutil.FreePort(t), t.TempDir()
	ns := startNATS(t, port, dir)
	defer func() { ns.Shutdown() }()
	var want strings.Builder
	for i := 0; i < 60; i++ {
		fmt.Fprintf(&want, "Setting up package-%02d ...\n", i)
	}
	lines := strings.SplitAfter(want.String(), "\n")
	table := fleetsim.DefaultTable()
	table.HandleFunc(func(cmd string) bool { return strings.Contains(cmd, "apt-get") }, func(ctx context.Context, r *fleetsim.Request) int {
		for _, l := range lines {
			_, _ = io.WriteString(r.Stdout, l)
			time.Sleep(50 * time.Millisecond)
		}
		return 0
	})
	f, err := fleetsim.Start(fleetsim.Config{N: 2, Responders: table})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := plane.Start(t, plane.Options{NATSURL: fmt.Sprintf("nats://127.0.0.1:%d", port)})
	ctx := context.Background()
	a, b := simServer(t, p, f.Instances[0]), simServer(t, p, f.Instances[1])
	j, err := p.Fleet.UpgradeSecurity(ctx, p.Admin, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, "first output stored", func() bool {
		cur, _ := p.Jobs.Get(ctx, p.Admin, j.ID)
		return cur.OutputBytes > 0
	})
	ns.Shutdown()
	testutil.WaitFor(t, 5*time.Second, "bus reported down", func() bool { return !p.Bus.Healthy() })
	_, err = p.Fleet.UpgradeSecurity(ctx, p.Admin, b.ID)
	var de *domain.Error
	if !errors.Is(err, domain.ErrUnavailable) || !errors.As(err, &de) || de.Code != "bus_unavailable" {
		t.Fatalf("submit with NATS down: %v", err)
	}
	if _, total, _ := p.Jobs.History(ctx, p.Admin, domain.JobFilter{ServerID: b.ID}); total != 0 {
		t.Fatal("a refused submit left a job row")
	}
	time.Sleep(time.Second) // the job keeps producing output during the outage
	ns = startNATS(t, port, dir)
	done := p.WaitJob(t, j.ID, 60*time.Second)
	if done.Status != domain.JobSuccess {
		t.Fatalf("job after the outage: %s %s", done.Status, done.Error)
	}
	var o domain.JobOutput
	testutil.WaitFor(t, 30*time.Second, "output complete after the outage", func() bool {
		o, err = p.Jobs.Output(ctx, p.Admin, j.ID, 0)
		return err == nil && o.Complete
	})
	// The upgrade's output exactly once and in order; the closing
	// inventory refresh (issue 5) writes its own lines after it.
	if strings.Count(string(o.Output), want.String()) != 1 {
		t.Fatalf("output after the outage: complete=%v err=%v\n%s", o.Complete, err, o.Output)
	}
	if _, err := p.Fleet.UpgradeSecurity(ctx, p.Admin, b.ID); err != nil {
		t.Fatalf("submit after recovery: %v", err)
	}
}

// TestHeartbeatsKeepALongJobAlive: a job running four times the reaper's
// heartbeat timeout succeeds, because the worker's heartbeat loop keeps
// reporting it; a worker that stopped beating is what the reaper fails.
func TestHeartbeatsKeepALongJobAlive(t *testing.T) {
	f := startSim(t, 1, 2*time.Second, "done\n")
	p := plane.Start(t, plane.Options{HeartbeatTimeout: 500 * time.Millisecond, ReapInterval: 100 * time.Millisecond,
		HeartbeatInterval: 100 * time.Millisecond})
	srv := simServer(t, p, f.Instances[0])
	ctx := context.Background()
	j, err := p.Fleet.UpgradeSecurity(ctx, p.Admin, srv.ID)
	if err != nil {
		t.Fatal(err)
	}
	got := p.WaitJob(t, j.ID, 30*time.Second)
	if got.Status != domain.JobSuccess {
		t.Fatalf("a long job with heartbeats ended %s: %s", got.Status, got.Error)
	}
}

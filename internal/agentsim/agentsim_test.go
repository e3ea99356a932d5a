package agentsim_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http/httptest"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/agentgw"
	"github.com/lcmproject/lcm/internal/agentsim"
	"github.com/lcmproject/lcm/internal/bus"
	_ "github.com/lcmproject/lcm/internal/bus/natsembed"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/fleet"
	"github.com/lcmproject/lcm/internal/fleetsim"
	"github.com/lcmproject/lcm/internal/remote"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil/plane"
	"github.com/lcmproject/lcm/pkg/agentproto"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// gateway serves an in-process agent gateway on b over TLS.
func gateway(tb testing.TB, b *bus.Bus) (*agentgw.Gateway, *agentgw.Options, string, string) {
	tb.Helper()
	creds, err := b.AgentCredentials(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	o := &agentgw.Options{Bus: b, Credentials: creds, Logger: quiet}
	gw, err := agentgw.New(*o)
	if err != nil {
		tb.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(gw.Handler())
	srv.Config.ReadHeaderTimeout = 10 * time.Second
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	tb.Cleanup(func() { gw.Close(); srv.Close() })
	return gw, o, "wss://" + srv.Listener.Addr().String() + "/mqtt", agentproto.FingerprintSHA256(srv.Certificate().Raw)
}

// TestManyAgents is the short functional version of the agent budgets
// (make bench-agents runs 10,000): 200 simulated agents enroll and connect
// from two loopback addresses, and each runs a command sent from the
// control plane through the gateway. No timing is asserted.
func TestManyAgents(t *testing.T) {
	const n = 200
	ctx := context.Background()
	b, err := bus.Open(ctx, bus.Options{DataDir: t.TempDir(), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	gw, o, url, fp := gateway(t, b)
	so := &agentsim.Options{URL: url, Fingerprint: fp, Sources: []string{"127.0.0.1", "127.0.0.2"},
		Respond: func(_ context.Context, c *agentproto.Command, stdout, _ io.Writer) int {
			_, _ = io.WriteString(stdout, c.Cmd)
			return 0
		}}
	agents := make([]agentsim.Agent, n)
	for i := range agents {
		token, _, err := agentgw.Enroll(ctx, o.Credentials, "server-"+strconv.Itoa(i), url, fp)
		if err != nil {
			t.Fatal(err)
		}
		if agents[i], err = agentsim.Enroll(ctx, so, token); err != nil {
			t.Fatal(err)
		}
	}
	f, err := agentsim.ConnectAll(ctx, so, agents, 32)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got := gw.ConnectedClients(); got != n {
		t.Fatalf("%d agents connected, want %d", got, n)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < n; i = next.Add(1) - 1 {
				var out bytes.Buffer
				cmd := "echo " + strconv.FormatInt(i, 10)
				res, err := agentgw.NewExecutor(b, agents[i].ID).Run(ctx, remote.Command{Cmd: cmd, Stdout: &out})
				if err != nil || res.ExitCode != 0 || out.String() != cmd {
					t.Errorf("agent %d: %v %+v %q", i, err, res, out.String())
				}
			}
		}()
	}
	wg.Wait()
	for i, c := range f.Conns {
		if err := c.Err(); err != nil {
			t.Errorf("agent %d: %v", i, err)
		}
	}
}

// agentFleet is a control plane (store, jobs, worker) with n agent servers,
// each a simulated agent answering like a simulated Debian host.
type agentFleet struct {
	p       *plane.Plane
	servers []domain.Server
	hosts   *fleetsim.Fleet
	agents  *agentsim.Fleet
}

// simTable answers like the SSH benchmark's hosts (internal/jobs
// BenchmarkUpgradeSecurity1000), so the figures compare: any apt-get
// command waits latency and prints out; everything else as DefaultTable.
func simTable(latency time.Duration, out string) *fleetsim.Table {
	t := fleetsim.DefaultTable()
	t.HandleFunc(func(cmd string) bool { return strings.Contains(cmd, "apt-get") }, func(ctx context.Context, r *fleetsim.Request) int {
		select {
		case <-time.After(latency):
		case <-ctx.Done():
			return 137
		}
		_, _ = io.WriteString(r.Stdout, out)
		return 0
	})
	return t
}

func startAgentFleet(tb testing.TB, n int, table *fleetsim.Table) *agentFleet {
	tb.Helper()
	ctx := context.Background()
	p := plane.Start(tb, plane.Options{Concurrency: n})
	_, o, url, fp := gateway(tb, p.Bus)
	_, port, _ := net.SplitHostPort(url[len("wss://") : len(url)-len("/mqtt")])
	portN, _ := strconv.Atoi(port)
	p.Fleet.SetAgents(fleet.AgentConfig{Credentials: o.Credentials, Bus: p.Bus, Port: portN, Fingerprint: fp})
	hosts, err := fleetsim.Hosts(fleetsim.Config{N: n, Responders: table})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { hosts.Close() })
	so := &agentsim.Options{URL: url, Fingerprint: fp, Sources: []string{"127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4"}}
	af := &agentFleet{p: p, hosts: hosts}
	agents := make([]agentsim.Agent, n)
	for i := range agents {
		// An agent server whose first connectivity check already recorded
		// its package family, as the SSH benchmark's servers are stored.
		srv, err := p.Store.CreateServer(ctx, store.NewServer{Server: domain.Server{Name: fmt.Sprintf("agent-%04d", i),
			Transport: domain.TransportAgent, AuthMethod: domain.TransportAgent, Joined: true, Status: domain.ServerGreen,
			PackageFamily: "apt"}})
		if err != nil {
			tb.Fatal(err)
		}
		tok, err := p.Fleet.IssueAgentToken(ctx, p.Admin, srv.ID, "127.0.0.1", "https://127.0.0.1")
		if err != nil {
			tb.Fatal(err)
		}
		if agents[i], err = agentsim.Enroll(ctx, so, tok.Token); err != nil {
			tb.Fatal(err)
		}
		agents[i].Respond = agentsim.FleetResponder(hosts.Instances[i])
		af.servers = append(af.servers, srv)
	}
	if af.agents, err = agentsim.ConnectAll(ctx, so, agents, 64); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(af.agents.Close)
	return af
}

// upgradeAll submits upgrade-security on every server (32 submitters, as
// the jobs benchmark does) and waits until all are final; it returns the
// jobs.
func (af *agentFleet) upgradeAll(tb testing.TB) []domain.Job {
	jobs, _ := af.upgradeAllTimed(tb)
	return jobs
}

// upgradeAllTimed is upgradeAll that also returns how long the submits took.
func (af *agentFleet) upgradeAllTimed(tb testing.TB) ([]domain.Job, time.Duration) {
	tb.Helper()
	start := time.Now()
	ctx := context.Background()
	ids := make([]string, len(af.servers))
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 32; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < int64(len(ids)); i = next.Add(1) - 1 {
				j, err := af.p.Fleet.UpgradeSecurity(ctx, af.p.Admin, af.servers[i].ID)
				if err != nil {
					tb.Error(err)
					return
				}
				ids[i] = j.ID
			}
		}()
	}
	wg.Wait()
	submitted := time.Since(start)
	out := make([]domain.Job, len(ids))
	for i, id := range ids {
		if id != "" {
			out[i] = af.p.WaitJob(tb, id, 5*time.Minute)
		}
	}
	return out, submitted
}

// TestUpgradeSecurityOverSimulatedAgents: the job system runs
// upgrade-security on agent servers end to end (submit → worker → agent
// executor → NATS → gateway → simulated agent → result ingested), 20 at
// once.
func TestUpgradeSecurityOverSimulatedAgents(t *testing.T) {
	af := startAgentFleet(t, 20, fleetsim.DebianTable(fleetsim.DebianOptions{UpgradeTime: 50 * time.Millisecond}))
	for i, j := range af.upgradeAll(t) {
		if j.Status != domain.JobSuccess {
			t.Errorf("server %d: job %s ended %s: %s", i, j.ID, j.Status, j.Error)
		}
	}
	for i, h := range af.hosts.Instances {
		if h.Execs() == 0 {
			t.Errorf("simulated host %d received no command", i)
		}
	}
}

// BenchmarkAgentUpgradeSecurity1000: upgrade-security on 1,000 simulated
// agents whose upgrade takes 1 s, one worker, the gateway in process;
// wall time from the first submit to the last final state. Budget ≤ 10 s.
// The hosts answer as in the SSH benchmark (simTable); LCM_BENCH_DEBIAN=1
// uses fleetsim's full Debian host instead (package lists of 400 packages
// in every closing refresh, output spread over the upgrade).
//
//	go test ./internal/agentsim -run '^$' -bench AgentUpgradeSecurity1000 -benchtime 1x -timeout 20m
func BenchmarkAgentUpgradeSecurity1000(b *testing.B) {
	const n = 1000
	table := simTable(time.Second, "Setting up openssl (3.0.17-1~deb12u2) ...\n")
	if os.Getenv("LCM_BENCH_DEBIAN") != "" {
		table = fleetsim.DebianTable(fleetsim.DebianOptions{UpgradeTime: time.Second, KeepPending: true})
	}
	af := startAgentFleet(b, n, table)
	b.ResetTimer()
	for it := 0; it < b.N; it++ {
		if path := os.Getenv("LCM_BENCH_CPUPROFILE"); path != "" {
			f, err := os.Create(path)
			if err != nil {
				b.Fatal(err)
			}
			if err := pprof.StartCPUProfile(f); err != nil {
				b.Fatal(err)
			}
		}
		start := time.Now()
		jobs, submitted := af.upgradeAllTimed(b)
		wall := time.Since(start)
		pprof.StopCPUProfile()
		b.ReportMetric(submitted.Seconds(), "submit-s")
		failed := 0
		for _, j := range jobs {
			if j.Status != domain.JobSuccess {
				failed++
			}
		}
		b.ReportMetric(wall.Seconds(), "wall-s")
		b.ReportMetric(float64(failed), "failed")
	}
}

package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/agentgw"
	"github.com/lcmproject/lcm/internal/agentsim"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/fleet"
	"github.com/lcmproject/lcm/internal/fleetsim"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/plane"
	"github.com/lcmproject/lcm/pkg/agentproto"
)

// TestSeparateWorkerRunsAgentJobs: a remote lcm-worker with its
// least-privilege NATS account (bus.WorkerUser) runs a job on an agent
// server: its commands reach the agent through the gateway over NATS and
// the answers come back, although the worker knows nothing of where the
// agent is connected.
func TestSeparateWorkerRunsAgentJobs(t *testing.T) {
	port := testutil.FreePort(t)
	p := plane.Start(t, plane.Options{NoWorker: true, Listen: fmt.Sprintf("127.0.0.1:%d", port),
		Workers: []plane.WorkerAccount{{User: "w-default", Password: "w-secret", Segments: []string{"default"}}}})
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, p.CACertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	creds, err := p.Bus.AgentCredentials(ctx)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := agentgw.New(agentgw.Options{Bus: p.Bus, Credentials: creds, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewUnstartedServer(gw.Handler())
	hs.Config.ErrorLog = log.New(io.Discard, "", 0)
	hs.StartTLS()
	defer func() { gw.Close(); hs.Close() }()
	fp := agentproto.FingerprintSHA256(hs.Certificate().Raw)
	addr := hs.Listener.Addr().String()
	gwPort, _ := strconv.Atoi(addr[strings.LastIndex(addr, ":")+1:])
	p.Fleet.SetAgents(fleet.AgentConfig{Credentials: creds, Bus: p.Bus, Port: gwPort, Fingerprint: fp})

	srv, err := p.Store.CreateServer(ctx, store.NewServer{Server: domain.Server{Name: "agent-1", Transport: domain.TransportAgent,
		AuthMethod: domain.TransportAgent, Joined: true, Status: domain.ServerGreen, PackageFamily: "apt"}})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := p.Fleet.IssueAgentToken(ctx, p.Admin, srv.ID, "127.0.0.1", "https://127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	hosts, err := fleetsim.Hosts(fleetsim.Config{N: 1, Responders: fleetsim.DebianTable(fleetsim.DebianOptions{UpgradeTime: 100 * time.Millisecond})})
	if err != nil {
		t.Fatal(err)
	}
	defer hosts.Close()
	so := &agentsim.Options{URL: tok.GatewayURL, Fingerprint: fp}
	a, err := agentsim.Enroll(ctx, so, tok.Token)
	if err != nil {
		t.Fatal(err)
	}
	a.Respond = agentsim.FleetResponder(hosts.Instances[0])
	conn, err := agentsim.Dial(ctx, so, a)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	startWorkerProc(t, fmt.Sprintf("tls://127.0.0.1:%d", port), ca, "w-default", "w-secret", "default")
	j, err := p.Fleet.UpgradeSecurity(ctx, p.Admin, srv.ID)
	if err != nil {
		t.Fatal(err)
	}
	if done := p.WaitJob(t, j.ID, 60*time.Second); done.Status != domain.JobSuccess {
		t.Fatalf("agent job on the remote worker: %s %q", done.Status, done.Error)
	}
	if hosts.Instances[0].Execs() == 0 {
		t.Fatal("the simulated host behind the agent ran nothing")
	}
}

// TestAgentRebootWaitsForTheAgent: a reboot of an agent server through the
// real job path (fleet service → job queue → worker → agent executor →
// gateway → agent). The simulated agent runs on a simulated Debian host:
// the reboot command takes the host down 2 s later, the agent's
// connection drops with it, and the agent is back only after 20 s of
// downtime — longer than the reboot's 15 s settle, so the job's first
// polls find the agent gone. The job waits, reads the new boot id through
// the agent's new connection and succeeds.
func TestAgentRebootWaitsForTheAgent(t *testing.T) {
	p := plane.Start(t, plane.Options{})
	ctx := context.Background()
	creds, err := p.Bus.AgentCredentials(ctx)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := agentgw.New(agentgw.Options{Bus: p.Bus, Credentials: creds, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewUnstartedServer(gw.Handler())
	hs.Config.ErrorLog = log.New(io.Discard, "", 0)
	hs.StartTLS()
	defer func() { gw.Close(); hs.Close() }()
	fp := agentproto.FingerprintSHA256(hs.Certificate().Raw)
	addr := hs.Listener.Addr().String()
	gwPort, _ := strconv.Atoi(addr[strings.LastIndex(addr, ":")+1:])
	p.Fleet.SetAgents(fleet.AgentConfig{Credentials: creds, Bus: p.Bus, Port: gwPort, Fingerprint: fp})
	srv, err := p.Store.CreateServer(ctx, store.NewServer{Server: domain.Server{Name: "agent-reboot", Transport: domain.TransportAgent,
		AuthMethod: domain.TransportAgent, Joined: true, Status: domain.ServerGreen, PackageFamily: "apt"}})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := p.Fleet.IssueAgentToken(ctx, p.Admin, srv.ID, "127.0.0.1", "https://127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	hosts, err := fleetsim.Hosts(fleetsim.Config{N: 1, Responders: fleetsim.DebianTable(fleetsim.DebianOptions{}),
		RebootDowntime: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer hosts.Close()
	host := hosts.Instances[0]
	so := &agentsim.Options{URL: tok.GatewayURL, Fingerprint: fp}
	a, err := agentsim.Enroll(ctx, so, tok.Token)
	if err != nil {
		t.Fatal(err)
	}
	actx, stop := context.WithCancel(ctx)
	onHost, err := agentsim.RunOnHost(actx, so, a, host)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { stop(); <-onHost.Done() }()

	j, err := p.Fleet.Reboot(ctx, p.Admin, srv.ID)
	if err != nil {
		t.Fatal(err)
	}
	done := p.WaitJob(t, j.ID, 3*time.Minute)
	out, err := p.Jobs.Output(ctx, p.Admin, j.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if done.Status != domain.JobSuccess {
		t.Fatalf("reboot over the agent: %s %q\n%s", done.Status, done.Error, out.Output)
	}
	for _, want := range []string{"lcm: reboot issued", "not back yet", "server is back after"} {
		if !strings.Contains(string(out.Output), want) {
			t.Errorf("reboot output lacks %q:\n%s", want, out.Output)
		}
	}
	if host.Boots() != 1 || onHost.Dials() != 2 {
		t.Fatalf("host booted %d times, agent connected %d times; want 1 and 2", host.Boots(), onHost.Dials())
	}
}

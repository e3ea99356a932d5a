package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/agentgw"
	"github.com/lcmproject/lcm/internal/bus"
	_ "github.com/lcmproject/lcm/internal/bus/natsembed"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/pkg/agentproto"
)

// statusCmd runs `lcm-agent status -json` and returns the report and the
// exit code main would use.
func statusCmd(t *testing.T, cfg, state string) (statusReport, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"status", "-json", "-config", cfg, "-state", state}, &out, &errOut)
	code := 0
	var ee *exitError
	switch {
	case errors.As(err, &ee):
		code = ee.code
	case err != nil:
		t.Fatalf("status: %v", err)
	}
	var rep statusReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("status -json: %v\n%s", err, out.String())
	}
	if rep.ExitCode != code {
		t.Fatalf("report says exit %d, process exits %d", rep.ExitCode, code)
	}
	return rep, code
}

func testConfig(t *testing.T, dir string) (string, config) {
	t.Helper()
	sec, _ := agentproto.NewSecret()
	c := config{AgentID: agentproto.NewID(), Secret: sec, GatewayURL: "wss://gw.example:9320/mqtt",
		TLSFingerprintSHA256: agentproto.FingerprintSHA256([]byte("cert"))}
	path := filepath.Join(dir, "agent.json")
	if err := saveConfig(path, c); err != nil {
		t.Fatal(err)
	}
	return path, c
}

// TestStatusExitCodes: every documented exit code from the state the
// status subcommand finds on disk.
func TestStatusExitCodes(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "run", "state.json")
	if rep, code := statusCmd(t, filepath.Join(dir, "missing.json"), state); code != statusNotEnrolled || rep.Status != "not_enrolled" {
		t.Fatalf("no config: %d %+v", code, rep)
	}
	cfgPath, cfg := testConfig(t, dir)
	if rep, code := statusCmd(t, cfgPath, state); code != statusNotRunning || rep.AgentID != cfg.AgentID ||
		rep.TLSFingerprintSHA256 != cfg.TLSFingerprintSHA256 || rep.GatewayURL != cfg.GatewayURL {
		t.Fatalf("no state file: %d %+v", code, rep)
	}
	base := runState{AgentID: cfg.AgentID, GatewayURL: cfg.GatewayURL, TLSFingerprintSHA256: cfg.TLSFingerprintSHA256,
		Version: "1.2.3", Capability: agentproto.CapabilityVersion, StartedAt: time.Now().UTC()}
	// A state file left by a process that is gone: not running.
	dead := base
	dead.PID, dead.State = 0x7ffffffe, stateConnected
	if err := writeState(state, dead); err != nil {
		t.Fatal(err)
	}
	if rep, code := statusCmd(t, cfgPath, state); code != statusNotRunning || !strings.Contains(rep.Note, "gone") {
		t.Fatalf("dead pid: %d %+v", code, rep)
	}
	// A live process (this test) connected: 0, with the last contact.
	now := time.Now().UTC()
	live := base
	live.PID, live.State, live.ConnectedSince, live.LastContact = os.Getpid(), stateConnected, &now, &now
	if err := writeState(state, live); err != nil {
		t.Fatal(err)
	}
	rep, code := statusCmd(t, cfgPath, state)
	if code != statusConnected || rep.Status != "connected" || rep.LastContact == nil || rep.Version != "1.2.3" || rep.Capability != 1 {
		t.Fatalf("connected: %d %+v", code, rep)
	}
	// Running but not connected: 4 with the reason.
	live.State, live.ConnectedSince, live.LastError = stateConnecting, nil, "gateway TLS certificate fingerprint mismatch"
	if err := writeState(state, live); err != nil {
		t.Fatal(err)
	}
	if rep, code := statusCmd(t, cfgPath, state); code != statusDisconnected || !strings.Contains(rep.LastError, "mismatch") {
		t.Fatalf("connecting: %d %+v", code, rep)
	}
	// A configuration re-enrolled under a running agent is pointed out.
	other := live
	other.AgentID, other.State = agentproto.NewID(), stateConnected
	if err := writeState(state, other); err != nil {
		t.Fatal(err)
	}
	if rep, _ := statusCmd(t, cfgPath, state); !strings.Contains(rep.Note, "restart the agent") {
		t.Fatalf("agent id mismatch not pointed out: %+v", rep)
	}
	// The state file holds no secret and is readable by everyone.
	b, _ := os.ReadFile(state)
	st, _ := os.Stat(state)
	if strings.Contains(string(b), cfg.Secret) || st.Mode().Perm() != 0o644 {
		t.Fatalf("state file mode %v, holds the secret: %v", st.Mode(), strings.Contains(string(b), cfg.Secret))
	}
	// Usage errors exit 2.
	err := run(context.Background(), []string{"status", "-bogus"}, io.Discard, io.Discard)
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != statusUsage {
		t.Fatalf("bad flag: %v", err)
	}
	// The human-readable form names state, gateway and pin.
	var out bytes.Buffer
	_ = run(context.Background(), []string{"status", "-config", cfgPath, "-state", state}, &out, io.Discard)
	for _, want := range []string{"lcm-agent: connected", "gateway:", cfg.GatewayURL, "pinned sha256:", "last contact:", "protocol:", "v1"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestStatusOfRealAgent runs the real `lcm-agent run` against a real
// gateway on an embedded NATS and follows it with `lcm-agent status`:
// connected (0) with its gateway, pin and a last contact; not connected
// (4) with the reason while the gateway is down; not running (3) after a
// clean stop.
func TestStatusOfRealAgent(t *testing.T) {
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	b, err := bus.Open(ctx, bus.Options{DataDir: t.TempDir(), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	creds, err := b.AgentCredentials(ctx)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := agentgw.New(agentgw.Options{Bus: b, Credentials: creds, Logger: quiet, Name: "edge-test"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(gw.Handler())
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	defer srv.Close()
	url := "wss://" + srv.Listener.Addr().String() + "/mqtt"
	fp := agentproto.FingerprintSHA256(srv.Certificate().Raw)
	token, _, err := agentgw.Enroll(ctx, creds, "server-1", url, fp)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfgPath, state := filepath.Join(dir, "agent.json"), filepath.Join(dir, "run", "state.json")
	if err := run(ctx, []string{"enroll", "-config", cfgPath, token}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	logs := &bytes.Buffer{}
	go func() { done <- run(rctx, []string{"run", "-config", cfgPath, "-state", state}, io.Discard, logs) }()
	defer func() {
		stop()
		<-done
	}()

	var rep statusReport
	var code int
	testutil.WaitFor(t, 30*time.Second, "status connected", func() bool {
		rep, code = statusCmd(t, cfgPath, state)
		return code == statusConnected
	})
	if rep.GatewayURL != url || rep.TLSFingerprintSHA256 != fp || rep.LastContact == nil || rep.ConnectedSince == nil ||
		rep.PID != os.Getpid() || rep.Capability != agentproto.CapabilityVersion {
		t.Fatalf("connected status: %+v", rep)
	}

	// The gateway goes away: the agent keeps running, reconnecting.
	gw.Close()
	srv.CloseClientConnections()
	srv.Close()
	testutil.WaitFor(t, 30*time.Second, "status disconnected", func() bool {
		rep, code = statusCmd(t, cfgPath, state)
		return code == statusDisconnected
	})
	if rep.ConnectedSince != nil || rep.LastError == "" {
		t.Fatalf("disconnected status: %+v", rep)
	}

	// A clean stop removes the state: not running.
	stop()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	done <- nil
	if rep, code = statusCmd(t, cfgPath, state); code != statusNotRunning {
		t.Fatalf("after stop: %d %+v", code, rep)
	}
}

// TestReconnectBackoff: the first attempt goes at once; later ones wait a
// random time between backoffMin and a ceiling that doubles per attempt
// (from 2 s) up to backoffMax — jittered, so a fleet reconnecting after a
// gateway restart spreads out, and never longer than a minute.
func TestReconnectBackoff(t *testing.T) {
	bo := reconnectBackoff()
	if d := bo(0); d != 0 {
		t.Fatalf("first attempt waits %v", d)
	}
	const samples = 2000
	for attempt := 1; attempt <= 12; attempt++ {
		ceiling := min(2*backoffMin<<(attempt-1), backoffMax)
		lo, hi := time.Duration(1<<62), time.Duration(0)
		distinct := map[time.Duration]bool{}
		for range samples {
			d := bo(attempt)
			if d < backoffMin || d > ceiling {
				t.Fatalf("attempt %d: %v outside [%v, %v]", attempt, d, backoffMin, ceiling)
			}
			lo, hi = min(lo, d), max(hi, d)
			distinct[d] = true
		}
		// Jitter: the draws spread over most of the range.
		if span := ceiling - backoffMin; hi-lo < span*8/10 || len(distinct) < samples/4 {
			t.Fatalf("attempt %d: draws between %v and %v (%d distinct) do not spread over [%v, %v]", attempt, lo, hi, len(distinct), backoffMin, ceiling)
		}
		if attempt >= 6 && hi < backoffMax*9/10 {
			t.Fatalf("attempt %d never waited near the cap: at most %v", attempt, hi)
		}
	}
}

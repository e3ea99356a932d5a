package main

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/tlscert"
	"github.com/lcmproject/lcm/pkg/agentproto"
)

// logBuffer is a process's combined output, safe to read while it runs.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startProc starts a binary until the test ends (SIGTERM, then wait).
func startProc(t *testing.T, env []string, bin string, args ...string) *logBuffer {
	t.Helper()
	logs := &logBuffer{}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("%s log:\n%s", filepath.Base(bin), logs.String())
		}
	})
	return logs
}

// TestAgentThroughSeparateGateway is the scaled deployment of docs/agent.md
// through the real binaries: lcm-api with its agent listener off
// (agent_port 0) and a separately run lcm-agentgw (its own certificate,
// the least-privilege NATS account on lcm-api's listening NATS) named in
// agent_gateways. A token issued through the API names that gateway and
// pins its certificate; a real lcm-agent enrolls and connects there; the
// server's agent state names the gateway and the agent's protocol; the
// connectivity check that runs on connect goes through the separate
// gateway and records the facts; a new token disconnects the old agent
// across processes (the kick travels over NATS to the gateway).
func TestAgentThroughSeparateGateway(t *testing.T) {
	dir := t.TempDir()
	certPEM, keyPEM, err := tlscert.Generate("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "gw.crt"), filepath.Join(dir, "gw.key")
	for f, s := range map[string]string{certFile: certPEM, keyFile: keyPEM} {
		if err := os.WriteFile(f, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	pair, err := tls.X509KeyPair([]byte(certPEM), []byte(keyPEM))
	if err != nil {
		t.Fatal(err)
	}
	// Written with colons, upper case, as an operator may copy it.
	fp := agentproto.FingerprintSHA256(pair.Certificate[0])
	var colons []string
	for i := 0; i < len(fp); i += 2 {
		colons = append(colons, strings.ToUpper(fp[i:i+2]))
	}
	gwAddr := fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t))
	natsAddr := fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t))
	gwURL := "wss://" + gwAddr + "/mqtt"
	const gwPassword = "agentgw-e2e-password"
	a := testutil.StartAPI(t, testutil.APIOptions{Config: map[string]any{
		"agent_port": 0, "require_2fa_roles": []string{},
		"nats": map[string]any{"listen": natsAddr, "user": "api", "password": "api-e2e-password",
			"agent_gateways": []map[string]any{{"user": "agentgw", "password": gwPassword}}},
		"agent_gateways": []map[string]any{{"name": "edge-1", "url": gwURL, "tls_fingerprint_sha256": strings.Join(colons, ":")}},
	}})
	token := login(t, a, "admin", a.AdminPassword)

	// lcm-api's NATS presents the UI certificate: the gateway trusts it.
	conn, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", a.Port), &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(dir, "nats-ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: conn.ConnectionState().PeerCertificates[0].Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	gwLog := startProc(t, []string{"LCM_NATS_PASSWORD=" + gwPassword}, testutil.CmdBinary(t, "agentgw"),
		"-listen", gwAddr, "-name", "edge-1", "-tls-cert", certFile, "-tls-key", keyFile,
		"-nats-url", "tls://"+natsAddr, "-nats-user", "agentgw", "-nats-ca", caFile)
	testutil.WaitFor(t, 30*time.Second, "lcm-agentgw started", func() bool {
		return strings.Contains(gwLog.String(), "lcm-agentgw started")
	})
	if !strings.Contains(gwLog.String(), "tls_sha256="+fp) {
		t.Fatalf("the gateway logs another fingerprint:\n%s", gwLog.String())
	}

	var srv struct {
		ID string `json:"id"`
	}
	if r, body := a.Do("POST", "/api/v1/servers/agent", token, map[string]any{"name": "edge-agent-01"}, &srv); r.StatusCode != http.StatusCreated {
		t.Fatalf("create agent server: %d %s", r.StatusCode, body)
	}
	type tokenDTO struct {
		AgentID    string `json:"agent_id"`
		Token      string `json:"token"`
		GatewayURL string `json:"gateway_url"`
	}
	issue := func() tokenDTO {
		t.Helper()
		var tok tokenDTO
		if r, body := a.Do("POST", "/api/v1/servers/"+srv.ID+"/agent-token", token, nil, &tok); r.StatusCode != http.StatusCreated {
			t.Fatalf("agent-token with agent_port 0 and agent_gateways: %d %s", r.StatusCode, body)
		}
		return tok
	}
	tok := issue()
	parsed, err := agentproto.ParseToken(tok.Token)
	if err != nil {
		t.Fatal(err)
	}
	if tok.GatewayURL != gwURL || parsed.GatewayURL != gwURL || parsed.TLSFingerprintSHA256 != fp {
		t.Fatalf("token names %s pinned %s; want %s pinned %s", parsed.GatewayURL, parsed.TLSFingerprintSHA256, gwURL, fp)
	}

	// A real lcm-agent enrolls at the separate gateway and runs.
	agentBin := testutil.CmdBinary(t, "agent")
	cfg, state := filepath.Join(dir, "agent", "agent.json"), filepath.Join(dir, "agent", "run", "state.json")
	if out, err := exec.Command(agentBin, "enroll", "-config", cfg, tok.Token).CombinedOutput(); err != nil {
		t.Fatalf("enroll: %v\n%s", err, out)
	}
	startProc(t, nil, agentBin, "run", "-config", cfg, "-state", state)
	type agentState struct {
		AgentID    string `json:"agent_id"`
		Online     bool   `json:"online"`
		Connected  bool   `json:"connected"`
		Gateway    string `json:"gateway"`
		Capability int    `json:"capability"`
	}
	var got struct {
		OSName string      `json:"os_name"`
		Agent  *agentState `json:"agent"`
	}
	testutil.WaitFor(t, 60*time.Second, "agent online through lcm-agentgw, facts recorded", func() bool {
		a.Do("GET", "/api/v1/servers/"+srv.ID, token, nil, &got)
		return got.Agent != nil && got.Agent.Online && got.Agent.AgentID == tok.AgentID && strings.Contains(got.OSName, "Debian")
	})
	if got.Agent.Gateway != "edge-1" || got.Agent.Capability != agentproto.CapabilityVersion {
		t.Fatalf("agent state: %+v", got.Agent)
	}
	statusOf := func() (map[string]any, int) {
		t.Helper()
		out, err := exec.Command(agentBin, "status", "-json", "-config", cfg, "-state", state).Output()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatalf("status -json: %v\n%s", err, out)
		}
		return m, code
	}
	if st, code := statusOf(); code != 0 || st["status"] != "connected" || st["gateway_url"] != gwURL || st["tls_fingerprint_sha256"] != fp {
		t.Fatalf("lcm-agent status: exit %d %v", code, st)
	}

	// A new token revokes the running agent: the kick reaches the
	// separate gateway over NATS and it disconnects the agent, which then
	// reports itself not connected (exit 4) with the gateway's refusal.
	tok2 := issue()
	testutil.WaitFor(t, 30*time.Second, "old agent disconnected by lcm-agentgw", func() bool {
		return strings.Contains(gwLog.String(), "agent disconnected on request")
	})
	testutil.WaitFor(t, 30*time.Second, "lcm-agent status: not connected", func() bool {
		st, code := statusOf()
		return code == 4 && st["status"] != "connected"
	})
	var after struct {
		Agent *agentState `json:"agent"`
	}
	a.Do("GET", "/api/v1/servers/"+srv.ID, token, nil, &after)
	if after.Agent == nil || after.Agent.AgentID != tok2.AgentID || after.Agent.Connected {
		t.Fatalf("after the new token: %+v", after.Agent)
	}
}

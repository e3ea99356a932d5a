package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/remote"
	"github.com/lcmproject/lcm/internal/sshexec"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/pkg/agentproto"
)

// agentHost is the test host of the agent transport (127.0.0.12). It
// shares this machine's network namespace, so the agent it runs reaches
// lcm-api's agent listener on 127.0.0.1.
const agentHost = 11

// TestAgentEndToEnd is issue 18 through the real binaries: a real lcm-agent
// on Debian test host 11, installed with the very command the API hands to
// the UI (public download, SHA-256 check, enroll, systemd unit), enrolls
// against the real lcm-api, runs a refresh and a security upgrade with live
// output through the job runner's agent executor, and is disconnected by a
// new token. A wrong certificate pin and a reused token are refused.
func TestAgentEndToEnd(t *testing.T) {
	h := testutil.TestHostAt(t, agentHost)
	testutil.ResetTestHost(t, h)
	defer testutil.ResetTestHost(t, h)
	root, err := sshexec.Dial(context.Background(), sshexec.Target{Addr: h.Addr, User: "root", Signer: h.Signer(t), HostKey: h.HostKeys[0]})
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	onHostErr := func(cmd string) (string, error) {
		var out bytes.Buffer
		res, err := root.Run(context.Background(), remote.Command{Cmd: cmd, Stdout: &out, Stderr: &out, Timeout: 10 * time.Minute})
		if err == nil && res.ExitCode != 0 {
			return out.String(), &exitError{code: res.ExitCode}
		}
		return out.String(), err
	}
	onHost := func(cmd string) string {
		t.Helper()
		out, err := onHostErr(cmd)
		if err != nil {
			t.Fatalf("on host: %s: %v\n%s", cmd, err, out)
		}
		return out
	}
	defer func() {
		// Stop the agent before the reset; its log helps a failed run.
		out, _ := onHostErr(`test -f /run/lcm-agent.pid && kill "$(cat /run/lcm-agent.pid)"; sleep 1; cat /var/log/lcm-agent.log 2>/dev/null | tail -n 40`)
		if t.Failed() {
			t.Logf("lcm-agent log:\n%s", out)
		}
	}()
	// The install command downloads with curl (or wget); a minimal
	// Debian has neither.
	onHost("DEBIAN_FRONTEND=noninteractive apt-get -q update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get -qy install curl >/dev/null")

	// The agent binary lcm-api serves, built as `make build` builds it.
	binDir := t.TempDir()
	agentBin := filepath.Join(binDir, "lcm-agent-linux-amd64")
	root0, _ := testutil.ModuleRoot()
	build := exec.Command("go", "build", "-trimpath", "-o", agentBin, "./cmd/agent")
	build.Dir, build.Env = root0, append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/agent: %v\n%s", err, out)
	}
	raw, err := os.ReadFile(agentBin)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(raw)
	binSHA := hex.EncodeToString(sum[:])

	agentPort := testutil.FreePort(t)
	a := testutil.StartAPI(t, testutil.APIOptions{Dev: true, Env: []string{"LCM_AGENT_BIN_DIR=" + binDir},
		Config: map[string]any{"agent_port": agentPort, "agent_host": "127.0.0.1"}})
	token := login(t, a, "admin", a.AdminPassword)

	// The public download answers without a login, with its checksum.
	resp, err := a.Client.Get(a.BaseURL + "/api/v1/agent/download/amd64")
	if err != nil {
		t.Fatal(err)
	}
	dl, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Checksum-Sha256") != binSHA || !bytes.Equal(dl, raw) {
		t.Fatalf("download: %d checksum %q (want %s), %d bytes", resp.StatusCode, resp.Header.Get("X-Checksum-Sha256"), binSHA, len(dl))
	}
	if r, body := a.Do("GET", "/api/v1/agent/download/arm64", "", nil, nil); r.StatusCode != http.StatusNotFound {
		t.Fatalf("download of a binary not installed: %d %s", r.StatusCode, body)
	}

	var srv struct {
		ID        string `json:"id"`
		Transport string `json:"transport"`
	}
	if r, body := a.Do("POST", "/api/v1/servers/agent", token, map[string]any{"name": "e2e-agent-01"}, &srv); r.StatusCode != http.StatusCreated || srv.Transport != "agent" {
		t.Fatalf("create agent server: %d %s", r.StatusCode, body)
	}
	type tokenDTO struct {
		AgentID   string            `json:"agent_id"`
		Token     string            `json:"token"`
		Install   map[string]string `json:"install"`
		Checksums map[string]string `json:"checksums"`
	}
	issue := func() tokenDTO {
		t.Helper()
		var tok tokenDTO
		if r, body := a.Do("POST", "/api/v1/servers/"+srv.ID+"/agent-token", token, nil, &tok); r.StatusCode != http.StatusCreated {
			t.Fatalf("agent-token: %d %s", r.StatusCode, body)
		}
		return tok
	}
	tok1 := issue()
	if tok1.Checksums["amd64"] != binSHA || !strings.Contains(tok1.Install["amd64"], tok1.Token) {
		t.Fatalf("token answer: %+v", tok1)
	}

	// A token whose pin does not match the gateway's certificate: refused
	// before anything is written or sent (the token stays usable).
	parsed, err := agentproto.ParseToken(tok1.Token)
	if err != nil {
		t.Fatal(err)
	}
	parsed.TLSFingerprintSHA256 = strings.Repeat("ab", 32)
	wrongPin, err := parsed.Format()
	if err != nil {
		t.Fatal(err)
	}

	// The exact install command the UI shows, pasted as root.
	out := onHost(tok1.Install["amd64"])
	for _, want := range []string{"/tmp/lcm-agent: OK", "wrote /etc/systemd/system/lcm-agent.service", "systemd is not running on this host"} {
		if !strings.Contains(out, want) {
			t.Fatalf("install command output lacks %q:\n%s", want, out)
		}
	}
	if unit := onHost("cat /etc/systemd/system/lcm-agent.service"); !strings.Contains(unit, "ExecStart=/usr/local/bin/lcm-agent run -config /etc/lcm-agent/agent.json") {
		t.Fatalf("unit:\n%s", unit)
	}
	if mode := strings.TrimSpace(onHost("stat -c %a /etc/lcm-agent/agent.json")); mode != "600" {
		t.Fatalf("agent config mode %s", mode)
	}

	// Wrong pin and reused token are refused and leave no configuration.
	if out, err := onHostErr("/usr/local/bin/lcm-agent enroll -config /tmp/pin.json '" + wrongPin + "'"); err == nil ||
		!strings.Contains(strings.ToLower(out), "fingerprint") {
		t.Fatalf("enroll with a wrong pin: %v\n%s", err, out)
	}
	if out, err := onHostErr("/usr/local/bin/lcm-agent enroll -config /tmp/reuse.json '" + tok1.Token + "'"); err == nil {
		t.Fatalf("enroll with a spent token succeeded:\n%s", out)
	}
	onHost("test ! -e /tmp/pin.json && test ! -e /tmp/reuse.json")

	// The agent runs (as the unit would) and reports itself.
	onHost("setsid /usr/local/bin/lcm-agent run </dev/null >/var/log/lcm-agent.log 2>&1 & echo $! > /run/lcm-agent.pid")
	type agentState struct {
		AgentID   string `json:"agent_id"`
		Connected bool   `json:"connected"`
		Online    bool   `json:"online"`
		Version   string `json:"version"`
		Hostname  string `json:"hostname"`
	}
	var got struct {
		Agent *agentState `json:"agent"`
	}
	testutil.WaitFor(t, 30*time.Second, "agent connected", func() bool {
		a.Do("GET", "/api/v1/servers/"+srv.ID, token, nil, &got)
		return got.Agent != nil && got.Agent.Online && got.Agent.AgentID == tok1.AgentID
	})
	if got.Agent.Version == "" || got.Agent.Hostname == "" {
		t.Fatalf("agent state without version or hostname: %+v", got.Agent)
	}
	// lcm-agent status on the host: connected (exit 0), with its pin.
	pinned, err := agentproto.ParseToken(tok1.Token)
	if err != nil {
		t.Fatal(err)
	}
	if out := onHost("/usr/local/bin/lcm-agent status"); !strings.Contains(out, "lcm-agent: connected") || !strings.Contains(out, pinned.TLSFingerprintSHA256) {
		t.Fatalf("lcm-agent status:\n%s", out)
	}

	// The agent's first connection runs a connectivity check over it,
	// which records the server's facts as a join does for SSH.
	var detail struct {
		OSName      string  `json:"os_name"`
		ActiveJobID *string `json:"active_job_id"`
		Status      string  `json:"status"`
	}
	testutil.WaitFor(t, 60*time.Second, "facts from the connectivity check over the agent", func() bool {
		a.Do("GET", "/api/v1/servers/"+srv.ID, token, nil, &detail)
		return strings.Contains(detail.OSName, "Debian") && detail.ActiveJobID == nil
	})
	if detail.Status == "unknown" || detail.Status == "unreachable" {
		t.Fatalf("traffic light of a connected agent server: %s", detail.Status)
	}

	// Jobs over the agent, with live output: output is readable while the
	// job still runs.
	runJobWith := func(path string, reqBody any) string {
		t.Helper()
		var s struct {
			JobID string `json:"job_id"`
		}
		if r, body := a.Do("POST", "/api/v1/servers/"+srv.ID+path, token, reqBody, &s); r.StatusCode != http.StatusAccepted {
			t.Fatalf("POST %s: %d %s", path, r.StatusCode, body)
		}
		live := false
		deadline := time.Now().Add(10 * time.Minute)
		for time.Now().Before(deadline) {
			var job struct {
				Status string `json:"status"`
				Error  string `json:"error"`
			}
			var o struct {
				Output string `json:"output"`
			}
			a.Do("GET", "/api/v1/jobs/"+s.JobID, token, nil, &job)
			if job.Status == "running" {
				a.Do("GET", "/api/v1/jobs/"+s.JobID+"/ssh-output", token, nil, &o)
				var again struct {
					Status string `json:"status"`
				}
				a.Do("GET", "/api/v1/jobs/"+s.JobID, token, nil, &again)
				if o.Output != "" && again.Status == "running" {
					live = true
				}
			}
			if job.Status == "success" {
				break
			}
			if job.Status == "failed" || job.Status == "aborted" {
				a.Do("GET", "/api/v1/jobs/"+s.JobID+"/ssh-output", token, nil, &o)
				t.Fatalf("%s over the agent: %s: %s\n%s", path, job.Status, job.Error, o.Output)
			}
			time.Sleep(150 * time.Millisecond) // polling the job, not waiting for time to pass
		}
		var o struct {
			Output   string `json:"output"`
			Complete bool   `json:"complete"`
		}
		testutil.WaitFor(t, 30*time.Second, "complete output of "+path, func() bool {
			a.Do("GET", "/api/v1/jobs/"+s.JobID+"/ssh-output", token, nil, &o)
			return o.Complete
		})
		if !live && reqBody == nil {
			t.Errorf("%s: no output was visible while the job ran", path)
		}
		return o.Output
	}
	runJob := func(path string) string { return runJobWith(path, nil) }
	out = runJob("/refresh-all")
	for _, want := range []string{"lcm: refreshing every configured apt source (apt-get update)", "bookworm-security InRelease"} {
		if !strings.Contains(out, want) {
			t.Fatalf("refresh output lacks %q:\n%s", want, out)
		}
	}
	// Reboot-less package actions on named packages, read back on the
	// host: update one upgradable package, hold and unhold one, remove it.
	upgradable := strings.Fields(onHost(`apt list --upgradable 2>/dev/null | sed -n 's|/.*||p' | grep -v '^apt$' | head -n 1`))
	if len(upgradable) != 1 {
		t.Fatal("the test host has no upgradable package (its base is deliberately not upgraded)")
	}
	pkg := upgradable[0]
	runJobWith("/packages/update", map[string]any{"names": []string{pkg}})
	if out := onHost("apt list --upgradable 2>/dev/null"); strings.Contains(out, "\n"+pkg+"/") || strings.HasPrefix(out, pkg+"/") {
		t.Fatalf("%s is still upgradable after the update over the agent:\n%s", pkg, out)
	}
	onHost("DEBIAN_FRONTEND=noninteractive apt-get -qy install hello >/dev/null")
	runJobWith("/packages/hold", map[string]any{"names": []string{"hello"}})
	if held := onHost("apt-mark showhold"); !strings.Contains(held, "hello") {
		t.Fatalf("hold over the agent: showhold %q", held)
	}
	runJobWith("/packages/unhold", map[string]any{"names": []string{"hello"}})
	if held := onHost("apt-mark showhold"); strings.Contains(held, "hello") {
		t.Fatalf("unhold over the agent: showhold %q", held)
	}
	runJobWith("/packages/remove", map[string]any{"names": []string{"hello"}})
	if out, err := onHostErr("dpkg-query -W -f='${Status}' hello"); err == nil && strings.Contains(out, "install ok installed") {
		t.Fatalf("hello still installed after the remove over the agent: %s", out)
	}

	out = runJob("/packages/upgrade-security")
	if !strings.Contains(out, "lcm: security updates") && !strings.Contains(out, "no security updates") {
		t.Fatalf("upgrade-security output:\n%s", out)
	}

	// A Linux-user action over the agent: the account is created by the
	// assignment's apply job and locked by a disable job.
	var lu struct {
		ID string `json:"id"`
	}
	if r, body := a.Do("POST", "/api/v1/linux-users", token, map[string]any{"username": "agentuser", "full_name": "Agent User"}, &lu); r.StatusCode != http.StatusCreated {
		t.Fatalf("create Linux user: %d %s", r.StatusCode, body)
	}
	runJobWith("/assign-user", map[string]any{"user_id": lu.ID})
	if uid := strings.TrimSpace(onHost("id -u agentuser")); uid == "" {
		t.Fatal("agentuser not created over the agent")
	}
	runJobWith("/users/disable", map[string]any{"username": "agentuser"})
	if st := strings.Fields(onHost("passwd -S agentuser")); len(st) < 2 || st[1] != "L" {
		t.Fatalf("agentuser not locked over the agent: %v", st)
	}

	// Abort through the job API reaches the agent, which kills the
	// command's whole process group: both sleeps (one in the background)
	// are gone from the host afterwards.
	var act struct {
		ID string `json:"id"`
	}
	if r, body := a.Do("POST", "/api/v1/custom-actions", token, map[string]any{"name": "long sleep",
		"commands": []string{"sleep 6002 & sleep 6001"}}, &act); r.StatusCode != http.StatusCreated {
		t.Fatalf("create custom action: %d %s", r.StatusCode, body)
	}
	var bulk struct {
		Items []struct {
			JobID string `json:"job_id"`
		} `json:"items"`
	}
	if r, body := a.Do("POST", "/api/v1/custom-actions/"+act.ID+"/run", token, map[string]any{"server_ids": []string{srv.ID}}, &bulk); r.StatusCode != http.StatusAccepted || len(bulk.Items) != 1 || bulk.Items[0].JobID == "" {
		t.Fatalf("run custom action: %d %s", r.StatusCode, body)
	}
	sleeps := func() string {
		return strings.TrimSpace(onHost(`for p in /proc/[0-9]*; do tr '\0' ' ' <"$p/cmdline" 2>/dev/null | grep -qE '^sleep 600[12] ?$' && echo "${p#/proc/}"; done; true`))
	}
	testutil.WaitFor(t, 60*time.Second, "both sleeps running on the host", func() bool { return len(strings.Fields(sleeps())) == 2 })
	jobID := bulk.Items[0].JobID
	if r, body := a.Do("POST", "/api/v1/jobs/"+jobID+"/abort", token, nil, nil); r.StatusCode >= 300 {
		t.Fatalf("abort: %d %s", r.StatusCode, body)
	}
	testutil.WaitFor(t, 30*time.Second, "aborted job", func() bool {
		var j struct {
			Status string `json:"status"`
		}
		a.Do("GET", "/api/v1/jobs/"+jobID, token, nil, &j)
		return j.Status == "aborted"
	})
	testutil.WaitFor(t, 30*time.Second, "the command's process group gone from the host", func() bool { return sleeps() == "" })

	// A new token revokes the running agent's credentials: it is
	// disconnected at once and cannot come back.
	tok2 := issue()
	if tok2.AgentID == tok1.AgentID {
		t.Fatal("a new token kept the agent id")
	}
	testutil.WaitFor(t, 15*time.Second, "old agent disconnected", func() bool {
		var s struct {
			Agent *agentState `json:"agent"`
		}
		a.Do("GET", "/api/v1/servers/"+srv.ID, token, nil, &s)
		return s.Agent != nil && s.Agent.AgentID == tok2.AgentID && !s.Agent.Connected
	})
	testutil.WaitFor(t, 15*time.Second, "gateway log of the disconnect", func() bool {
		return strings.Contains(a.Stderr(), "agent disconnected on request")
	})
	// The agent retries with its revoked secret: wait for two refused
	// attempts after the disconnect, then it must still be disconnected.
	testutil.WaitFor(t, 60*time.Second, "two refused reconnects of the revoked agent", func() bool {
		log := a.Stderr()
		n := 0
		for _, line := range strings.Split(log[strings.Index(log, "agent disconnected on request"):], "\n") {
			if strings.Contains(line, "agent rejected") && strings.Contains(line, tok1.AgentID) {
				n++
			}
		}
		return n >= 2
	})
	var s struct {
		Agent *agentState `json:"agent"`
	}
	a.Do("GET", "/api/v1/servers/"+srv.ID, token, nil, &s)
	if s.Agent.Connected {
		t.Fatal("the revoked agent connected again")
	}
	// The agent runs on, not connected: lcm-agent status exits 4 and says why.
	out, err = onHostErr("/usr/local/bin/lcm-agent status")
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 4 || !strings.Contains(out, "last error:") {
		t.Fatalf("lcm-agent status of the revoked agent: %v\n%s", err, out)
	}
}

type exitError struct{ code int }

func (e *exitError) Error() string { return "exit status " + strconv.Itoa(e.code) }

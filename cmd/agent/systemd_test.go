package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/pkg/agentproto"
)

// TestSystemdSupervisesAgent runs lcm-agent under a real systemd
// (testutil.StartSystemd) with the supervision of
// deploy/systemd/lcm-agent.service, which must equal the unit
// install-service writes: start returns once the agent sent READY=1
// (Type=notify), although its gateway is unreachable (it reconnects by
// itself), the watchdog is armed, and a killed agent is started again
// (Restart=always).
func TestSystemdSupervisesAgent(t *testing.T) {
	unit := filepath.Join("..", "..", "deploy", "systemd", "lcm-agent.service")
	shipped, err := os.ReadFile(unit)
	if err != nil {
		t.Fatal(err)
	}
	directives := func(u string) string { // the unit without its comments
		var out []string
		for _, l := range strings.Split(u, "\n") {
			if !strings.HasPrefix(l, "#") {
				out = append(out, l)
			}
		}
		return strings.Join(out, "\n")
	}
	if got, want := directives(unitFile("/usr/bin/lcm-agent", defaultConfigPath)), directives(string(shipped)); got != want {
		t.Fatalf("install-service writes another unit than the package ships:\n%s\nwant\n%s", got, want)
	}

	sd := testutil.StartSystemd(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "lcm-agent")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	secret, _ := agentproto.NewSecret()
	cfg := filepath.Join(dir, "agent.json")
	if err := saveConfig(cfg, config{AgentID: agentproto.NewID(), Secret: secret,
		GatewayURL: fmt.Sprintf("wss://127.0.0.1:%d/mqtt", testutil.FreePort(t)), TLSFingerprintSHA256: strings.Repeat("ab", 32)}); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "lcm-agent.log")
	defer func() {
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("lcm-agent output:\n%s", b)
		}
	}()
	sd.InstallDerived("lcm-agent", unit, bin+" run -config "+cfg, nil, logPath)
	sd.MustCtl("start", "lcm-agent")
	st := sd.Show("lcm-agent")
	if st["ActiveState"] != "active" || st["Type"] != "notify" || st["WatchdogUSec"] != "1min 30s" || st["Restart"] != "always" {
		t.Fatalf("after start: ActiveState=%s Type=%s WatchdogUSec=%s Restart=%s", st["ActiveState"], st["Type"], st["WatchdogUSec"], st["Restart"])
	}
	pid := sd.MainPID("lcm-agent")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 30*time.Second, "systemd started the killed agent again", func() bool {
		st := sd.Show("lcm-agent")
		return st["NRestarts"] == "1" && st["ActiveState"] == "active" && st["MainPID"] != fmt.Sprint(pid)
	})
	sd.MustCtl("stop", "lcm-agent")
	if st := sd.Show("lcm-agent"); st["ActiveState"] != "inactive" || st["Result"] != "success" {
		t.Fatalf("after stop: ActiveState=%s Result=%s", st["ActiveState"], st["Result"])
	}
}

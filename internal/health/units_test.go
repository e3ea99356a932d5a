package health

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// parseUnit reads a systemd unit into section → key → values (a key may
// repeat).
func parseUnit(t *testing.T, path string) map[string]map[string][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]map[string][]string{}
	sec := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			sec = line[1 : len(line)-1]
			out[sec] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || sec == "" {
				t.Fatalf("%s: malformed line %q", path, line)
			}
			out[sec][k] = append(out[sec][k], v)
		}
	}
	return out
}

// TestSystemdUnits: every unit carries the spec's supervision — notify with
// a 90 s watchdog, always restart, the crash-loop brake of 5 starts in
// 300 s — and lcm-api and lcm-worker restart on their own exit codes (70
// self-restart, 42 staged restore for lcm-api). A real systemd runs them
// in TestSystemdSupervisesAPI (cmd/api), TestSystemdSupervisesWorker
// (cmd/worker) and TestSystemdSupervisesAgent (cmd/agent).
func TestSystemdUnits(t *testing.T) {
	dir := filepath.Join("..", "..", "deploy", "systemd")
	want := map[string]map[string]string{
		"Unit":    {"StartLimitIntervalSec": "300", "StartLimitBurst": "5"},
		"Service": {"Type": "notify", "WatchdogSec": "90", "Restart": "always", "NotifyAccess": "main"},
	}
	codes := map[string][]string{"lcm-api": {"70", "42"}, "lcm-worker": {"70"}, "lcm-agent": nil}
	for _, name := range []string{"lcm-api", "lcm-worker", "lcm-agent"} {
		u := parseUnit(t, filepath.Join(dir, name+".service"))
		for sec, kv := range want {
			for k, v := range kv {
				if got := u[sec][k]; len(got) != 1 || got[0] != v {
					t.Errorf("%s.service [%s] %s = %v, want %s", name, sec, k, got, v)
				}
			}
		}
		force := strings.Fields(strings.Join(u["Service"]["RestartForceExitStatus"], " "))
		for _, c := range codes[name] {
			if !slices.Contains(force, c) {
				t.Errorf("%s.service RestartForceExitStatus %v lacks %s", name, force, c)
			}
		}
		// lcm-worker has no -config flag: its settings are LCM_WORKER_*
		// variables from the EnvironmentFile.
		if name == "lcm-worker" && (fmt.Sprint(u["Service"]["ExecStart"]) != "[/usr/lib/lcm/lcm-worker]" ||
			fmt.Sprint(u["Service"]["EnvironmentFile"]) != "[/etc/lcm-worker/worker.env]") {
			t.Errorf("lcm-worker.service ExecStart %v EnvironmentFile %v", u["Service"]["ExecStart"], u["Service"]["EnvironmentFile"])
		}
	}
	if ExitSelfRestart != 70 || ExitRestore != 42 {
		t.Fatal("exit codes differ from the spec")
	}
}

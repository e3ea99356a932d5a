package health

import (
	"bufio"
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

// TestSystemdUnits: the units carry the spec's supervision — notify with a
// 90 s watchdog, always restart, the crash-loop brake of 5 starts in 300 s
// — and lcm-api restarts on its own exit codes (70 self-restart, 42 staged
// restore). Manual check with a real systemd: docs/backups.md.
func TestSystemdUnits(t *testing.T) {
	dir := filepath.Join("..", "..", "deploy", "systemd")
	api := parseUnit(t, filepath.Join(dir, "lcm-api.service"))
	want := map[string]map[string]string{
		"Unit":    {"StartLimitIntervalSec": "300", "StartLimitBurst": "5"},
		"Service": {"Type": "notify", "WatchdogSec": "90", "Restart": "always", "NotifyAccess": "main"},
	}
	for sec, kv := range want {
		for k, v := range kv {
			if got := api[sec][k]; len(got) != 1 || got[0] != v {
				t.Errorf("lcm-api.service [%s] %s = %v, want %s", sec, k, got, v)
			}
		}
	}
	codes := strings.Fields(strings.Join(api["Service"]["RestartForceExitStatus"], " "))
	for _, c := range []string{"70", "42"} {
		if !slices.Contains(codes, c) {
			t.Errorf("RestartForceExitStatus %v lacks %s", codes, c)
		}
	}
	if ExitSelfRestart != 70 || ExitRestore != 42 {
		t.Fatal("exit codes differ from the spec")
	}
	worker := parseUnit(t, filepath.Join(dir, "lcm-worker.service"))
	for k, v := range map[string]string{"StartLimitIntervalSec": "300", "StartLimitBurst": "5"} {
		if got := worker["Unit"][k]; len(got) != 1 || got[0] != v {
			t.Errorf("lcm-worker.service [Unit] %s = %v, want %s", k, got, v)
		}
	}
	if got := worker["Service"]["Restart"]; len(got) != 1 || got[0] != "always" {
		t.Errorf("lcm-worker.service Restart = %v", got)
	}
}

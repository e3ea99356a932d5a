package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/lcmproject/lcm/internal/testutil"
)

// unitKeys parses a unit's Key=Value lines (sections are not needed:
// every key below is unique in the agent's unit).
func unitKeys(unit string) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(unit, "\n") {
		if k, v, ok := strings.Cut(l, "="); ok && !strings.HasPrefix(l, "#") {
			m[k] = v
		}
	}
	return m
}

// TestUnitFile checks the agent's systemd unit the way systemd reads it
// (systemd-analyze verify, offline): it parses without a complaint other
// at all; restarts follow the spec's crash-loop brake (5 starts in
// 300 s); the hardening is what
// unitFile's comment decides; and the Debian package ships the same unit.
func TestUnitFile(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		testutil.Unavailable(t, "systemd-analyze (Debian package systemd)")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "lcm-agent")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	unit := unitFile(bin, "/etc/lcm-agent/agent.json")
	path := filepath.Join(dir, "lcm-agent.service")
	if err := os.WriteFile(path, []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	verOut, err := exec.Command(analyze, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`systemd (\d+)`).FindSubmatch(verOut)
	if m == nil {
		t.Fatalf("systemd-analyze --version: %s", verOut)
	}
	ver, _ := strconv.Atoi(string(m[1]))
	cmd := exec.Command(analyze, "verify", "--man=no", path)
	cmd.Env = append(os.Environ(), "SYSTEMD_LOG_LEVEL=info")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l == "" {
			continue
		}
		t.Errorf("systemd %d complains about the unit: %s", ver, l)
	}

	k := unitKeys(unit)
	for key, want := range map[string]string{
		"Restart": "always", "StartLimitIntervalSec": "300", "StartLimitBurst": "5", "RestartSec": "5",
		"LockPersonality": "yes", "RestrictRealtime": "yes", "ProtectKernelLogs": "yes", "LimitCORE": "0", "UMask": "0022",
		"RuntimeDirectory": "lcm-agent", "KillMode": "mixed",
	} {
		if k[key] != want {
			t.Errorf("%s=%q, want %q", key, k[key], want)
		}
	}
	// Weighed and left off (see unitFile): each breaks package management
	// or an LCM action.
	for _, key := range []string{"ProtectSystem", "ProtectHome", "PrivateTmp", "NoNewPrivileges", "ProtectKernelModules",
		"ProtectKernelTunables", "ProtectControlGroups", "RestrictNamespaces", "ProtectClock", "ProtectHostname",
		"RestrictSUIDSGID"} {
		if _, ok := k[key]; ok {
			t.Errorf("%s is set; unitFile explains why it must not be", key)
		}
	}

	// The Debian package's unit is the same text for /usr/bin/lcm-agent.
	root, err := testutil.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	deb, err := os.ReadFile(filepath.Join(root, "deploy", "systemd", "lcm-agent.service"))
	if err != nil {
		t.Fatal(err)
	}
	body := string(deb)[strings.Index(string(deb), "[Unit]"):]
	if want := unitFile("/usr/bin/lcm-agent", "/etc/lcm-agent/agent.json"); body != want {
		t.Fatalf("deploy/systemd/lcm-agent.service differs from unitFile:\n%s\nwant:\n%s", body, want)
	}
}

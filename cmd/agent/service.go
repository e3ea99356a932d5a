package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

const defaultUnitPath = "/etc/systemd/system/lcm-agent.service"

// unitFile is the systemd unit of `lcm-agent run`. Hardening stops where
// package management begins: the agent runs apt/dnf as root, which writes
// all over /usr, /etc and /var and restarts services, so ProtectSystem,
// ProtectHome and PrivateTmp would break upgrades. NoNewPrivileges is off
// for the same reason (sudo in commands of non-root agents). What is safe
// is on: no privilege-escalating personality or realtime tricks, a private
// view of kernel tunables is not (sysctl changes are management work).
// Restart with backoff: 5 s, at most 5 restarts in 5 minutes before systemd
// gives up; the agent's own reconnect loop handles gateway outages, so a
// restart means the process itself failed.
func unitFile(binary, config string) string {
	return fmt.Sprintf(`[Unit]
Description=LCM agent (outbound connection to the LCM agent gateway)
Documentation=https://github.com/lcmproject/lcm/blob/main/docs/agent.md
Wants=network-online.target
After=network-online.target
StartLimitIntervalSec=300
StartLimitBurst=5

[Service]
Type=notify
# READY=1 at start, WATCHDOG=1 while the process runs (gateway outages are
# handled by the agent's own reconnect); 90 s without one: restart.
WatchdogSec=90
NotifyAccess=main
ExecStart=%s run -config %s
Restart=always
RestartSec=5
KillMode=mixed
TimeoutStopSec=30
LockPersonality=yes
RestrictRealtime=yes
UMask=0077

[Install]
WantedBy=multi-user.target
`, binary, config)
}

// runInstallService: lcm-agent install-service [-config path] [-unit path]
// writes the systemd unit for this binary and enables and starts it. On a
// host without a running systemd (a container, a chroot) it writes the
// unit and says how to start the agent instead.
func runInstallService(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	flags := flag.NewFlagSet("lcm-agent install-service", flag.ContinueOnError)
	flags.SetOutput(stderr)
	config := flags.String("config", defaultConfigPath, "the agent configuration written by enroll")
	unit := flags.String("unit", defaultUnitPath, "where to write the systemd unit")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if flags.NArg() != 0 {
		return errors.New("usage: lcm-agent install-service [-config path] [-unit path]")
	}
	if _, err := loadConfig(*config); err != nil {
		return fmt.Errorf("install-service: enroll first: %w", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return err
	}
	if strings.ContainsAny(exe+*config, " \t\n\"'\\%") {
		return fmt.Errorf("install-service: paths with spaces, quotes or %% are not supported: %s, %s", exe, *config)
	}
	if err := os.MkdirAll(filepath.Dir(*unit), 0o755); err != nil {
		return err
	}
	tmp := *unit + ".tmp"
	if err := os.WriteFile(tmp, []byte(unitFile(exe, *config)), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, *unit); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s\n", *unit)
	if fi, err := os.Stat("/run/systemd/system"); err != nil || !fi.IsDir() {
		fmt.Fprintf(stdout, "systemd is not running on this host: the unit starts at the next boot with systemd; "+
			"start the agent now with: %s run -config %s\n", exe, *config)
		return nil
	}
	for _, c := range [][]string{{"systemctl", "daemon-reload"}, {"systemctl", "enable", "--now", filepath.Base(*unit)},
		{"systemctl", "restart", filepath.Base(*unit)}} {
		cmd := exec.CommandContext(ctx, c[0], c[1:]...)
		cmd.Stdout, cmd.Stderr = stdout, stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s: %w", strings.Join(c, " "), err)
		}
	}
	fmt.Fprintln(stdout, "lcm-agent is running (systemctl status lcm-agent)")
	return nil
}

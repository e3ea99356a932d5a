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

// unitFile is the systemd unit of `lcm-agent run` (deploy/systemd's unit
// of the Debian package is the same text; TestUnitFile checks both with
// systemd-analyze verify). Each hardening directive was weighed against
// what the agent is for: it runs package management and every other
// management command as root, exactly as over SSH.
//
// On:
//   - LockPersonality, RestrictRealtime: no command needs another
//     execution domain or realtime scheduling (services that do are
//     started by systemd, not as the agent's children).
//   - ProtectKernelLogs: no package operation reads or writes the kernel
//     log buffer (/dev/kmsg, syslog(2)).
//   - LimitCORE=0: the agent's memory holds its secret; no core dumps of
//     it or its commands.
//
// Off, each because it breaks package management or an LCM action:
//   - ProtectSystem, ProtectHome, PrivateTmp, PrivateMounts: apt/dnf
//     write /usr, /etc, /boot and /var, Linux-user actions create homes,
//     commands must see the host's /tmp and mounts as over SSH.
//   - NoNewPrivileges: blocks SELinux domain transitions of rpm/dnf
//     scriptlets and setuid helpers (sudo of a non-root agent).
//   - ProtectKernelModules: kernel upgrades and kernel-cleanup write
//     /usr/lib/modules and run depmod/modprobe.
//   - ProtectKernelTunables: sysctl changes (procps, ufw, hardening)
//     write /proc/sys.
//   - ProtectControlGroups, RestrictNamespaces: container actions
//     (podman runs containers as the agent's children) need both.
//   - ProtectClock: implies a device allow-list (DeviceAllow=char-rtc),
//     which shuts grub-install, mkinitramfs and disk tools out of /dev.
//   - ProtectHostname: a private UTS namespace freezes the host name the
//     agent and its commands see; a renamed host would report the old one.
//   - RestrictSUIDSGID: packages ship setuid binaries (sudo, passwd).
//   - RestrictAddressFamilies, SystemCallFilter, MemoryDenyWriteExecute,
//     SystemCallArchitectures: firewall tools need netlink, cryptsetup
//     AF_ALG, multiarch packages foreign binaries, JITs W^X memory.
//
// UMask stays 0022 (what an SSH session gets): a stricter one would make
// files that commands and maintainer scripts create unreadable to the
// services they are for. The agent sets its own files' modes explicitly.
//
// Restart: always (also after a kill or an OOM), every 5 s, under the
// spec's crash-loop brake for every LCM process: at most 5 start attempts
// in 300 s (StartLimitIntervalSec/StartLimitBurst). A braked agent shows
// as offline in LCM (and its alert fires) instead of burning CPU. The
// agent's own reconnect loop handles gateway outages, so a restart means
// the process itself failed.
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
RuntimeDirectory=lcm-agent
RuntimeDirectoryMode=0755
UMask=0022
LockPersonality=yes
RestrictRealtime=yes
ProtectKernelLogs=yes
LimitCORE=0

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

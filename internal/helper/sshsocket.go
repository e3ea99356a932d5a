package helper

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A socket-activated sshd (ssh.socket: Ubuntu 22.10 and later, Debian 12
// when enabled) listens where the socket unit says, not where sshd_config
// says. LCM moves its port with a drop-in of the socket unit; sshd_config's
// Port lines (LCM's 10-lcm-ssh.conf) say the same, so sshd -T and
// Ubuntu's sshd-socket-generator agree with it.

// SSHSocketDropInPath is LCM's drop-in for ssh.socket. It sorts after the
// generator's addresses.conf (/run/systemd/generator/ssh.socket.d), so its
// "ListenStream=" reset wins.
const SSHSocketDropInPath = "/etc/systemd/system/ssh.socket.d/lcm-port.conf"

// MaxSocketPorts: LCM's move listens on the old and the new port at most.
const MaxSocketPorts = 2

// ParsePorts reads "22" or "22,2222": one or two distinct ports 1–65535
// in plain decimal.
func ParsePorts(s string) ([]int, error) {
	parts := strings.Split(s, ",")
	if len(parts) == 0 || len(parts) > MaxSocketPorts {
		return nil, refuse("ports %q: one or two, comma-separated", truncate(s, 20))
	}
	var out []int
	for _, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != p {
			return nil, refuse("port %q: 1-65535 in plain decimal", truncate(p, 12))
		}
		for _, o := range out {
			if o == n {
				return nil, refuse("port %d given twice", n)
			}
		}
		out = append(out, n)
	}
	return out, nil
}

// SSHSocketDropIn is the ssh.socket drop-in for ports: the unit's own
// ListenStream lines are reset, then each port on IPv4 and IPv6
// separately (BindIPv6Only=ipv6-only, as Ubuntu's unit does, so the two
// never collide whatever the unit sets).
func SSHSocketDropIn(ports []int) string {
	var b strings.Builder
	b.WriteString("# Written by LCM (ssh-port): sshd is socket-activated, so it listens where ssh.socket says.\n")
	b.WriteString("# LCM rewrites this file: change the port through LCM. \"ListenStream=\" drops the unit's own ports.\n")
	b.WriteString("[Socket]\nListenStream=\n")
	for _, p := range ports {
		fmt.Fprintf(&b, "ListenStream=0.0.0.0:%d\nListenStream=[::]:%d\n", p, p)
	}
	b.WriteString("BindIPv6Only=ipv6-only\n")
	return b.String()
}

// SSHSocketRestartScript makes systemd read the drop-in and listen anew:
// daemon-reload, restart ssh.socket, and restart ssh.service when it runs
// (Accept=no: the running sshd holds the old listening sockets; the
// sessions survive, sshd's KillMode is process). The same steps as the
// helper's, for full sudo mode (run as root).
const SSHSocketRestartScript = `systemctl daemon-reload && systemctl restart ssh.socket && { ! systemctl is-active --quiet ssh.service || systemctl restart ssh.service; }`

// sshSocketInUse reports whether systemd runs and ssh.socket is active,
// or failed (a restart that could not listen: LCM's rollback must reach
// it).
func sshSocketInUse() bool {
	if _, err := os.Stat("/run/systemd/system"); err != nil {
		return false
	}
	return runTool(io.Discard, io.Discard, nil, "systemctl", "is-active", "--quiet", "ssh.socket") == nil ||
		runTool(io.Discard, io.Discard, nil, "systemctl", "is-failed", "--quiet", "ssh.socket") == nil
}

// sshSocket runs "ssh-socket set|remove|show".
func sshSocket(action, arg string, stdout, stderr io.Writer) error {
	if action == "show" {
		return runTool(stdout, stderr, nil, "systemctl", "show", "ssh.socket", "--property=Listen")
	}
	if !sshSocketInUse() {
		return errors.New("ssh.socket is neither active nor failed: sshd is not socket-activated here")
	}
	var err error
	switch action {
	case "remove":
		err = os.Remove(SSHSocketDropInPath)
		if errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(stdout, "%s is not there\n", SSHSocketDropInPath)
			err = nil
		} else if err == nil {
			fmt.Fprintf(stdout, "removed %s\n", SSHSocketDropInPath)
		}
	default:
		ports, perr := ParsePorts(arg)
		if perr != nil {
			return perr
		}
		if err = os.MkdirAll(filepath.Dir(SSHSocketDropInPath), 0o755); err == nil {
			err = atomicWrite(SSHSocketDropInPath, []byte(SSHSocketDropIn(ports)), 0o644)
		}
		if err == nil {
			fmt.Fprintf(stdout, "wrote %s\n", SSHSocketDropInPath)
		}
	}
	if err != nil {
		return err
	}
	for _, step := range [][]string{{"daemon-reload"}, {"restart", "ssh.socket"}} {
		if err := runTool(stdout, stderr, nil, "systemctl", step...); err != nil {
			return err
		}
	}
	if runTool(io.Discard, io.Discard, nil, "systemctl", "is-active", "--quiet", "ssh.service") == nil {
		if err := runTool(stdout, stderr, nil, "systemctl", "restart", "ssh.service"); err != nil {
			return err
		}
	}
	return runTool(stdout, stderr, nil, "systemctl", "show", "ssh.socket", "--property=Listen")
}

// ParseSocketListen reads `systemctl show ssh.socket --property=Listen`
// ("Listen=0.0.0.0:22 (Stream)", one line per address, or several on one
// line with older systemd) and returns the stream ports, in order, once.
func ParseSocketListen(out string) []int {
	var ports []int
	seen := map[int]bool{}
	for _, f := range strings.Fields(strings.ReplaceAll(out, "Listen=", " ")) {
		if strings.HasPrefix(f, "(") {
			continue
		}
		i := strings.LastIndex(f, ":")
		var s string
		switch {
		case i >= 0:
			s = f[i+1:]
		default:
			s = f // "ListenStream=22" shows as "[::]:22"; a bare port is possible
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 65535 || seen[n] {
			continue
		}
		seen[n] = true
		ports = append(ports, n)
	}
	return ports
}

package actions

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/lcmproject/lcm/internal/helper"
	"github.com/lcmproject/lcm/internal/remote"
)

// SSHSocketDropIn is LCM's drop-in for a socket-activated sshd's
// ssh.socket (helper.SSHSocketDropIn renders it).
const SSHSocketDropIn = helper.SSHSocketDropInPath

// sshSocket changes the ports of ssh.socket: a root script in full sudo
// mode, lcm-helper ssh-socket in restricted mode. prev is LCM's drop-in
// as it was before the job (for the rollback).
type sshSocket struct {
	o    sshOps
	prev fileState
}

// socketActiveCmd: systemd runs and ssh.socket is active. Neither needs
// root.
const socketActiveCmd = "[ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet ssh.socket"

// detectSSHSocket returns the socket's operations when sshd is
// socket-activated, else nil.
func detectSSHSocket(ctx context.Context, o sshOps) (*sshSocket, error) {
	code, err := run(ctx, o.ex, io.Discard, remote.Command{Cmd: socketActiveCmd})
	if err != nil {
		return nil, err
	}
	if code != 0 {
		return nil, nil
	}
	fmt.Fprintln(o.out, "lcm: sshd is socket-activated (ssh.socket is active): its port is the socket's; LCM writes "+SSHSocketDropIn+" too")
	// The drop-in is world-readable (0644 under /etc/systemd/system):
	// read without sudo, in either mode.
	raw, code, err := capture(ctx, o.ex, o.out, remote.Command{Cmd: "sh -c " + shQuote(readFileScript) + " lcm " + shQuote(SSHSocketDropIn)})
	if err != nil {
		return nil, err
	}
	head, rest, _ := strings.Cut(raw, "\n")
	if code != 0 || (head != "present" && head != "absent") {
		return nil, failf("reading %s failed (exit code %d)", SSHSocketDropIn, code)
	}
	return &sshSocket{o: o, prev: fileState{path: SSHSocketDropIn, content: rest, exists: head == "present"}}, nil
}

// setSocketScript writes $1 (base64 $2; "absent" removes it), then makes
// systemd listen anew (helper.SSHSocketRestartScript).
const setSocketScript = `set -e
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
F="$1"; D=$(dirname "$F")
if [ "$2" = absent ]; then rm -f "$F"; echo "lcm: removed $F"; else
  mkdir -p "$D"; T=$(mktemp "$D/.lcm-tmp.XXXXXX")
  printf '%s' "$2" | base64 -d > "$T"; chmod 0644 "$T"; chown root:root "$T"; mv -f "$T" "$F"; echo "lcm: wrote $F"
fi
` + helper.SSHSocketRestartScript

// write puts content (nil: remove) and restarts the socket.
func (s *sshSocket) write(ctx context.Context, content *string, ports []int) error {
	var c remote.Command
	switch {
	case s.o.viaHelper && content == nil:
		c = remote.Command{Cmd: helperCmd("ssh-socket", "remove")}
	case s.o.viaHelper:
		if len(ports) == 0 || len(ports) > helper.MaxSocketPorts {
			return fmt.Errorf("lcm-helper sets one or two ports, not %v", ports)
		}
		c = remote.Command{Cmd: helperCmd("ssh-socket", "set", joinPorts(ports))}
	default:
		arg := "absent"
		if content != nil {
			arg = base64.StdEncoding.EncodeToString([]byte(*content))
		}
		c = remote.Command{Cmd: "sh -c " + shQuote(setSocketScript) + " lcm " + shQuote(SSHSocketDropIn) + " " + arg, Sudo: true}
	}
	code, err := run(ctx, s.o.ex, s.o.out, c)
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("writing %s and restarting ssh.socket exited with code %d", SSHSocketDropIn, code)
	}
	return nil
}

// set makes the socket listen on ports.
func (s *sshSocket) set(ctx context.Context, ports []int) error {
	content := helper.SSHSocketDropIn(ports)
	return s.write(ctx, &content, ports)
}

// restore puts the drop-in back as it was before the job.
func (s *sshSocket) restore(ctx context.Context) error {
	if !s.prev.exists {
		return s.write(ctx, nil, nil)
	}
	content := s.prev.content
	return s.write(ctx, &content, socketPortsOf(content))
}

// listen reads back the ports ssh.socket listens on.
func (s *sshSocket) listen(ctx context.Context) ([]int, error) {
	raw, code, err := capture(ctx, s.o.ex, s.o.out, remote.Command{Cmd: "systemctl show ssh.socket --property=Listen"})
	if err != nil {
		return nil, err
	}
	if code != 0 {
		return nil, fmt.Errorf("systemctl show exited with code %d", code)
	}
	fmt.Fprint(s.o.out, raw)
	return helper.ParseSocketListen(raw), nil
}

// socketPortsOf reads the ports of LCM's own socket drop-in.
func socketPortsOf(content string) []int {
	var ls []string
	for _, l := range strings.Split(content, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "ListenStream="); ok && v != "" {
			ls = append(ls, v)
		}
	}
	return helper.ParseSocketListen(strings.Join(ls, " "))
}

func joinPorts(ps []int) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = strconv.Itoa(p)
	}
	return strings.Join(s, ",")
}

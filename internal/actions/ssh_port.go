package actions

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/lcmproject/lcm/internal/actions/sshdcfg"
	"github.com/lcmproject/lcm/internal/remote"
)

// sshDropIn is what 10-lcm-ssh.conf holds: root login and the ports.
type sshDropIn struct {
	rootLogin string
	ports     []int
}

// parseSSHDropIn reads LCM's own 10-lcm-ssh.conf (lines it wrote).
func parseSSHDropIn(content string) sshDropIn {
	var st sshDropIn
	for _, l := range strings.Split(content, "\n") {
		f := strings.Fields(l)
		if len(f) != 2 || strings.HasPrefix(f[0], "#") {
			continue
		}
		switch strings.ToLower(f[0]) {
		case "permitrootlogin":
			st.rootLogin = f[1]
		case "port":
			if n, err := strconv.Atoi(f[1]); err == nil && n > 0 && n < 65536 {
				st.ports = append(st.ports, n)
			}
		}
	}
	return st
}

// render writes 10-lcm-ssh.conf, each line explained.
func (st sshDropIn) render() string {
	var b strings.Builder
	b.WriteString("# Written by LCM (ssh-root-login, ssh-port). LCM rewrites this file: change it through LCM.\n")
	b.WriteString("# It sorts before the other drop-ins, so its values win (sshd keeps the first one).\n")
	switch st.rootLogin {
	case "no":
		b.WriteString("# root cannot log in over SSH at all.\nPermitRootLogin no\n")
	case "prohibit-password":
		b.WriteString("# root may log in with a key, never with a password.\nPermitRootLogin prohibit-password\n")
	}
	if len(st.ports) > 0 {
		b.WriteString("# sshd listens on these ports (Port lines add up, also with the main file's).\n")
		for _, p := range st.ports {
			fmt.Fprintf(&b, "Port %d\n", p)
		}
	}
	return b.String()
}

// SSHPortParams are ssh-port's parameters.
type SSHPortParams struct {
	Port int `json:"port"`
}

// SSHPort moves sshd to another port without ever losing LCM's way in:
//
//	10-lcm-ssh.conf: Port old + Port new ──► sshd -t, reload, sshd -T shows new ──► fresh login on new
//	──► Port new only ──► reload, fresh login on new ──► the server's stored port changes (finish hook)
//	any proof fails ──► previous drop-in back, reload, fresh login on the old port
//
// A socket-activated sshd (ssh.socket active: Ubuntu 22.10 and later)
// listens where the socket unit says: each step also writes LCM's
// ssh.socket drop-in (helper.SSHSocketDropIn: the unit's ListenStream
// reset, the ports on IPv4 and IPv6), runs daemon-reload and restarts
// ssh.socket (and ssh.service when it runs), and reads back what the
// socket listens on (systemctl show ssh.socket --property=Listen) before
// the fresh login; the rollback restores that drop-in too.
type SSHPort struct{}

// Run implements Action.
func (SSHPort) Run(ctx context.Context, env *Env) (Result, error) {
	var p SSHPortParams
	if err := json.Unmarshal(env.Params, &p); err != nil || p.Port < 1 || p.Port > 65535 {
		return Result{}, failf("bad parameters: port must be 1-65535")
	}
	out := env.Out
	if env.Creds.PrivateKey == "" {
		return Result{}, failf("the management login has no key (password device): LCM does not move its sshd")
	}
	if env.DialPort == nil {
		return Result{}, failf("this transport cannot dial another port")
	}
	oldPort := portOf(env.Creds.Addr)
	o, err := newSSHOps(ctx, env.Exec, out)
	if err != nil {
		return Result{}, err
	}
	sock, err := detectSSHSocket(ctx, o)
	if err != nil {
		return Result{}, err
	}
	conn := sshConnection(ctx, env.Exec, out)
	before, err := readFiles(ctx, o, SSHDropIn)
	if err != nil {
		return Result{}, err
	}
	prev := before[0]
	st := parseSSHDropIn(prev.content)
	pr := &SSHProof{Socket: sock != nil}
	// apply writes the ports: sshd's drop-in, reloaded, and on a
	// socket-activated sshd the socket's.
	// wrote is false when nothing changed (sshd -t refused the drop-in,
	// and the previous one is back).
	apply := func(ports []int) (wrote bool, err error) {
		next := st
		next.ports = ports
		if err := o.put(ctx, SSHDropIn, next.render(), true); err != nil {
			return false, err
		}
		if err := o.reload(ctx); err != nil {
			return true, fmt.Errorf("sshd could not be reloaded: %w", err)
		}
		if sock != nil {
			return true, sock.set(ctx, ports)
		}
		return true, nil
	}
	// proven reads back sshd -T (and the socket's ports) and logs in on
	// port; "" when both show it and the login works.
	proven := func(port int, phase string) string {
		readBack(ctx, o, conn, env.Creds.User, pr)
		switch {
		case !pr.Proven:
			return "no proof: " + pr.Missing
		case !slices.Contains(pr.Ports, port):
			return fmt.Sprintf("%ssshd -T does not list port %d (ports: %v)", phase, port, pr.Ports)
		}
		if sock != nil {
			ports, err := sock.listen(ctx)
			pr.SocketPorts = ports
			if err != nil {
				return "the ports of ssh.socket could not be read back: " + err.Error()
			}
			if !slices.Contains(ports, port) {
				return fmt.Sprintf("%sssh.socket does not listen on port %d (it listens on %v)", phase, port, ports)
			}
		}
		if err := proveFreshLoginOn(ctx, env, port); err != nil {
			if phase != "" {
				return fmt.Sprintf("a fresh login on port %d failed after the switch (%v)", port, err)
			}
			return fmt.Sprintf("a fresh login on port %d failed (%v): a ListenAddress with a port, a firewall or SELinux may hold it", port, err)
		}
		return ""
	}
	rollback := func(reason string) (Result, error) {
		fmt.Fprintf(out, "lcm: %s; rolling back\n", reason)
		pr.RolledBack = true
		var errs []string
		if err := o.put(ctx, prev.path, prev.content, prev.exists); err != nil {
			errs = append(errs, err.Error())
		}
		if err := o.reload(ctx); err != nil {
			errs = append(errs, "reload: "+err.Error())
		}
		if sock != nil {
			if err := sock.restore(ctx); err != nil {
				errs = append(errs, "ssh.socket: "+err.Error())
			}
		}
		after := &SSHProof{}
		readBack(ctx, o, conn, env.Creds.User, after)
		pr.Proven, pr.PasswordAuth, pr.RootLogin, pr.Port, pr.Ports, pr.Lines = after.Proven, after.PasswordAuth, after.RootLogin, after.Port, after.Ports, after.Lines
		if sock != nil {
			pr.SocketPorts, _ = sock.listen(ctx)
		}
		if err := proveFreshLoginOn(ctx, env, oldPort); err != nil {
			errs = append(errs, "login on the old port "+strconv.Itoa(oldPort)+": "+err.Error())
		}
		if len(errs) > 0 {
			return Result{SSH: pr}, failf("%s; the ROLLBACK FAILED (%s): check %s on the server", reason, strings.Join(errs, "; "), SSHDropIn)
		}
		return Result{SSH: pr}, failf("%s; rolled back, sshd listens on port %d as before", reason, oldPort)
	}
	// Phase 1: both ports.
	both := []int{oldPort}
	if p.Port != oldPort {
		both = append(both, p.Port)
	}
	if wrote, err := apply(both); err != nil {
		if !wrote {
			return Result{}, err
		}
		return rollback(err.Error())
	}
	if why := proven(p.Port, ""); why != "" {
		return rollback(why)
	}
	// Phase 2: only the new port.
	if _, err := apply([]int{p.Port}); err != nil {
		return rollback("moving to the new port alone failed: " + err.Error())
	}
	if why := proven(p.Port, "after the switch: "); why != "" {
		return rollback(why)
	}
	pr.Port = p.Port
	msg := fmt.Sprintf("sshd listens on port %d (proven: sshd -T and a fresh login on the new port)", p.Port)
	if sock != nil {
		msg = fmt.Sprintf("sshd listens on port %d through ssh.socket (proven: sshd -T, the socket's ports %v and a fresh login on the new port)", p.Port, pr.SocketPorts)
	}
	if others := otherPorts(pr.Ports, p.Port); len(others) > 0 {
		msg += fmt.Sprintf("; port(s) %v stay open: set outside LCM's drop-in (%s)", others, sshdcfg.MainPath)
	}
	if others := otherPorts(pr.SocketPorts, p.Port); sock != nil && len(others) > 0 {
		msg += fmt.Sprintf("; ssh.socket also listens on %v (another drop-in of the unit)", others)
	}
	fmt.Fprintln(out, "lcm: "+msg)
	return Result{Message: msg, SSH: pr}, nil
}

func otherPorts(ports []int, keep int) []int {
	var o []int
	for _, p := range ports {
		if p != keep {
			o = append(o, p)
		}
	}
	return o
}

func portOf(addr string) int {
	i := strings.LastIndex(addr, ":")
	n, err := strconv.Atoi(addr[i+1:])
	if i < 0 || err != nil {
		return 22
	}
	return n
}

// proveFreshLoginOn is proveFreshLogin on another port.
func proveFreshLoginOn(ctx context.Context, env *Env, port int) error {
	e := *env
	e.Dial = func(ctx context.Context, user, key string) (remote.Executor, error) {
		return env.DialPort(ctx, user, key, port)
	}
	return proveFreshLogin(ctx, &e, e.Out)
}

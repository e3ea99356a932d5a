package testutil

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Systemd is a real systemd service manager (systemd --user, the program
// that supervises user@.service sessions) running as the supervisor of a
// test's units, on a machine whose PID 1 is not systemd.
//
// Isolation, because systemd takes over whatever cgroup tree it finds at
// its root (it moves every process there into init.scope): it runs in a
// private mount namespace and a cgroup namespace whose root is a cgroup v2
// subtree of its own (/lcm-tests/<id>), with only that cgroup2 mounted at
// /sys/fs/cgroup and a tmpfs at /run (where /run/systemd/system makes it
// accept --user without a booted systemd). It sees and moves no process
// but its own and its units'; StartSystemd checks that before returning,
// and removes the subtree at cleanup.
type Systemd struct {
	t       testing.TB
	env     []string
	unitDir string
	cmd     *exec.Cmd
	log     *syncBuffer
	cgroup  string // host path of the subtree
}

// systemdScript mounts the cgroup v2 hierarchy privately at $LCMT_CG,
// moves this shell into its own subtree, and starts systemd in a cgroup
// namespace rooted there.
const systemdScript = `set -e
mount -t cgroup2 none "$LCMT_CG"
mkdir -p "$LCMT_CG/lcm-tests/$LCMT_ID"
echo $$ > "$LCMT_CG/lcm-tests/$LCMT_ID/cgroup.procs"
umount "$LCMT_CG"
exec unshare --cgroup sh -c '
set -e
mount -t cgroup2 none /sys/fs/cgroup
mount -t tmpfs tmpfs /run
mkdir -p /run/systemd/system
exec /lib/systemd/systemd --user'
`

// StartSystemd starts a systemd user manager for the test and stops it (and
// every unit) at cleanup. Without root, unshare, cgroup v2 or systemd the
// test is unavailable (a failure in CI).
func StartSystemd(t testing.TB) *Systemd {
	t.Helper()
	RequireRoot(t)
	RequireTool(t, "unshare")
	RequireTool(t, "systemctl")
	if _, err := os.Stat("/lib/systemd/systemd"); err != nil {
		Unavailable(t, "systemd is not installed (/lib/systemd/systemd): %v", err)
	}
	dir, err := os.MkdirTemp("", "lcm-systemd-")
	if err != nil {
		t.Fatal(err)
	}
	runtime, config, cg := filepath.Join(dir, "run"), filepath.Join(dir, "config"), filepath.Join(dir, "cg2")
	unitDir := filepath.Join(config, "systemd", "user")
	for _, d := range []string{runtime, unitDir, cg} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	id := fmt.Sprintf("%d-%d", os.Getpid(), time.Now().UnixNano())
	s := &Systemd{t: t, unitDir: unitDir, log: &syncBuffer{},
		env: append(os.Environ(), "XDG_RUNTIME_DIR="+runtime, "XDG_CONFIG_HOME="+config)}
	s.cmd = exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", systemdScript)
	s.cmd.Env = append(s.env, "LCMT_CG="+cg, "LCMT_ID="+id)
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		Unavailable(t, "unshare: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_, _ = s.ctl("exit")
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = s.cmd.Process.Kill()
			<-exited
		}
		if s.cgroup != "" {
			removeCgroupTree(s.cgroup)
			_ = os.Remove(filepath.Dir(s.cgroup)) // lcm-tests, when no other test uses it
		}
		os.RemoveAll(dir)
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		select {
		case <-exited:
			Unavailable(t, "systemd --user did not start: %s", s.log.String())
		default:
		}
		// (is-system-running answers "offline" without a user bus; show
		// talks over the manager's private socket.)
		if out, err := s.ctl("show", "--property=SystemState", "--value"); err == nil && (strings.TrimSpace(out) == "running" || strings.TrimSpace(out) == "degraded") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("systemd --user not up after 20 s: %s", s.log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The manager must live in its own subtree, and PID 1 where it was.
	own, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", s.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	path := ""
	for _, l := range strings.Split(string(own), "\n") {
		if p, ok := strings.CutPrefix(l, "0::"); ok {
			path = p
		}
	}
	if !strings.HasPrefix(path, "/lcm-tests/"+id+"/") {
		_ = s.cmd.Process.Kill()
		t.Fatalf("systemd --user is not confined to its cgroup subtree: %q", own)
	}
	if root := cgroup2Mount(); root != "" {
		s.cgroup = filepath.Join(root, "lcm-tests", id)
	}
	return s
}

// cgroup2Mount returns where the machine has the cgroup v2 hierarchy
// mounted ("" when it has none), to remove the subtree afterwards.
func cgroup2Mount() string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		for i, fl := range fields {
			if fl == "-" && i+1 < len(fields) && fields[i+1] == "cgroup2" && len(fields) > 4 {
				return fields[4]
			}
		}
	}
	return ""
}

func removeCgroupTree(root string) {
	var dirs []string
	_ = filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err == nil && info.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		_ = os.Remove(dirs[i])
	}
}

func (s *Systemd) ctl(args ...string) (string, error) {
	cmd := exec.Command("systemctl", append([]string{"--user", "--no-pager"}, args...)...)
	cmd.Env = s.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Ctl runs systemctl --user with args and returns its output and error.
func (s *Systemd) Ctl(args ...string) (string, error) { return s.ctl(args...) }

// MustCtl runs systemctl --user and fails the test on an error.
func (s *Systemd) MustCtl(args ...string) string {
	s.t.Helper()
	out, err := s.ctl(args...)
	if err != nil {
		s.t.Fatalf("systemctl --user %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// Show returns the unit's properties (systemctl show).
func (s *Systemd) Show(unit string) map[string]string {
	s.t.Helper()
	out := s.MustCtl("show", unit)
	m := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			m[k] = v
		}
	}
	return m
}

// MainPID is the unit's main process (0 when none runs).
func (s *Systemd) MainPID(unit string) int {
	s.t.Helper()
	n, _ := strconv.Atoi(s.Show(unit)["MainPID"])
	return n
}

// SupervisionKeys are the directives a derived unit takes from the real
// one: everything that decides how systemd supervises the program.
var SupervisionKeys = map[string][]string{
	"Unit":    {"StartLimitIntervalSec", "StartLimitBurst"},
	"Service": {"Type", "WatchdogSec", "NotifyAccess", "Restart", "RestartSec", "RestartForceExitStatus", "SuccessExitStatus", "TimeoutStopSec", "KillMode"},
}

// InstallDerived writes the unit name.service for this manager from the
// real unit file at real: its supervision directives (SupervisionKeys)
// verbatim, with execStart as the program, environment as Environment=
// lines and the program's output appended to logPath. Accounts, paths and
// sandboxing of the real unit need a system manager and are left out.
func (s *Systemd) InstallDerived(name, real, execStart string, environment []string, logPath string) {
	s.t.Helper()
	b, err := os.ReadFile(real)
	if err != nil {
		s.t.Fatal(err)
	}
	sec := ""
	got := map[string][]string{}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "["):
			sec = strings.Trim(line, "[]")
		default:
			k, _, _ := strings.Cut(line, "=")
			for _, want := range SupervisionKeys[sec] {
				if k == want {
					got[sec] = append(got[sec], line)
				}
			}
		}
	}
	var u bytes.Buffer
	fmt.Fprintf(&u, "# derived by the tests from %s\n[Unit]\nDescription=test %s\n", real, name)
	for _, l := range got["Unit"] {
		fmt.Fprintln(&u, l)
	}
	fmt.Fprintln(&u, "\n[Service]")
	for _, l := range got["Service"] {
		fmt.Fprintln(&u, l)
	}
	for _, e := range environment {
		fmt.Fprintf(&u, "Environment=%s\n", strconv.Quote(e))
	}
	fmt.Fprintf(&u, "ExecStart=%s\nStandardOutput=append:%s\nStandardError=append:%s\n", execStart, logPath, logPath)
	if err := os.WriteFile(filepath.Join(s.unitDir, name+".service"), u.Bytes(), 0o644); err != nil {
		s.t.Fatal(err)
	}
	s.MustCtl("daemon-reload")
}

// Restarts is the unit's NRestarts.
func (s *Systemd) Restarts(unit string) int {
	s.t.Helper()
	n, err := strconv.Atoi(s.Show(unit)["NRestarts"])
	if err != nil {
		s.t.Fatalf("%s NRestarts: %v", unit, err)
	}
	return n
}

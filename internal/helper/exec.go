package helper

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lcmproject/lcm/internal/version"
)

// Paths on the server.
const (
	HelperPath     = "/usr/local/sbin/lcm-helper"
	ManagementRule = "/etc/sudoers.d/lcm"
	// pendingMarker exists while a switch to restricted mode awaits its
	// proof; the watchdog restores full mode when it is still there after
	// the grace period.
	pendingMarker = "/etc/sudoers.d/.lcm-restrict-pending"
	sshdDir       = "/etc/ssh/sshd_config.d"
	// RestrictGrace is how long a switch to restricted mode may wait for
	// its proof before the watchdog restores full mode: the proof takes
	// about a second; a minute covers a slow link.
	RestrictGrace = 60 * time.Second
)

// Main runs the helper with args (without the program name) and returns
// its exit code: 0 done, 1 the operation failed (its reason on stderr),
// 2 refused (bad invocation).
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cmd, err := Parse(args)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	if cmd.Op != OpVersion && os.Geteuid() != 0 {
		fmt.Fprintln(stderr, "lcm-helper: must run as root (through sudo)")
		return 1
	}
	if err := run(cmd, stdin, stdout, stderr); err != nil {
		fmt.Fprintln(stderr, "lcm-helper: "+err.Error())
		var ue *UsageError
		if errors.As(err, &ue) {
			return 2
		}
		return 1
	}
	return 0
}

func run(c Command, stdin io.Reader, stdout, stderr io.Writer) error {
	switch c.Op {
	case OpVersion:
		fmt.Fprintf(stdout, "lcm-helper %s protocol %s\n", version.Get().Version, Protocol)
		return nil
	case OpSudoMode:
		return sudoMode(c.Arg, stdout, stderr)
	case OpSSHDEffective:
		return runTool(stdout, stderr, nil, "sshd", "-T", "-C", c.Arg)
	case OpSSHDReload:
		return reloadSSHD(stdout, stderr)
	case OpSSHDDump:
		return dumpSSHD(stdout)
	case OpSSHDRead:
		b, err := os.ReadFile(ReadableFiles[c.Arg])
		if errors.Is(err, os.ErrNotExist) {
			fmt.Fprintln(stdout, "absent")
			return nil
		}
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, "present")
		_, err = stdout.Write(b)
		return err
	case OpSSHDDropIn:
		path := filepath.Join(sshdDir, c.Arg)
		if c.Action == "remove" {
			return replaceChecked(path, nil, 0o644, stdout, stderr, sshdCheck)
		}
		content, err := readInput(stdin)
		if err != nil {
			return err
		}
		if err := CheckDropIn(content); err != nil {
			return err
		}
		return replaceChecked(path, []byte(content), 0o644, stdout, stderr, sshdCheck)
	case OpSudoersProf:
		path := "/etc/sudoers.d/lcm-prof-" + c.Arg
		if c.Action == "remove" {
			return replaceChecked(path, nil, 0o440, stdout, stderr, visudoAll)
		}
		content, err := readInput(stdin)
		if err != nil {
			return err
		}
		if err := CheckProfileSudoers(c.Arg, content); err != nil {
			return err
		}
		return writeSudoers(path, content, stdout, stderr)
	case OpLinuxUser:
		return linuxUser(c.Action, c.Arg, stdin, stdout, stderr)
	case OpLinuxUserScan:
		return linuxUserScan(stdout, stderr)
	case OpSSHSocket:
		return sshSocket(c.Action, c.Arg, stdout, stderr)
	case OpAuthKeys:
		return authorizedKeys(c.Action, c.Arg, stdin, stdout)
	case OpFirewalld:
		// The firewalld service, nothing else: a fixed argv, the verb
		// validated by Parse.
		return runTool(stdout, stderr, nil, "systemctl", c.Action, "--now", "firewalld")
	}
	return refuse("unknown subcommand")
}

func readInput(r io.Reader) (string, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxInput+1))
	if err != nil {
		return "", err
	}
	if len(b) > MaxInput {
		return "", refuse("input longer than %d bytes", MaxInput)
	}
	return string(b), nil
}

// lookTool finds name in sudo's secure_path.
func lookTool(name string) (string, bool) {
	for _, d := range SecurePath {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, true
		}
	}
	return "", false
}

func runTool(stdout, stderr io.Writer, stdin io.Reader, name string, args ...string) error {
	p, ok := lookTool(name)
	if !ok {
		return fmt.Errorf("%s not found", name)
	}
	cmd := exec.Command(p, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.Env = []string{"PATH=" + strings.Join(SecurePath, ":"), "LC_ALL=C"}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return nil
}

func sshdCheck(stdout, stderr io.Writer) error { return runTool(stdout, stderr, nil, "sshd", "-t") }
func visudoAll(stdout, stderr io.Writer) error {
	return runTool(io.Discard, stderr, nil, "visudo", "-c")
}

// replaceChecked puts content at path (nil removes it) and runs check;
// when check fails the previous state comes back.
func replaceChecked(path string, content []byte, mode os.FileMode, stdout, stderr io.Writer, check func(io.Writer, io.Writer) error) error {
	prev, prevErr := os.ReadFile(path)
	existed := prevErr == nil
	if prevErr != nil && !errors.Is(prevErr, os.ErrNotExist) {
		return prevErr
	}
	if content == nil {
		if !existed {
			fmt.Fprintf(stdout, "%s is not there\n", path)
			return nil
		}
		if err := os.Remove(path); err != nil {
			return err
		}
	} else if err := atomicWrite(path, content, mode); err != nil {
		return err
	}
	if err := check(stdout, stderr); err != nil {
		if existed {
			_ = atomicWrite(path, prev, mode)
		} else {
			_ = os.Remove(path)
		}
		return fmt.Errorf("the check refused the new %s; the previous version is back (%v)", path, err)
	}
	if content == nil {
		fmt.Fprintf(stdout, "removed %s\n", path)
	} else {
		fmt.Fprintf(stdout, "wrote %s\n", path)
	}
	return nil
}

// atomicWrite writes a dotted temporary file next to path (sshd's *.conf
// and sudo's #includedir both skip it) and renames it into place.
func atomicWrite(path string, content []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".lcm-helper.*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if _, err := f.Write(content); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if err := f.Chown(0, 0); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// writeSudoers validates content with visudo -cf in a temporary file, then
// moves it into place atomically and checks the whole configuration; a
// refusal leaves (or puts back) the previous file.
func writeSudoers(path, content string, stdout, stderr io.Writer) error {
	if cur, err := os.ReadFile(path); err == nil && string(cur) == content {
		if fi, err := os.Stat(path); err == nil && fi.Mode().Perm() == 0o440 {
			fmt.Fprintf(stdout, "%s unchanged\n", path)
			return nil
		}
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".lcm-helper.*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	_, werr := f.WriteString(content)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return werr
	}
	if err := os.Chmod(tmp, 0o440); err != nil {
		return err
	}
	if err := runTool(io.Discard, stderr, nil, "visudo", "-cf", tmp); err != nil {
		return fmt.Errorf("visudo refused the new %s; nothing changed (%v)", path, err)
	}
	return replaceChecked(path, []byte(content), 0o440, stdout, stderr, visudoAll)
}

// sudoMode switches the invoking user's (SUDO_USER) rule.
func sudoMode(mode string, stdout, stderr io.Writer) error {
	user := os.Getenv("SUDO_USER")
	if mode == "status" {
		b, err := os.ReadFile(ManagementRule)
		switch {
		case err != nil:
			fmt.Fprintln(stdout, "none")
		case strings.Contains(string(b), "NOPASSWD: ALL"):
			fmt.Fprintln(stdout, "full")
		default:
			fmt.Fprintln(stdout, "restricted")
		}
		return nil
	}
	if !ValidUser(user) || user == "root" {
		return refuse("sudo-mode must be run through sudo by the management user (SUDO_USER=%q)", truncate(user, 40))
	}
	switch mode {
	case "confirm":
		if err := os.Remove(pendingMarker); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		fmt.Fprintln(stdout, "restricted mode confirmed; the watchdog stands down")
		return nil
	case "full":
		if err := writeSudoers(ManagementRule, FullSudoers(user), stdout, stderr); err != nil {
			return err
		}
		_ = os.Remove(pendingMarker)
		fmt.Fprintf(stdout, "sudo mode full for %s\n", user)
		return nil
	}
	var paths []string
	for _, t := range AllowlistTools {
		if p, ok := lookTool(t); ok {
			paths = append(paths, p)
		}
	}
	paths = append(paths, HelperPath)
	content, err := RestrictedSudoers(user, paths)
	if err != nil {
		return err
	}
	// The watchdog first: if the proof never confirms, full mode returns
	// even when neither LCM nor this helper can be reached any more.
	if err := os.WriteFile(pendingMarker, []byte(strconv.FormatInt(time.Now().Unix(), 10)+"\n"), 0o600); err != nil {
		return err
	}
	if err := startWatchdog(user); err != nil {
		_ = os.Remove(pendingMarker)
		return err
	}
	if err := writeSudoers(ManagementRule, content, stdout, stderr); err != nil {
		_ = os.Remove(pendingMarker)
		return err
	}
	fmt.Fprintf(stdout, "sudo mode restricted for %s; allowed: %s\n", user, strings.Join(paths, " "))
	fmt.Fprintf(stdout, "watchdog: full mode returns in %s unless confirmed\n", RestrictGrace)
	return nil
}

// watchdogScript restores the full rule when the marker outlives the grace
// period. $1 seconds, $2 the rule line.
const watchdogScript = `sleep "$1"
[ -f ` + pendingMarker + ` ] || exit 0
T=$(mktemp /etc/sudoers.d/.lcm-watchdog.XXXXXX)
printf '%s\n' "$2" > "$T"; chmod 0440 "$T"
if visudo -cf "$T" >/dev/null; then mv -f "$T" ` + ManagementRule + `; else rm -f "$T"; fi
rm -f ` + pendingMarker

func startWatchdog(user string) error {
	sh, ok := lookTool("sh")
	if !ok {
		return errors.New("sh not found for the watchdog")
	}
	cmd := exec.Command(sh, "-c", watchdogScript, "lcm-watchdog", strconv.Itoa(int(RestrictGrace/time.Second)), strings.TrimSpace(FullSudoers(user)))
	cmd.Env = []string{"PATH=" + strings.Join(SecurePath, ":")}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer devnull.Close()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, devnull, devnull
	if err := cmd.Start(); err != nil {
		return err
	}
	return cmd.Process.Release()
}

// reloadSSHD: systemd's reload of ssh or sshd, nothing for socket
// activation, else SIGHUP to the pid in sshd's pid file (waiting for the
// re-executed sshd to write it again).
func reloadSSHD(stdout, stderr io.Writer) error {
	if _, err := os.Stat("/run/systemd/system"); err == nil {
		for _, u := range []string{"ssh.service", "sshd.service"} {
			if runTool(io.Discard, io.Discard, nil, "systemctl", "is-active", "--quiet", u) == nil {
				if err := runTool(stdout, stderr, nil, "systemctl", "reload", u); err != nil {
					return err
				}
				fmt.Fprintf(stdout, "%s reloaded\n", u)
				return nil
			}
		}
		if runTool(io.Discard, io.Discard, nil, "systemctl", "is-active", "--quiet", "ssh.socket") == nil {
			fmt.Fprintln(stdout, "ssh.socket: each connection starts sshd with the new configuration")
			return nil
		}
	}
	for i := 0; i < 50; i++ {
		for _, p := range []string{"/run/sshd.pid", "/var/run/sshd.pid"} {
			b, err := os.ReadFile(p)
			if err != nil {
				continue
			}
			pid, err := strconv.Atoi(string(bytes.TrimSpace(b)))
			if err != nil || pid < 2 || syscall.Kill(pid, 0) != nil {
				continue
			}
			if err := syscall.Kill(pid, syscall.SIGHUP); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "sent SIGHUP to sshd (pid %d)\n", pid)
			time.Sleep(200 * time.Millisecond)
			for j := 0; j < 50; j++ {
				if fi, err := os.Stat(p); err == nil && fi.Size() > 0 {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return errors.New("no running sshd found to reload")
}

// dumpSSHD prints the main sshd_config and every file its Include lines
// name, each after a marker line, in the format of sshdcfg.DumpScript.
func dumpSSHD(stdout io.Writer) error {
	const mainPath = "/etc/ssh/sshd_config"
	main, err := os.ReadFile(mainPath)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "==> lcm-file %s <==\n%s\n", mainPath, main)
	for _, line := range strings.Split(string(main), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || !strings.EqualFold(f[0], "include") {
			continue
		}
		for _, pat := range f[1:] {
			if strings.HasPrefix(pat, "#") {
				break
			}
			if !strings.HasPrefix(pat, "/") {
				pat = "/etc/ssh/" + pat
			}
			matches, _ := filepath.Glob(pat)
			for _, m := range matches {
				b, err := os.ReadFile(m)
				if err != nil {
					continue
				}
				fmt.Fprintf(stdout, "==> lcm-file %s <==\n%s\n", m, b)
			}
		}
	}
	return nil
}

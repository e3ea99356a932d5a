package actions

import (
	"context"
	"io"
	"path"
	"strings"

	"github.com/lcmproject/lcm/internal/actions/sshdcfg"
	"github.com/lcmproject/lcm/internal/remote"
)

// sshOps are the root operations of the SSH actions: shell scripts under
// sudo in full mode, lcm-helper subcommands in restricted mode (where the
// management user may run nothing else as root).
type sshOps struct {
	ex        remote.Executor
	out       io.Writer
	viaHelper bool
}

// newSSHOps picks the way by what sudo allows now.
func newSSHOps(ctx context.Context, ex remote.Executor, out io.Writer) (sshOps, error) {
	mode, err := currentSudoMode(ctx, ex, out)
	if err != nil {
		return sshOps{}, err
	}
	o := sshOps{ex: ex, out: out, viaHelper: mode == "restricted"}
	if o.viaHelper {
		io.WriteString(out, "lcm: restricted sudo mode: the sshd files are changed through lcm-helper\n")
	}
	return o, nil
}

func helperCmd(args ...string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = shQuote(a)
	}
	return "sudo -n " + HelperPath + " " + strings.Join(q, " ")
}

// helperName is the helper's name for one of the files LCM touches.
func helperName(p string) string {
	if p == sshdcfg.MainPath {
		return "sshd_config"
	}
	return path.Base(p)
}

func (o sshOps) read(ctx context.Context, p string) (string, bool, error) {
	if !o.viaHelper {
		return readOne(ctx, o.ex, o.out, p)
	}
	raw, code, err := capture(ctx, o.ex, o.out, remote.Command{Cmd: helperCmd("sshd-read", helperName(p))})
	if err != nil {
		return "", false, err
	}
	if code != 0 {
		return "", false, failf("lcm-helper could not read %s (exit code %d)", p, code)
	}
	head, rest, _ := strings.Cut(raw, "\n")
	switch head {
	case "present":
		return rest, true, nil
	case "absent":
		return "", false, nil
	}
	return "", false, failf("reading %s: unexpected output", p)
}

func (o sshOps) put(ctx context.Context, p, content string, exists bool) error {
	if !o.viaHelper {
		return putFile(ctx, o.ex, o.out, p, content, exists)
	}
	if p == sshdcfg.MainPath {
		return failf("in restricted sudo mode LCM does not edit %s (the helper writes only LCM's drop-ins): switch to full mode for fix_main_config", p)
	}
	c := remote.Command{Cmd: helperCmd("sshd-dropin", "remove", helperName(p))}
	if exists {
		c = remote.Command{Cmd: helperCmd("sshd-dropin", "write", helperName(p)), Stdin: strings.NewReader(content)}
	}
	code, err := run(ctx, o.ex, o.out, c)
	if err != nil {
		return err
	}
	if code != 0 {
		return failf("lcm-helper refused or could not write %s (exit code %d; sshd -t checks every change)", p, code)
	}
	return nil
}

func (o sshOps) reload(ctx context.Context) error {
	if !o.viaHelper {
		return reloadSSHD(ctx, o.ex, o.out)
	}
	code, err := run(ctx, o.ex, o.out, remote.Command{Cmd: helperCmd("sshd-reload")})
	if err != nil {
		return err
	}
	if code != 0 {
		return failf("lcm-helper sshd-reload exited with code %d", code)
	}
	return nil
}

// effective is the sshd -T -C command for spec.
func (o sshOps) effective(spec string) remote.Command {
	if o.viaHelper {
		return remote.Command{Cmd: helperCmd("sshd-effective", spec)}
	}
	return remote.Command{Cmd: "PATH=/usr/local/sbin:/usr/sbin:/sbin:$PATH; sshd -T -C " + shQuote(spec), Sudo: true}
}

// dump prints the main file and the files it includes (sshdcfg.ParseDump).
func (o sshOps) dump(ctx context.Context) (string, int, error) {
	if o.viaHelper {
		return capture(ctx, o.ex, o.out, remote.Command{Cmd: helperCmd("sshd-dump")})
	}
	return capture(ctx, o.ex, o.out, remote.Command{Cmd: sshdcfg.DumpScript, Sudo: true})
}

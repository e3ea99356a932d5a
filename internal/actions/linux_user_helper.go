package actions

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/helper"
	"github.com/lcmproject/lcm/internal/remote"
)

// Linux users in restricted sudo mode: the management user may not run a
// shell as root, so the operations go through lcm-helper — "linux-user
// <op> <username>" with the spec (and the password hash) as JSON on stdin,
// and "sudoers-profile write|remove <slug>" for the profile's sudoers
// file. The helper validates everything again and does what Script does.
// The account scan is "linux-user-scan", which prints what scanScript
// prints.

// linuxUserViaHelper probes the sudo mode: false in full mode; true in
// restricted mode when the installed helper speaks this protocol.
func linuxUserViaHelper(ctx context.Context, ex remote.Executor, out io.Writer) (bool, error) {
	return viaHelper(ctx, ex, out, "linux-user", "the account is provisioned through lcm-helper")
}

// viaHelper is the probe of linuxUserViaHelper for subcommand sub; what
// says what the helper does, on out.
func viaHelper(ctx context.Context, ex remote.Executor, out io.Writer, sub, what string) (bool, error) {
	mode, err := currentSudoMode(ctx, ex, io.Discard)
	if err != nil {
		return false, err
	}
	if mode != domain.SudoRestricted {
		return false, nil
	}
	v, code, err := capture(ctx, ex, out, remote.Command{Cmd: helperCmd("version")})
	if err != nil {
		return false, err
	}
	if code != 0 || !strings.HasSuffix(strings.TrimSpace(v), " protocol "+helper.Protocol) {
		return false, failf("the helper on the server (%q) predates %s: switch the server to full sudo mode and back to restricted to install the current one", strings.TrimSpace(v), sub)
	}
	fmt.Fprintln(out, "lcm: restricted sudo mode: "+what)
	return true, nil
}

// helperInput is what the helper reads on stdin for spec.
func helperInput(spec LinuxUserSpec, pwHash string) helper.LinuxUserInput {
	in := helper.LinuxUserInput{FullName: spec.FullName, Shell: spec.Shell, FileAccess: spec.FileAccess, SFTPChroot: spec.SFTPChroot,
		Keys: spec.Keys, Group: spec.Group, ManagedGroups: spec.ManagedGroups, RemoveHome: spec.RemoveHome}
	if spec.HasPassword {
		in.PasswordHash = pwHash
	}
	for _, a := range spec.ACLs {
		in.ACLs = append(in.ACLs, helper.LinuxUserACL{Group: a.Group, Path: a.Path, Perms: a.Perms})
	}
	if spec.Op != LinuxUserApply && spec.Op != LinuxUserEnable {
		// disable and remove need nothing but remove_home.
		in = helper.LinuxUserInput{RemoveHome: spec.RemoveHome}
	}
	return in
}

func runLinuxUserHelper(ctx context.Context, ex remote.Executor, out io.Writer, spec LinuxUserSpec, pwHash string) (Result, error) {
	if spec.Op == LinuxUserKeys {
		// Only LCM's key block: the helper's authorized-keys subcommand,
		// the keys one per line on stdin.
		keys := append([]string(nil), spec.Keys...)
		sort.Strings(keys)
		stdin := strings.Join(keys, "\n")
		if stdin != "" {
			stdin += "\n"
		}
		code, err := run(ctx, ex, out, remote.Command{Cmd: helperCmd("authorized-keys", "write", spec.Username), Stdin: strings.NewReader(stdin)})
		if err != nil {
			return Result{}, err
		}
		if code != 0 {
			return Result{ExitCode: code}, failf("the keys of Linux user %s through lcm-helper failed with exit code %d", spec.Username, code)
		}
		return Result{Message: fmt.Sprintf("keys %s: done", spec.Username)}, nil
	}
	in, err := json.Marshal(helperInput(spec, pwHash))
	if err != nil {
		return Result{}, err
	}
	code, err := run(ctx, ex, out, remote.Command{Cmd: helperCmd("linux-user", spec.Op, spec.Username), Stdin: bytes.NewReader(in)})
	if err != nil {
		return Result{}, err
	}
	if code != 0 {
		return Result{ExitCode: code}, failf("%s of Linux user %s through lcm-helper failed with exit code %d", spec.Op, spec.Username, code)
	}
	if s := spec.Sudoers; s != nil && (spec.Op == LinuxUserApply || spec.Op == LinuxUserEnable) {
		slug := strings.TrimPrefix(s.Path, "/etc/sudoers.d/lcm-prof-")
		// A profile without command or edit rules grants nothing: no file
		// (the helper writes only files with rules).
		c := remote.Command{Cmd: helperCmd("sudoers-profile", "remove", slug)}
		if sudoersHasRule(s.Content) {
			c = remote.Command{Cmd: helperCmd("sudoers-profile", "write", slug), Stdin: strings.NewReader(s.Content)}
		}
		code, err := run(ctx, ex, out, c)
		if err != nil {
			return Result{}, err
		}
		if code != 0 {
			return Result{ExitCode: code}, failf("lcm-helper refused the sudoers file of profile %s (exit code %d)", slug, code)
		}
	}
	return Result{Message: fmt.Sprintf("%s %s: done", spec.Op, spec.Username)}, nil
}

func sudoersHasRule(content string) bool {
	for _, l := range strings.Split(content, "\n") {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
			return true
		}
	}
	return false
}

package actions

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/lcmproject/lcm/internal/credbox"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/remote"
)

// sudoersPath is the management user's sudo rule. The file name has no dot:
// sudo's #includedir skips names with a dot, which is why the rule is
// written to a dotted temp file first and validated before it is renamed.
const sudoersPath = "/etc/sudoers.d/lcm"

// keyComment marks LCM's keys in authorized_keys.
const keyComment = "lcm-management"

// Join onboards a server with the bootstrap credentials: it creates the
// management user, installs the server's own key, grants sudo through a
// rule validated with `visudo -cf` before it is moved into place, reads the
// rule back, and then proves the result by logging in with the NEW key as
// the new user and running `sudo -n true`. If the proof fails, the rule and
// key are removed again and the job fails.
type Join struct{}

// joinScript runs as root (directly, or through the bootstrap user's sudo).
// $1 is the management user, $2 the public key line.
const joinScript = `set -eu
U="$1"; KEY="$2"
if ! id "$U" >/dev/null 2>&1; then
  useradd --create-home --shell /bin/sh "$U"
  # useradd locks the password ("!"); sshd without PAM refuses locked
  # accounts even for keys. "*" means: no password login, keys work.
  usermod -p '*' "$U"
  echo "lcm: created user $U"
else
  echo "lcm: user $U exists"
fi
H=$(getent passwd "$U" | cut -d: -f6)
G=$(id -gn "$U")
install -d -m 700 -o "$U" -g "$G" "$H/.ssh"
AK="$H/.ssh/authorized_keys"
touch "$AK"; chown "$U:$G" "$AK"; chmod 600 "$AK"
grep -qxF "$KEY" "$AK" || printf '%s\n' "$KEY" >> "$AK"
echo "lcm: key installed in $AK"
T=$(mktemp /etc/sudoers.d/.lcm.XXXXXX)
printf '%s ALL=(ALL:ALL) NOPASSWD: ALL\n' "$U" > "$T"
chmod 0440 "$T"
if ! visudo -cf "$T"; then rm -f "$T"; echo "lcm: sudo rule failed visudo validation; nothing installed" >&2; exit 3; fi
mv -f "$T" ` + sudoersPath + `
if ! visudo -c >/dev/null; then rm -f ` + sudoersPath + `; echo "lcm: sudoers invalid with the new rule; rule removed" >&2; exit 4; fi
echo "lcm: ` + sudoersPath + ` now reads:"; cat ` + sudoersPath

// rollbackScript undoes joinScript's grants ($1 user, $2 key line).
const rollbackScript = `U="$1"; KEY="$2"
rm -f ` + sudoersPath + `
H=$(getent passwd "$U" | cut -d: -f6) && [ -f "$H/.ssh/authorized_keys" ] && {
  grep -vxF "$KEY" "$H/.ssh/authorized_keys" > "$H/.ssh/authorized_keys.lcm-tmp" || true
  cat "$H/.ssh/authorized_keys.lcm-tmp" > "$H/.ssh/authorized_keys"; rm -f "$H/.ssh/authorized_keys.lcm-tmp"; }
echo "lcm: rolled back sudo rule and key"`

// asRoot returns the command running script as root with the bootstrap
// credentials: directly for root, through `sudo -S` with the password on
// stdin when sudo asks for one, else `sudo -n`. The script travels as an
// argument so a sudo that asks for no password never feeds the password to
// a shell.
func asRoot(c credbox.Credentials, script string, args ...string) remote.Command {
	line := "sh -c " + shQuote(script) + " lcm-join"
	for _, a := range args {
		line += " " + shQuote(a)
	}
	switch {
	case c.User == "root":
		return remote.Command{Cmd: line}
	case c.SudoPassword != "":
		return remote.Command{Cmd: "sudo -S -p '' " + line, Stdin: strings.NewReader(c.SudoPassword + "\n")}
	default:
		return remote.Command{Cmd: "sudo -n " + line}
	}
}

// Run implements Action.
func (Join) Run(ctx context.Context, env *Env) (Result, error) {
	if env.Creds.NewPrivateKey == "" {
		return Result{}, failf("join without a generated management key")
	}
	pub, err := AuthorizedKeyOf(env.Creds.NewPrivateKey, keyComment)
	if err != nil {
		return Result{}, err
	}
	fmt.Fprintf(env.Out, "lcm: joining as %s, creating management user %s\n", env.Creds.User, domain.ManagementUser)
	code, err := run(ctx, env.Exec, env.Out, asRoot(env.Creds, joinScript, domain.ManagementUser, pub))
	if err != nil {
		return Result{}, err
	}
	if code != 0 {
		return Result{ExitCode: code}, failf("onboarding script failed with exit code %d (see the output)", code)
	}
	f, perr := proveManagementAccess(ctx, env, env.Creds.NewPrivateKey)
	if perr != nil {
		fmt.Fprintf(env.Out, "lcm: proof failed: %v; rolling back\n", perr)
		rcode, rerr := run(ctx, env.Exec, env.Out, asRoot(env.Creds, rollbackScript, domain.ManagementUser, pub))
		if rerr != nil || rcode != 0 {
			return Result{}, failf("join could not be proven (%v) and the rollback failed (exit %d, %v)", perr, rcode, rerr)
		}
		return Result{}, failf("join could not be proven, rolled back: %v", perr)
	}
	fmt.Fprintln(env.Out, "lcm: proven: new key logs in as lcm and sudo -n works")
	return Result{Facts: f, Message: "joined"}, nil
}

// proveManagementAccess logs in with key as the management user on a new
// connection, checks the account, passwordless sudo and the sudo rule, and
// collects the facts.
func proveManagementAccess(ctx context.Context, env *Env, key string) (*ServerFacts, error) {
	return proveAccess(ctx, env, key, true)
}

// proveAccess is proveManagementAccess; without checkRule (a key rotation)
// sudo may also be restricted: the helper through sudo proves it then.
func proveAccess(ctx context.Context, env *Env, key string, checkRule bool) (*ServerFacts, error) {
	ex, err := env.Dial(ctx, domain.ManagementUser, key)
	if err != nil {
		return nil, fmt.Errorf("login with the new key: %w", err)
	}
	defer ex.Close()
	if !checkRule {
		who, code, err := capture(ctx, ex, env.Out, remote.Command{Cmd: "id -un && { sudo -n true 2>/dev/null || sudo -n " + HelperPath + " version >/dev/null; }"})
		if err != nil {
			return nil, err
		}
		if code != 0 || strings.TrimSpace(who) != domain.ManagementUser {
			return nil, fmt.Errorf("as %q: sudo (full or through the helper) failed with exit code %d", strings.TrimSpace(who), code)
		}
		return collectFacts(ctx, ex, env.Out)
	}
	out, code, err := capture(ctx, ex, env.Out, remote.Command{Cmd: "id -un && sudo -n true && sudo -n cat " + sudoersPath})
	if err != nil {
		return nil, err
	}
	lines := strings.SplitN(out, "\n", 2)
	if code != 0 {
		return nil, fmt.Errorf("sudo -n as %s failed with exit code %d", domain.ManagementUser, code)
	}
	if strings.TrimSpace(lines[0]) != domain.ManagementUser {
		return nil, fmt.Errorf("logged in as %q instead of %q", strings.TrimSpace(lines[0]), domain.ManagementUser)
	}
	if len(lines) < 2 || !strings.Contains(lines[1], domain.ManagementUser+" ALL=(ALL:ALL) NOPASSWD: ALL") {
		return nil, errors.New("the sudo rule read back does not match what was written")
	}
	return collectFacts(ctx, ex, env.Out)
}

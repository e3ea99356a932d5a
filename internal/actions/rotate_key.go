package actions

import (
	"context"
	"fmt"

	"github.com/lcmproject/lcm/internal/remote"
)

// RotateKey replaces the management key: the new key is added, proven (a
// new login with it runs `sudo -n true`) and only then is the old key
// removed — through the new login, and read back. A failed proof removes
// the new key again and leaves the old one working.
type RotateKey struct{}

const addKeyScript = `AK="$HOME/.ssh/authorized_keys"; grep -qxF "$1" "$AK" || printf '%s\n' "$1" >> "$AK"; echo "lcm: new key added"`

// removeKeyScript removes line $1 in place (keeping owner and mode) and
// fails if it is still there.
const removeKeyScript = `AK="$HOME/.ssh/authorized_keys"; T="$AK.lcm-tmp"
grep -vxF "$1" "$AK" > "$T" || true; cat "$T" > "$AK"; rm -f "$T"
if grep -qxF "$1" "$AK"; then echo "lcm: key still present" >&2; exit 1; fi; echo "lcm: key removed"`

// Run implements Action.
func (RotateKey) Run(ctx context.Context, env *Env) (Result, error) {
	if env.Creds.NewPrivateKey == "" || env.Creds.PrivateKey == "" {
		return Result{}, failf("rotation needs the current and the new key")
	}
	oldPub, err := AuthorizedKeyOf(env.Creds.PrivateKey, keyComment)
	if err != nil {
		return Result{}, err
	}
	newPub, err := AuthorizedKeyOf(env.Creds.NewPrivateKey, keyComment)
	if err != nil {
		return Result{}, err
	}
	code, err := run(ctx, env.Exec, env.Out, remote.Command{Cmd: "sh -c " + shQuote(addKeyScript) + " lcm " + shQuote(newPub)})
	if err != nil {
		return Result{}, err
	}
	if code != 0 {
		return Result{ExitCode: code}, failf("adding the new key failed with exit code %d", code)
	}
	if _, perr := proveAccess(ctx, env, env.Creds.NewPrivateKey, false); perr != nil {
		fmt.Fprintf(env.Out, "lcm: new key not proven: %v; removing it\n", perr)
		_, _ = run(ctx, env.Exec, env.Out, remote.Command{Cmd: "sh -c " + shQuote(removeKeyScript) + " lcm " + shQuote(newPub)})
		return Result{}, failf("the new key could not be proven; the old key stays: %v", perr)
	}
	ex, err := env.Dial(ctx, "lcm", env.Creds.NewPrivateKey)
	if err != nil {
		return Result{}, err
	}
	defer ex.Close()
	code, err = run(ctx, ex, env.Out, remote.Command{Cmd: "sh -c " + shQuote(removeKeyScript) + " lcm " + shQuote(oldPub)})
	if err != nil {
		return Result{}, err
	}
	if code != 0 {
		return Result{ExitCode: code}, failf("the old key could not be removed (exit code %d); both keys work", code)
	}
	return Result{Message: "key rotated"}, nil
}

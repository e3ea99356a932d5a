package actions

import (
	"context"
	"fmt"

	"github.com/lcmproject/lcm/internal/remote"
)

// Decommission removes LCM's access from a server: the sudo rule and the
// helper first (needs sudo), then the management key. It is best effort — a server that
// is gone must still be removable — so failures are reported in the output
// and the job succeeds.
type Decommission struct{}

// Run implements Action.
func (Decommission) Run(ctx context.Context, env *Env) (Result, error) {
	// In restricted sudo mode the helper first gives full sudo back, so
	// the rule and the helper itself can go.
	code, err := run(ctx, env.Exec, env.Out, remote.Command{
		Cmd: "{ sudo -n true 2>/dev/null || sudo -n " + HelperPath + " sudo-mode full >/dev/null; }; sudo -n rm -f " + sudoersPath + " " + HelperPath +
			"; rm -f \"$HOME/.ssh/authorized_keys\" && echo 'lcm: access removed'"})
	if err != nil {
		fmt.Fprintf(env.Out, "lcm: could not reach the server to remove access: %v\n", err)
		return Result{Message: "server unreachable; access not removed"}, nil
	}
	if code != 0 {
		fmt.Fprintf(env.Out, "lcm: removing access exited with code %d\n", code)
		return Result{ExitCode: code, Message: "access removal incomplete"}, nil
	}
	return Result{Message: "access removed"}, nil
}

package actions

import (
	"context"
	"fmt"

	"github.com/lcmproject/lcm/internal/remote"
)

// Decommission removes LCM's access from a server: the sudo rule first
// (needs sudo), then the management key. It is best effort — a server that
// is gone must still be removable — so failures are reported in the output
// and the job succeeds.
type Decommission struct{}

// Run implements Action.
func (Decommission) Run(ctx context.Context, env *Env) (Result, error) {
	code, err := run(ctx, env.Exec, env.Out, remote.Command{
		Cmd: "sudo -n rm -f " + sudoersPath + "; rm -f \"$HOME/.ssh/authorized_keys\" && echo 'lcm: access removed'"})
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

package actions

import (
	"context"
	"fmt"
	"strings"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/remote"
)

// Connectivity proves the management access works: it logs in, checks the
// account and passwordless sudo (full, or the helper in restricted mode),
// and refreshes the basic facts.
type Connectivity struct{}

// Run implements Action.
func (Connectivity) Run(ctx context.Context, env *Env) (Result, error) {
	who, code, err := capture(ctx, env.Exec, env.Out, remote.Command{Cmd: "id -un && { sudo -n true 2>/dev/null || sudo -n " + HelperPath + " version >/dev/null; }"})
	if err != nil {
		return Result{}, err
	}
	who = strings.TrimSpace(who)
	fmt.Fprintf(env.Out, "lcm: logged in as %s\n", who)
	if code != 0 {
		return Result{ExitCode: code}, failf("passwordless sudo for %s does not work (exit code %d)", who, code)
	}
	if env.Creds.User == domain.ManagementUser && who != domain.ManagementUser {
		return Result{ExitCode: code}, failf("logged in as %q, expected %q", who, domain.ManagementUser)
	}
	f, err := collectFacts(ctx, env.Exec, env.Out)
	if err != nil {
		return Result{}, err
	}
	return Result{Facts: f, Message: "reachable"}, nil
}

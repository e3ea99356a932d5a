package actions

import (
	"context"
	"errors"
	"fmt"

	"github.com/lcmproject/lcm/internal/pkgmgr"
	"github.com/lcmproject/lcm/internal/remote"
)

// UpgradeSecurity installs security updates only: apt upgrades exactly the
// packages whose candidate comes from a security suite, dnf uses
// --security, zypper installs patches of category security (pkgmgr builds
// the commands). pacman and apk have no security channel: the job fails
// with pkgmgr's documented answer and changes nothing. The package lists
// are refreshed first: with stale lists the security suite's newest
// releases are unknown and the upgrade would install nothing, or too
// little, while reporting success. A failed refresh fails the job with
// the package manager's message.
type UpgradeSecurity struct{}

// Run implements Action.
func (UpgradeSecurity) Run(ctx context.Context, env *Env) (Result, error) {
	m, err := jobManager(ctx, env.Exec, pkgmgr.Family(env.Creds.PackageFamily))
	if err != nil {
		return Result{}, err
	}
	cmd, err := m.UpgradeSecurity()
	if err != nil {
		var ue *pkgmgr.UnsupportedError
		if errors.As(err, &ue) {
			return Result{}, failf("%s", ue.Answer)
		}
		return Result{}, failf("%v", err)
	}
	fmt.Fprintf(env.Out, "lcm: security upgrade with %s\n", m.Name())
	if code, err := prepareLists(ctx, env.Exec, env.Out, m, PkgUpgradeSecurity); err != nil {
		return Result{ExitCode: code}, err
	}
	code, err := run(ctx, env.Exec, env.Out, remote.Command{Cmd: cmd, Timeout: upgradeTimeout, IdleTimeout: upgradeIdle})
	if err != nil {
		return Result{}, err
	}
	if code != 0 {
		return Result{ExitCode: code}, failf("%s exited with code %d", m.Name(), code)
	}
	return Result{Message: "security updates installed"}, nil
}

// RunData implements DataAction: the upgrade, then an inventory refresh
// ("after every package change the inventory is refreshed"), in one
// session (runChange). The job is the upgrade: when it succeeded but the
// closing refresh fails, the job still succeeds (the output says so) and
// the inventory catches up with the next refresh.
func (u UpgradeSecurity) RunData(ctx context.Context, env *Env) (Result, []byte, error) {
	const msg = "security updates installed"
	m, err := jobManager(ctx, env.Exec, pkgmgr.Family(env.Creds.PackageFamily))
	if err != nil {
		return refreshAfter(ctx, env, Result{}, err, msg)
	}
	cmd, err := m.UpgradeSecurity()
	if err != nil {
		var ue *pkgmgr.UnsupportedError
		if errors.As(err, &ue) {
			return runChange(ctx, env, m, change{}, failf("%s", ue.Answer), msg, true)
		}
		return runChange(ctx, env, m, change{}, failf("%v", err), msg, true)
	}
	fmt.Fprintf(env.Out, "lcm: security upgrade with %s\n", m.Name())
	return runChange(ctx, env, m, change{refresh: true, cmd: cmd,
		failed: func(code int) error { return failf("%s exited with code %d", m.Name(), code) }}, nil, msg, true)
}

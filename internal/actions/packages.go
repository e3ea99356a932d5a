package actions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/pkgmgr"
	"github.com/lcmproject/lcm/internal/remote"
)

// PkgAction names a package action.
type PkgAction string

// Package actions; names are the job params' "action" values.
const (
	PkgRefreshLists    PkgAction = "refresh-lists"
	PkgUpgradeAll      PkgAction = "upgrade-all"
	PkgUpgradeSecurity PkgAction = "upgrade-security"
	PkgUpdate          PkgAction = "update"
	PkgRemove          PkgAction = "remove"
	PkgAutoremove      PkgAction = "autoremove"
	PkgKernelCleanup   PkgAction = "kernel-cleanup"
	PkgHold            PkgAction = "hold"
	PkgUnhold          PkgAction = "unhold"
)

// PkgActions lists every action.
var PkgActions = []PkgAction{PkgRefreshLists, PkgUpgradeAll, PkgUpgradeSecurity, PkgUpdate, PkgRemove, PkgAutoremove, PkgKernelCleanup, PkgHold, PkgUnhold}

// NeedsNames reports whether the action takes package names.
func (a PkgAction) NeedsNames() bool {
	return a == PkgUpdate || a == PkgRemove || a == PkgHold || a == PkgUnhold
}

// Valid reports whether a is a known action.
func (a PkgAction) Valid() bool {
	for _, x := range PkgActions {
		if x == a {
			return true
		}
	}
	return false
}

// PackageCommand builds the command of an action for a family. Bad names
// wrap domain.ErrInvalid; actions a family cannot do return pkgmgr's
// *UnsupportedError.
func PackageCommand(m pkgmgr.Manager, action PkgAction, names []string) (string, error) {
	if action.NeedsNames() && len(names) == 0 {
		return "", domain.Invalid("names_required", fmt.Sprintf("%s needs at least one package name", action))
	}
	switch action {
	case PkgRefreshLists:
		return m.RefreshLists(), nil
	case PkgUpgradeAll:
		return m.UpgradeAll(), nil
	case PkgUpgradeSecurity:
		return m.UpgradeSecurity()
	case PkgUpdate:
		return m.Update(names...)
	case PkgRemove:
		return m.Remove(names...)
	case PkgAutoremove:
		return m.Autoremove()
	case PkgKernelCleanup:
		return m.KernelCleanup()
	case PkgHold:
		return m.Hold(names...)
	case PkgUnhold:
		return m.Unhold(names...)
	}
	return "", domain.Invalid("unknown_action", fmt.Sprintf("unknown package action %q", action))
}

// PackageAction runs one package action with the family's manager and
// returns the command's exit code (0 on success; a non-zero code is an
// error naming the manager).
func PackageAction(ctx context.Context, ex remote.Executor, family pkgmgr.Family, action PkgAction, names []string, out io.Writer) (int, error) {
	m, err := pkgmgr.New(family)
	if err != nil {
		return 0, failf("%v", err)
	}
	cmd, err := PackageCommand(m, action, names)
	if err != nil {
		var ue *pkgmgr.UnsupportedError
		if errors.As(err, &ue) {
			return 0, failf("%s", ue.Answer)
		}
		return 0, failf("%v", err)
	}
	fmt.Fprintf(out, "lcm: %s with %s\n", action, m.Name())
	code, err := run(ctx, ex, out, remote.Command{Cmd: cmd, Timeout: upgradeTimeout, IdleTimeout: upgradeIdle})
	if err != nil {
		return code, err
	}
	if code != 0 {
		return code, failf("%s %s exited with code %d", m.Name(), action, code)
	}
	return 0, nil
}

// PackageParams are the params of a package-action job.
type PackageParams struct {
	Action PkgAction `json:"action"`
	Names  []string  `json:"names,omitempty"`
}

// PackageJob runs a package action and then refreshes the inventory, so
// the stored packages always reflect the change (also after a failed
// action, which may have changed some packages).
type PackageJob struct{}

// Run implements Action.
func (j PackageJob) Run(ctx context.Context, env *Env) (Result, error) {
	r, _, err := j.RunData(ctx, env)
	return r, err
}

// RunData implements DataAction.
func (PackageJob) RunData(ctx context.Context, env *Env) (Result, []byte, error) {
	var p PackageParams
	if err := json.Unmarshal(env.Params, &p); err != nil || !p.Action.Valid() {
		return Result{}, nil, failf("invalid package action parameters")
	}
	fam := pkgmgr.Family(env.Creds.PackageFamily)
	if fam == "" {
		fam = pkgmgr.FamilyAPT
	}
	code, actErr := PackageAction(ctx, env.Exec, fam, p.Action, p.Names, env.Out)
	return refreshAfter(ctx, env, Result{ExitCode: code}, actErr, string(p.Action)+" done")
}

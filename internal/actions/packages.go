package actions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

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

// detectManagerCmd prints the first package manager the server has, in
// the facts collector's order (apt-get, dnf, yum, zypper, pacman, apk).
const detectManagerCmd = `for m in apt-get dnf yum zypper pacman apk; do if command -v "$m" >/dev/null 2>&1; then echo "$m"; exit 0; fi; done`

// jobManager picks the manager a package job drives: the server's recorded
// family, checked on the server where the family alone does not tell —
// a dnf-family host with only yum (EL7) gets yum, and a server whose
// family was never recorded gets the manager it has, never a guess.
func jobManager(ctx context.Context, ex remote.Executor, family pkgmgr.Family) (pkgmgr.Manager, error) {
	if family != "" && family != pkgmgr.FamilyDNF {
		m, err := pkgmgr.New(family)
		if err != nil {
			return nil, failf("%v", err)
		}
		return m, nil
	}
	raw, code, err := capture(ctx, ex, io.Discard, remote.Command{Cmd: detectManagerCmd, Timeout: 30 * time.Second})
	if err != nil {
		return nil, err
	}
	bin := strings.TrimSpace(raw)
	detected, ok := pkgmgr.FamilyOfBinary(bin)
	switch {
	case code == 0 && ok && (family == "" || family == detected):
		return managerFor(detected, bin)
	case family != "":
		return managerFor(family, "")
	}
	return nil, failf("no supported package manager found on the server (apt-get, dnf, yum, zypper, pacman, apk)")
}

// PackageAction runs one package action with the family's manager (see
// jobManager) and returns the command's exit code (0 on success; a
// non-zero code is an error naming the manager). Actions that decide what
// to install (upgrade-all, upgrade-security, update) first bring the
// package lists up to date (prepareLists); refresh-lists is that step
// alone. A failed list refresh fails the action before anything changes.
func PackageAction(ctx context.Context, ex remote.Executor, family pkgmgr.Family, action PkgAction, names []string, out io.Writer) (int, error) {
	m, err := jobManager(ctx, ex, family)
	if err != nil {
		return 0, err
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
	if action == PkgRefreshLists {
		return RefreshLists(ctx, ex, out, m)
	}
	if action.installs() {
		if code, err := prepareLists(ctx, ex, out, m, action); err != nil {
			return code, err
		}
	}
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

// RunData implements DataAction: the action and the inventory refresh
// after it in one session (runChange).
func (PackageJob) RunData(ctx context.Context, env *Env) (Result, []byte, error) {
	var p PackageParams
	if err := json.Unmarshal(env.Params, &p); err != nil || !p.Action.Valid() {
		return Result{}, nil, failf("invalid package action parameters")
	}
	msg := string(p.Action) + " done"
	m, err := jobManager(ctx, env.Exec, pkgmgr.Family(env.Creds.PackageFamily))
	if err != nil {
		return refreshAfter(ctx, env, Result{}, err, msg)
	}
	cmd, err := PackageCommand(m, p.Action, p.Names)
	if err != nil {
		var ue *pkgmgr.UnsupportedError
		if errors.As(err, &ue) {
			return runChange(ctx, env, m, change{}, failf("%s", ue.Answer), msg, false)
		}
		return runChange(ctx, env, m, change{}, failf("%v", err), msg, false)
	}
	fmt.Fprintf(env.Out, "lcm: %s with %s\n", p.Action, m.Name())
	ch := change{cmd: cmd, failed: func(code int) error { return failf("%s %s exited with code %d", m.Name(), p.Action, code) }}
	switch {
	case p.Action == PkgRefreshLists:
		ch = change{refresh: true}
	case m.Family() == pkgmgr.FamilyPacman && p.Action == PkgUpgradeAll:
		ch.ageOnly = true
	case p.Action.installs():
		ch.refresh = true
	}
	return runChange(ctx, env, m, ch, nil, msg, false)
}

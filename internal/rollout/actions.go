package rollout

import (
	"errors"
	"sort"
	"sync"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/pkgmgr"
	"github.com/lcmproject/lcm/internal/store"
)

// Built-in rollout actions.
const (
	ActionSecurityUpdates  = "security-updates"
	ActionAllUpdates       = "all-updates"
	ActionRebootIfRequired = "reboot-if-required"
)

// Action is what a rollout runs on each server. The set is open: a
// feature adds its own with RegisterAction (custom actions register one
// per action, named "custom:<id>"), and a rollout is validated against
// what is registered when it is created.
type Action struct {
	Name  string
	Label string
	Kind  domain.JobKind
	// Params are the job's params (nil: none).
	Params any
	// Skip says why a server needs nothing ("" = run it); nil runs it
	// everywhere.
	Skip func(t store.RolloutPlanTarget) string
	// Unsupported says why the server cannot run it ("" = it can).
	Unsupported func(t store.RolloutPlanTarget) string
	// Reboots: the job reboots the server; the rollout waits for it to
	// come back and for a refresh to pass before the item counts as done.
	Reboots bool
	// Moves filters the outdated packages the action would upgrade (for
	// the dry run); nil: none move.
	Moves func(o store.OutdatedRecord) bool
	// Blocked is the job kind's restricted-mode rule (reboot and custom
	// actions need full sudo).
	Blocked bool
	// RequiresApproval: a rollout of this action always waits for a
	// second person's approval (a custom action that requires approval).
	RequiresApproval bool
}

// CustomPrefix names a custom action as a rollout action: custom:<id>.
const CustomPrefix = "custom:"

// customAction is the rollout action running custom action p (its
// commands as frozen in p).
func customAction(p actions.CustomParams, requiresApproval bool) Action {
	return Action{Name: CustomPrefix + p.ActionID, Label: "Custom action: " + p.Name, Kind: domain.JobCustomAction, Params: p,
		Blocked: true, RequiresApproval: requiresApproval}
}

type registry struct {
	mu sync.RWMutex
	m  map[string]Action
}

func (r *registry) add(a Action) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m[a.Name] = a
}

func (r *registry) get(name string) (Action, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	a, ok := r.m[name]
	return a, ok
}

func (r *registry) names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.m))
	for n := range r.m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func builtinActions() []Action {
	return []Action{
		{Name: ActionSecurityUpdates, Label: "Security updates", Kind: domain.JobUpgradeSecurity,
			Unsupported: func(t store.RolloutPlanTarget) string { return unsupported(t, actions.PkgUpgradeSecurity) },
			Moves:       func(o store.OutdatedRecord) bool { return o.Security && !o.Held }},
		{Name: ActionAllUpdates, Label: "All updates", Kind: domain.JobPackageAction,
			Params:      actions.PackageParams{Action: actions.PkgUpgradeAll},
			Unsupported: func(t store.RolloutPlanTarget) string { return unsupported(t, actions.PkgUpgradeAll) },
			Moves:       func(o store.OutdatedRecord) bool { return !o.Held }},
		{Name: ActionRebootIfRequired, Label: "Reboot if required", Kind: domain.JobReboot, Reboots: true, Blocked: true,
			Skip: func(t store.RolloutPlanTarget) string {
				if !t.RebootRequired {
					return "no reboot required (last refresh)"
				}
				return ""
			}},
	}
}

// unsupported says why a server's package manager cannot do act ("" when
// it can, or when the family is not recorded yet: the worker detects it).
func unsupported(t store.RolloutPlanTarget, act actions.PkgAction) string {
	if t.PackageFamily == "" {
		return ""
	}
	m, err := pkgmgr.New(pkgmgr.Family(t.PackageFamily))
	if err != nil {
		return err.Error()
	}
	if _, err := actions.PackageCommand(m, act, nil); err != nil {
		var ue *pkgmgr.UnsupportedError
		if errors.As(err, &ue) {
			return ue.Answer
		}
		return err.Error()
	}
	return ""
}

package actions

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/lcmproject/lcm/internal/remote"
)

// CustomParams are the params of a custom-action job: the action's name
// and its command list as it was when the job was submitted (a later edit
// does not change a job that already ran).
type CustomParams struct {
	ActionID string   `json:"action_id,omitempty"`
	Name     string   `json:"name"`
	Commands []string `json:"commands"`
}

// ScriptParams are the params of a script job.
type ScriptParams struct {
	Script string `json:"script"`
}

// CustomActionJob runs a custom action's commands as root, in order,
// stopping at the first that fails (its exit code is the job's).
type CustomActionJob struct{}

// Run implements Action.
func (CustomActionJob) Run(ctx context.Context, env *Env) (Result, error) {
	var p CustomParams
	if err := json.Unmarshal(env.Params, &p); err != nil || len(p.Commands) == 0 {
		return Result{}, failf("custom action: no commands in the job's params")
	}
	for i, c := range p.Commands {
		fmt.Fprintf(env.Out, "lcm: [%d/%d] # %s\n", i+1, len(p.Commands), c)
		code, err := run(ctx, env.Exec, env.Out, remote.Command{Cmd: c, Sudo: true, Timeout: upgradeTimeout, IdleTimeout: upgradeIdle})
		if err != nil {
			return Result{ExitCode: code}, err
		}
		if code != 0 {
			return Result{ExitCode: code}, failf("command %d of %q exited with code %d", i+1, p.Name, code)
		}
	}
	return Result{Message: fmt.Sprintf("custom action %q: %d commands succeeded", p.Name, len(p.Commands))}, nil
}

// ScriptJob runs a free-form shell script as root (sh -e, from stdin).
type ScriptJob struct{}

// Run implements Action.
func (ScriptJob) Run(ctx context.Context, env *Env) (Result, error) {
	var p ScriptParams
	if err := json.Unmarshal(env.Params, &p); err != nil || strings.TrimSpace(p.Script) == "" {
		return Result{}, failf("script: the job's params hold no script")
	}
	code, err := run(ctx, env.Exec, env.Out, remote.Command{Cmd: "sh -es", Stdin: strings.NewReader(p.Script), Sudo: true,
		Timeout: upgradeTimeout, IdleTimeout: upgradeIdle})
	if err != nil {
		return Result{ExitCode: code}, err
	}
	if code != 0 {
		return Result{ExitCode: code}, failf("script exited with code %d", code)
	}
	return Result{Message: "script succeeded"}, nil
}

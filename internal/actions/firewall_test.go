package actions

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/firewall"
	"github.com/lcmproject/lcm/internal/remote"
)

// scriptedExec answers each command line with a fixed stdout and exit
// code (unknown commands: exit 0, no output) and records what ran.
type scriptedExec struct {
	mu      sync.Mutex
	answers map[string]scripted
	ran     []string
}

type scripted struct {
	stdout string
	code   int
}

func (e *scriptedExec) Run(_ context.Context, c remote.Command) (remote.Result, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ran = append(e.ran, c.Cmd)
	a := e.answers[c.Cmd]
	if c.Stdout != nil {
		io.WriteString(c.Stdout, a.stdout)
	}
	return remote.Result{ExitCode: a.code}, nil
}

func (e *scriptedExec) Close() error { return nil }

// TestFirewalldSystemctlInRestrictedMode: starting and stopping firewalld
// needs systemctl, which restricted mode's allowlist does not hold; there
// lcm-helper's "firewalld enable|disable" does it, and a failing helper
// (an older one without the subcommand) is explained, not a bare exit code.
func TestFirewalldSystemctlInRestrictedMode(t *testing.T) {
	for _, tc := range []struct {
		name      string
		sudoTrue  int // exit code of "sudo -n true": 1 = restricted
		helper    int // exit code of the helper's firewalld subcommand
		op        string
		running   string
		wantErr   string // "" = success
		wantHelpr bool   // the helper was asked
	}{
		{"disable, restricted, helper works", 1, 0, domain.FirewallDisable, "running", "", true},
		{"disable, restricted, older helper", 1, 2, domain.FirewallDisable, "running", "restricted sudo mode allows firewall-cmd but not systemctl", true},
		{"disable, full, systemctl fails", 0, 0, domain.FirewallDisable, "running", "systemctl disable --now firewalld exited with code 1", false},
		{"enable, restricted, older helper", 1, 2, domain.FirewallEnable, "not running", "restricted sudo mode allows firewall-cmd but not systemctl", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex := &scriptedExec{answers: map[string]scripted{
				firewall.DetectScript:                               {stdout: "firewalld\n"},
				"sudo -n 'firewall-cmd' '--state'":                  {stdout: tc.running + "\n"},
				"sudo -n 'systemctl' 'disable' '--now' 'firewalld'": {code: 1},
				"sudo -n 'systemctl' 'enable' '--now' 'firewalld'":  {code: 1},
				"sudo -n true":                    {code: tc.sudoTrue},
				helperCmd("firewalld", "disable"): {code: tc.helper},
				helperCmd("firewalld", "enable"):  {code: tc.helper},
			}}
			p, _ := json.Marshal(FirewallParams{Op: tc.op})
			_, err := (FirewallJob{}).Run(context.Background(), &Env{Exec: ex, Params: p, Out: io.Discard})
			asked := false
			for _, c := range ex.ran {
				asked = asked || strings.HasPrefix(c, helperCmd("firewalld"))
			}
			if asked != tc.wantHelpr {
				t.Fatalf("helper asked %v, want %v (ran %q)", asked, tc.wantHelpr, ex.ran)
			}
			if tc.wantErr == "" {
				// The disable is read back: the scripted state still says
				// running, so the job reports that, not a systemctl error.
				if err != nil && strings.Contains(err.Error(), "systemctl") {
					t.Fatalf("got %v (ran %q)", err, ex.ran)
				}
				return
			}
			var failed *Failed
			if !errors.As(err, &failed) || !strings.Contains(failed.Reason, tc.wantErr) {
				t.Fatalf("got %v, want %q (ran %q)", err, tc.wantErr, ex.ran)
			}
		})
	}
}

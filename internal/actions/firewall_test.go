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
// needs systemctl, which restricted mode's allowlist does not hold; the
// failure says so instead of a bare exit code.
func TestFirewalldSystemctlInRestrictedMode(t *testing.T) {
	for _, tc := range []struct {
		name       string
		sudoTrue   int
		op         string
		running    string
		restricted bool
	}{
		{"disable, restricted", 1, domain.FirewallDisable, "running", true},
		{"disable, full", 0, domain.FirewallDisable, "running", false},
		{"enable, restricted", 1, domain.FirewallEnable, "not running", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex := &scriptedExec{answers: map[string]scripted{
				firewall.DetectScript:                               {stdout: "firewalld\n"},
				"sudo -n 'firewall-cmd' '--state'":                  {stdout: tc.running + "\n"},
				"sudo -n 'systemctl' 'disable' '--now' 'firewalld'": {code: 1},
				"sudo -n 'systemctl' 'enable' '--now' 'firewalld'":  {code: 1},
				"sudo -n true": {code: tc.sudoTrue},
				"sudo -n 'firewall-cmd' '--permanent' '--list-rich-rules'": {},
			}}
			p, _ := json.Marshal(FirewallParams{Op: tc.op})
			_, err := (FirewallJob{}).Run(context.Background(), &Env{Exec: ex, Params: p, Out: io.Discard})
			var failed *Failed
			if !errors.As(err, &failed) || !strings.Contains(failed.Reason, "systemctl") {
				t.Fatalf("got %v (ran %q)", err, ex.ran)
			}
			if got := strings.Contains(failed.Reason, "restricted sudo mode"); got != tc.restricted {
				t.Fatalf("reason %q: mentions restricted mode %v, want %v", failed.Reason, got, tc.restricted)
			}
		})
	}
}

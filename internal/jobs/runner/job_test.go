package runner

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/remote"
)

// probeExec answers the helper probe of actions.EnsureHelper with a
// machine the worker has no helper for, so the installed one is read back
// and used as it is; every command is recorded.
type probeExec struct {
	mu  sync.Mutex
	ran []string
}

func (e *probeExec) Run(_ context.Context, c remote.Command) (remote.Result, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ran = append(e.ran, c.Cmd)
	if strings.HasPrefix(c.Cmd, "uname -m; sha256sum ") && c.Stdout != nil {
		io.WriteString(c.Stdout, "riscv64\nabc123\n\nlcm-helper 1.0.0 protocol 5\n")
	}
	return remote.Result{}, nil
}

func (e *probeExec) Close() error { return nil }

type okAction struct{ ran *bool }

func (a okAction) Run(context.Context, *actions.Env) (actions.Result, error) {
	*a.ran = true
	return actions.Result{Message: "done"}, nil
}

// TestRunActionChecksTheHelper: in restricted sudo mode a job that uses
// lcm-helper reads it back first (and the result carries it for the
// server record); other jobs, and every job in full mode, do not.
func TestRunActionChecksTheHelper(t *testing.T) {
	for _, tc := range []struct {
		kind   domain.JobKind
		mode   string
		checks bool
	}{
		{domain.JobLinuxUser, domain.SudoRestricted, true},
		{domain.JobHardenSSH, domain.SudoRestricted, true},
		{domain.JobFirewall, domain.SudoRestricted, true},
		{domain.JobRefresh, domain.SudoRestricted, false},
		{domain.JobLinuxUser, domain.SudoFull, false},
	} {
		ex := &probeExec{}
		ran := false
		res, _, err := runAction(context.Background(), okAction{&ran}, &actions.Env{Exec: ex, Out: &bytes.Buffer{}}, tc.kind, tc.mode)
		if err != nil || !ran {
			t.Fatalf("%s %s: %v ran=%v", tc.kind, tc.mode, err, ran)
		}
		probed := len(ex.ran) > 0
		if probed != tc.checks || (res.Helper != nil) != tc.checks {
			t.Fatalf("%s %s: probed %v, helper %+v, want %v (ran %q)", tc.kind, tc.mode, probed, res.Helper, tc.checks, ex.ran)
		}
		if tc.checks && (res.Helper.Version != "lcm-helper 1.0.0 protocol 5" || res.Helper.SHA256 != "abc123" || res.Helper.Upgraded) {
			t.Fatalf("%s: helper %+v", tc.kind, res.Helper)
		}
	}
}

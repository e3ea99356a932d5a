// Package actions holds the remote actions jobs run, one file per action,
// each against remote.Executor so the SSH transport and the agent can run
// them alike. Actions follow "proven, not claimed": a change to a server is
// read back (or exercised) before it counts, and rolled back when it cannot
// be proven.
package actions

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lcmproject/lcm/internal/credbox"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/facts"
	"github.com/lcmproject/lcm/internal/pkgmgr"
	"github.com/lcmproject/lcm/internal/remote"
)

// Env is what an action runs with.
type Env struct {
	// Exec runs commands as the job's login user (the management user, or
	// the bootstrap user for a join).
	Exec remote.Executor
	// Dial opens a separate connection to the same server (same pinned
	// host key) as user with a private key: the proof of a new key.
	Dial func(ctx context.Context, user, privateKeyPEM string) (remote.Executor, error)
	// DialPort is Dial to another SSH port of the same host (ssh-port).
	DialPort func(ctx context.Context, user, privateKeyPEM string, port int) (remote.Executor, error)
	Creds    credbox.Credentials
	Params   json.RawMessage
	// Out receives the console output (stdout and stderr).
	Out io.Writer
}

// Result is what an action reports besides its error.
type Result struct {
	ExitCode int          `json:"exit_code"`
	Facts    *ServerFacts `json:"facts,omitempty"`
	Message  string       `json:"message,omitempty"`
	// SSH is the proof of an SSH hardening action; Sudo that of a sudo
	// mode switch.
	SSH  *SSHProof  `json:"ssh,omitempty"`
	Sudo *SudoProof `json:"sudo,omitempty"`
	// Firewall is the read-back of a firewall job; Ports a listening-ports
	// scan.
	Firewall *FirewallProof `json:"firewall,omitempty"`
	Ports    *PortsScan     `json:"ports,omitempty"`
	// Helper is lcm-helper as read back at the start of a job that uses
	// it in restricted mode (EnsureHelper), or as a switch installed it.
	Helper   *HelperState  `json:"helper,omitempty"`
	Duration time.Duration `json:"-"`
}

// ServerFacts are the facts a join or connectivity check learned.
type ServerFacts struct {
	OSName         string `json:"os_name"`
	OSVersion      string `json:"os_version"`
	Kernel         string `json:"kernel"`
	Virtualization string `json:"virtualization"`
	Hostname       string `json:"hostname"`
	PackageFamily  string `json:"package_family"`
}

// Action is one remote action.
type Action interface {
	Run(ctx context.Context, env *Env) (Result, error)
}

// For returns the action of a job kind.
func For(kind domain.JobKind) (Action, error) {
	switch kind {
	case domain.JobJoin:
		return Join{}, nil
	case domain.JobConnectivity, domain.JobReconnect:
		return Connectivity{}, nil
	case domain.JobUpgradeSecurity:
		return UpgradeSecurity{}, nil
	case domain.JobRotateKey:
		return RotateKey{}, nil
	case domain.JobDecommission:
		return Decommission{}, nil
	case domain.JobRefresh:
		return RefreshJob{}, nil
	case domain.JobPackageAction:
		return PackageJob{}, nil
	case domain.JobReboot:
		return RebootJob{}, nil
	case domain.JobStorageSample:
		return StorageSampleJob{}, nil
	case domain.JobHardenSSH:
		return HardenSSH{}, nil
	case domain.JobUnhardenSSH:
		return UnhardenSSH{}, nil
	case domain.JobSSHRootLogin:
		return SSHRootLogin{}, nil
	case domain.JobRestrictSudo:
		return RestrictSudo{}, nil
	case domain.JobSSHPort:
		return SSHPort{}, nil
	case domain.JobLinuxUser:
		return LinuxUserJob{}, nil
	case domain.JobLinuxUserScan:
		return LinuxUserScanJob{}, nil
	case domain.JobFirewall:
		return FirewallJob{}, nil
	case domain.JobListeningPortScan:
		return ListeningPortsScan{}, nil
	case domain.JobContainer:
		return ContainerJob{}, nil
	case domain.JobCustomAction:
		return CustomActionJob{}, nil
	case domain.JobScript:
		return ScriptJob{}, nil
	}
	return nil, domain.Invalid("unknown_job_kind", fmt.Sprintf("unknown job kind %q", kind))
}

// Failed is an action error that the job history shows as is.
type Failed struct{ Reason string }

func (e *Failed) Error() string { return e.Reason }

func failf(format string, args ...any) error { return &Failed{Reason: fmt.Sprintf(format, args...)} }

// Command deadlines. Each says why it is what it is.
const (
	// shortTimeout bounds quick commands (id, sudo -n true, facts): they
	// take milliseconds; 60 s tolerates a loaded host.
	shortTimeout = 60 * time.Second
	// upgradeTimeout bounds a package upgrade: large upgrades on slow
	// mirrors take tens of minutes; an hour means something hangs.
	upgradeTimeout = time.Hour
	// upgradeIdle: apt waits up to 120 s for the dpkg lock and some
	// maintainer scripts are silent for minutes; 10 min without output is
	// a hang.
	upgradeIdle = 10 * time.Minute
)

// run executes cmd with output to env.Out and returns the exit code.
func run(ctx context.Context, ex remote.Executor, out io.Writer, c remote.Command) (int, error) {
	if c.Stdout == nil {
		c.Stdout = out
	}
	if c.Stderr == nil {
		c.Stderr = out
	}
	if c.Timeout == 0 {
		c.Timeout = shortTimeout
	}
	res, err := ex.Run(ctx, c)
	return res.ExitCode, err
}

// capture runs cmd and returns its stdout; stderr goes to out.
func capture(ctx context.Context, ex remote.Executor, out io.Writer, c remote.Command) (string, int, error) {
	var buf bytes.Buffer
	c.Stdout = &buf
	code, err := run(ctx, ex, out, c)
	return buf.String(), code, err
}

// collectFacts runs the facts collector and condenses what servers store.
func collectFacts(ctx context.Context, ex remote.Executor, out io.Writer) (*ServerFacts, error) {
	raw, code, err := capture(ctx, ex, out, remote.Command{Cmd: facts.Script()})
	if err != nil {
		return nil, err
	}
	if code != 0 {
		return nil, failf("facts collection exited with code %d", code)
	}
	f, err := facts.Parse([]byte(raw))
	if err != nil {
		return nil, failf("facts could not be parsed: %v", err)
	}
	sf := &ServerFacts{OSName: f.OS.PrettyName, OSVersion: f.OS.VersionID, Kernel: f.Kernel,
		Virtualization: f.Virtualization.Type, Hostname: f.Hostname}
	if sf.OSName == "" {
		sf.OSName = f.OS.Name
	}
	if fam, err := pkgmgr.FamilyFromOSRelease(f.OS.ID, f.OS.IDLike); err == nil {
		sf.PackageFamily = string(fam)
	}
	fmt.Fprintf(out, "lcm: %s, kernel %s, host %s, package manager %s\n", sf.OSName, sf.Kernel, sf.Hostname, orDash(sf.PackageFamily))
	return sf, nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// shQuote quotes s as one POSIX shell word.
func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

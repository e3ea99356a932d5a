package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"
)

// Exit codes of `lcm-agent status` (documented in docs/agent.md). 3 is
// the LSB "program is not running".
const (
	statusConnected    = 0 // running and connected to its gateway
	statusNotEnrolled  = 1 // no configuration (run enroll) or it cannot be read
	statusUsage        = 2 // bad flags
	statusNotRunning   = 3 // no running agent
	statusDisconnected = 4 // running, but not connected (see last_error)
)

// exitError carries a process exit code through run.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// statusReport is `lcm-agent status -json`.
type statusReport struct {
	Status               string     `json:"status"` // connected, connecting, disconnected, not_running, not_enrolled
	ExitCode             int        `json:"exit_code"`
	Config               string     `json:"config"`
	AgentID              string     `json:"agent_id,omitempty"`
	GatewayURL           string     `json:"gateway_url,omitempty"`
	TLSFingerprintSHA256 string     `json:"tls_fingerprint_sha256,omitempty"`
	PID                  int        `json:"pid,omitempty"`
	Version              string     `json:"version,omitempty"`
	Capability           int        `json:"capability,omitempty"`
	StartedAt            *time.Time `json:"started_at,omitempty"`
	ConnectedSince       *time.Time `json:"connected_since,omitempty"`
	LastContact          *time.Time `json:"last_contact,omitempty"`
	LastError            string     `json:"last_error,omitempty"`
	Running              int        `json:"running_commands"`
	Note                 string     `json:"note,omitempty"`
}

// runStatus: lcm-agent status [-config path] [-state path] [-json]
//
// It reads the configuration (agent id, gateway, pinned fingerprint) and
// the state file the running agent keeps; it never connects to the
// gateway itself (a second connection with the agent's id would take the
// running agent's session over).
func runStatus(_ context.Context, args []string, stdout, stderr io.Writer) error {
	flags := flag.NewFlagSet("lcm-agent status", flag.ContinueOnError)
	flags.SetOutput(stderr)
	path := flags.String("config", defaultConfigPath, "the agent configuration written by enroll")
	statePath := flags.String("state", defaultStatePath, "the state file of the running agent")
	asJSON := flags.Bool("json", false, "print the status as JSON")
	if err := flags.Parse(args); err != nil {
		return &exitError{code: statusUsage, msg: err.Error()}
	}
	if flags.NArg() != 0 {
		return &exitError{code: statusUsage, msg: "usage: lcm-agent status [-config path] [-state path] [-json]"}
	}
	rep := statusOf(*path, *statePath)
	if *asJSON {
		b, _ := json.MarshalIndent(rep, "", "  ")
		fmt.Fprintln(stdout, string(b))
	} else {
		printStatus(stdout, rep, time.Now())
	}
	if rep.ExitCode != 0 {
		// The report is printed; the error only carries the exit code.
		return &exitError{code: rep.ExitCode}
	}
	return nil
}

func statusOf(path, statePath string) statusReport {
	rep := statusReport{Config: path}
	cfg, cfgErr := loadConfig(path)
	if cfgErr == nil {
		rep.AgentID, rep.GatewayURL, rep.TLSFingerprintSHA256 = cfg.AgentID, cfg.GatewayURL, cfg.TLSFingerprintSHA256
	}
	st, stErr := readState(statePath)
	alive := stErr == nil && processAlive(st.PID)
	if cfgErr != nil && !(alive && errors.Is(cfgErr, fs.ErrPermission)) {
		// Without a readable configuration there is nothing to run —
		// unless an agent runs and only this user may not read the file.
		rep.Status, rep.ExitCode, rep.Note = "not_enrolled", statusNotEnrolled, cfgErr.Error()
		return rep
	}
	if !alive {
		rep.Status, rep.ExitCode = "not_running", statusNotRunning
		switch {
		case errors.Is(stErr, errNoState):
			rep.Note = "no agent is running (no " + statePath + "); start it: systemctl start lcm-agent, or lcm-agent run"
		case stErr != nil:
			rep.Note = stErr.Error()
		default:
			rep.Note = fmt.Sprintf("the agent (pid %d) is gone without a clean stop; start it again", st.PID)
		}
		return rep
	}
	if cfgErr != nil {
		rep.Note = "configuration not readable by this user (" + cfgErr.Error() + "); showing the running agent's state"
		rep.AgentID, rep.GatewayURL, rep.TLSFingerprintSHA256 = st.AgentID, st.GatewayURL, st.TLSFingerprintSHA256
	} else if st.AgentID != cfg.AgentID {
		rep.Note = fmt.Sprintf("the running agent uses agent id %s, the configuration holds %s (re-enrolled?): restart the agent", st.AgentID, cfg.AgentID)
	}
	rep.PID, rep.Version, rep.Capability, rep.Running = st.PID, st.Version, st.Capability, st.Running
	started := st.StartedAt
	rep.StartedAt, rep.ConnectedSince, rep.LastContact, rep.LastError = &started, st.ConnectedSince, st.LastContact, st.LastError
	rep.Status = st.State
	if st.State == stateConnected {
		rep.ExitCode = statusConnected
	} else {
		rep.ExitCode = statusDisconnected
	}
	return rep
}

func printStatus(w io.Writer, r statusReport, now time.Time) {
	fmt.Fprintf(w, "lcm-agent: %s\n", strings.ReplaceAll(r.Status, "_", " "))
	line := func(k, v string) {
		if v != "" {
			fmt.Fprintf(w, "  %-17s %s\n", k+":", v)
		}
	}
	when := func(t *time.Time) string {
		if t == nil {
			return ""
		}
		return fmt.Sprintf("%s (%s ago)", t.UTC().Format(time.RFC3339), now.Sub(*t).Round(time.Second))
	}
	line("agent id", r.AgentID)
	line("gateway", r.GatewayURL)
	line("pinned sha256", r.TLSFingerprintSHA256)
	if r.PID > 0 {
		line("pid", fmt.Sprint(r.PID))
	}
	line("agent version", r.Version)
	if r.Capability > 0 {
		line("protocol", fmt.Sprintf("v%d", r.Capability))
	}
	line("started", when(r.StartedAt))
	line("connected since", when(r.ConnectedSince))
	line("last contact", when(r.LastContact))
	if r.PID > 0 {
		line("running commands", fmt.Sprint(r.Running))
	}
	line("last error", r.LastError)
	line("config", r.Config)
	line("note", r.Note)
}

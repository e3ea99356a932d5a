package agentproto

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Message types, the "type" field of every envelope.
const (
	TypeCommand  = "cmd"      // gateway → agent: run a command
	TypeCancel   = "cancel"   // gateway → agent: kill a running command
	TypeAccepted = "accepted" // agent → gateway: the command was received and started
	TypeOutput   = "output"   // agent → gateway: a chunk of stdout or stderr
	TypeProgress = "progress" // agent → gateway: the command is still running
	TypeResult   = "result"   // agent → gateway: the command ended (or never ran)
	TypeStatus   = "status"   // agent → gateway heartbeat; "offline" from the gateway
)

// Output streams.
const (
	StreamStdout = "stdout"
	StreamStderr = "stderr"
)

// Result codes: why a command did not run to completion. Empty means it
// exited by itself and ExitCode is its status.
const (
	CodeCancelled       = "cancelled"        // a Cancel arrived
	CodeTimeout         = "timeout"          // Command.TimeoutMS passed
	CodeIdle            = "idle"             // no output for Command.IdleTimeoutMS
	CodeSudoUnavailable = "sudo_unavailable" // sudo requested, agent not root and no sudo
	CodeStartFailed     = "start_failed"     // the shell could not be started
	CodeInvalid         = "invalid"          // the command envelope was invalid
)

// Agent states in Status.State.
const (
	StateOnline  = "online"
	StateOffline = "offline"
)

// Header starts every envelope. ID is the UUID of the command a message
// belongs to (request/response by UUID); a Status carries a fresh UUID.
type Header struct {
	V    int    `json:"v"`
	Type string `json:"type"`
	ID   string `json:"id"`
}

// Command asks the agent to run Cmd with `sh -c`.
type Command struct {
	Header
	Cmd string `json:"cmd"`
	// Stdin is fed to the command, then EOF (base64 in JSON).
	Stdin []byte `json:"stdin,omitempty"`
	// Sudo runs the command as root (`sudo -n` unless the agent is root).
	Sudo bool `json:"sudo,omitempty"`
	// TimeoutMS and IdleTimeoutMS are enforced by the agent as well, so a
	// command is bounded even when the link to the gateway is lost.
	TimeoutMS     int64 `json:"timeout_ms,omitempty"`
	IdleTimeoutMS int64 `json:"idle_timeout_ms,omitempty"`
}

// Cancel asks the agent to kill the command with ID (its process group).
type Cancel struct {
	Header
}

// Accepted confirms that the agent received the command and started it.
type Accepted struct {
	Header
}

// Output is one chunk of a command's output. Seq counts from 1 across both
// streams, so the receiver restores the interleaving.
type Output struct {
	Header
	Seq    int    `json:"seq"`
	Stream string `json:"stream"`
	Data   []byte `json:"data"`
}

// Progress says the command is still running (every HeartbeatInterval).
type Progress struct {
	Header
	ElapsedMS int64 `json:"elapsed_ms"`
}

// Result ends a command. Chunks is the number of Output messages sent, so
// the receiver can tell whether it saw them all.
type Result struct {
	Header
	ExitCode   int    `json:"exit_code"`
	Code       string `json:"code,omitempty"`
	Error      string `json:"error,omitempty"`
	DurationMS int64  `json:"duration_ms"`
	Chunks     int    `json:"chunks"`
	Truncated  bool   `json:"truncated,omitempty"`
}

// Status is an agent heartbeat (or the gateway's "offline" notice).
type Status struct {
	Header
	State        string `json:"state"`
	AgentVersion string `json:"agent_version,omitempty"`
	Hostname     string `json:"hostname,omitempty"`
	Running      int    `json:"running"`
	// Time is the sender's clock (RFC 3339), for spotting clock skew.
	Time string `json:"time"`
	// Gateway names the gateway the agent is connected to. The gateway
	// sets it on every status it forwards (and on its offline notice),
	// overwriting whatever the agent sent.
	Gateway string `json:"gateway,omitempty"`
}

// NewHeader returns a header of this protocol version.
func NewHeader(typ, id string) Header { return Header{V: CapabilityVersion, Type: typ, ID: id} }

// ErrInvalid is wrapped by every decoding and validation error.
var ErrInvalid = errors.New("agentproto: invalid message")

// Decode parses an envelope and returns a pointer to its concrete type
// (*Command, *Cancel, *Accepted, *Output, *Progress, *Result or *Status).
func Decode(data []byte) (any, error) {
	var h Header
	if err := json.Unmarshal(data, &h); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if h.V < 1 {
		return nil, fmt.Errorf("%w: version %d", ErrInvalid, h.V)
	}
	if !validUUID(h.ID) {
		return nil, fmt.Errorf("%w: id %q is not a UUID", ErrInvalid, h.ID)
	}
	var m any
	switch h.Type {
	case TypeCommand:
		m = &Command{}
	case TypeCancel:
		m = &Cancel{}
	case TypeAccepted:
		m = &Accepted{}
	case TypeOutput:
		m = &Output{}
	case TypeProgress:
		m = &Progress{}
	case TypeResult:
		m = &Result{}
	case TypeStatus:
		m = &Status{}
	default:
		return nil, fmt.Errorf("%w: unknown type %q", ErrInvalid, h.Type)
	}
	if err := json.Unmarshal(data, m); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, h.Type, err)
	}
	if err := validate(m); err != nil {
		return nil, err
	}
	return m, nil
}

func validate(m any) error {
	switch m := m.(type) {
	case *Command:
		switch {
		case m.Cmd == "":
			return fmt.Errorf("%w: empty cmd", ErrInvalid)
		case len(m.Stdin) > MaxStdinBytes:
			return fmt.Errorf("%w: stdin over %d bytes", ErrInvalid, MaxStdinBytes)
		case m.TimeoutMS < 0 || m.IdleTimeoutMS < 0:
			return fmt.Errorf("%w: negative timeout", ErrInvalid)
		}
	case *Output:
		switch {
		case m.Seq < 1:
			return fmt.Errorf("%w: output seq %d", ErrInvalid, m.Seq)
		case m.Stream != StreamStdout && m.Stream != StreamStderr:
			return fmt.Errorf("%w: output stream %q", ErrInvalid, m.Stream)
		case len(m.Data) > MaxChunkBytes+len(TruncationNotice):
			return fmt.Errorf("%w: output chunk of %d bytes", ErrInvalid, len(m.Data))
		}
	case *Result:
		if m.Chunks < 0 {
			return fmt.Errorf("%w: result chunks %d", ErrInvalid, m.Chunks)
		}
	case *Status:
		if m.State != StateOnline && m.State != StateOffline {
			return fmt.Errorf("%w: status state %q", ErrInvalid, m.State)
		}
	}
	return nil
}

// Encode marshals an envelope. It exists so callers never forget that
// envelopes are JSON; it fails only for values that are not envelopes.
func Encode(m any) ([]byte, error) {
	switch m.(type) {
	case *Command, *Cancel, *Accepted, *Output, *Progress, *Result, *Status,
		Command, Cancel, Accepted, Output, Progress, Result, Status:
		return json.Marshal(m)
	}
	return nil, fmt.Errorf("agentproto: %T is not an envelope", m)
}

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"syscall"
	"time"
)

// defaultStatePath is where `lcm-agent run` keeps its runtime state for
// `lcm-agent status`. /run/lcm-agent is the unit's RuntimeDirectory: it is
// on tmpfs and goes away with the service, so a stale file never outlives a
// boot.
const defaultStatePath = "/run/lcm-agent/state.json"

// Connection states in the state file.
const (
	stateConnecting   = "connecting"   // started, no connection yet
	stateConnected    = "connected"    // the gateway accepted the agent
	stateDisconnected = "disconnected" // the connection dropped; reconnecting
)

// runState is what a running agent tells `lcm-agent status`. It holds no
// secret (the config file keeps the agent secret), so it is world-readable:
// a monitoring check need not run as root.
type runState struct {
	PID                  int        `json:"pid"`
	AgentID              string     `json:"agent_id"`
	GatewayURL           string     `json:"gateway_url"`
	TLSFingerprintSHA256 string     `json:"tls_fingerprint_sha256"`
	Version              string     `json:"version"`
	Capability           int        `json:"capability"`
	State                string     `json:"state"`
	StartedAt            time.Time  `json:"started_at"`
	ConnectedSince       *time.Time `json:"connected_since,omitempty"`
	// LastContact is the last time the gateway answered: a connect, an
	// acknowledged heartbeat or result, a command received.
	LastContact *time.Time `json:"last_contact,omitempty"`
	LastError   string     `json:"last_error,omitempty"`
	Running     int        `json:"running"`
	UpdatedAt   time.Time  `json:"updated_at"`
}

// stateFile writes runState atomically whenever it changes. A write that
// fails is logged once by the caller and never stops the agent: the state
// file is for operators, the connection is what matters.
type stateFile struct {
	path string
	mu   sync.Mutex
	st   runState
	now  func() time.Time
}

func newStateFile(path string, st runState) *stateFile {
	return &stateFile{path: path, st: st, now: func() time.Time { return time.Now().UTC() }}
}

// update applies fn to the state and writes it.
func (f *stateFile) update(fn func(*runState)) error {
	if f == nil || f.path == "" {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(&f.st)
	f.st.UpdatedAt = f.now()
	return writeState(f.path, f.st)
}

// contact records that the gateway answered now.
func (f *stateFile) contact() error {
	return f.update(func(s *runState) {
		t := f.now()
		s.LastContact = &t
	})
}

// remove deletes the file on a clean stop: no file means not running.
func (f *stateFile) remove() {
	if f == nil || f.path == "" {
		return
	}
	_ = os.Remove(f.path)
}

// stateJSON writes the state file world-readable (it holds no
// secret) and without fsync: it lives on tmpfs and is rewritten on every
// contact.
var stateJSON = jsonFile{perm: 0o644, dirPerm: 0o755, pattern: ".state-*.json"}

func writeState(path string, st runState) error { return stateJSON.writeJSON(path, st) }

// errNoState: no state file, so no agent has run since boot (or it
// stopped cleanly).
var errNoState = errors.New("no state file")

func readState(path string) (runState, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return runState{}, errNoState
	}
	if err != nil {
		return runState{}, err
	}
	var st runState
	if err := json.Unmarshal(b, &st); err != nil {
		return runState{}, fmt.Errorf("%s: %w", path, err)
	}
	return st, nil
}

// processAlive reports whether pid is a live process (signal 0; EPERM
// means it exists but belongs to someone else).
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

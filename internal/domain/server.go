package domain

import (
	"net"
	"strconv"
	"time"
)

// ServerStatus is a server's traffic light.
type ServerStatus string

// Server statuses. The spec names red and yellow; green, unreachable and
// unknown complete the set the UI shows; excellent is the reference's best
// state: green, no known vulnerabilities, SSH hardened and an active
// firewall (docs/status.md).
const (
	ServerExcellent   ServerStatus = "excellent"
	ServerUnknown     ServerStatus = "unknown"
	ServerGreen       ServerStatus = "green"
	ServerYellow      ServerStatus = "yellow"
	ServerRed         ServerStatus = "red"
	ServerUnreachable ServerStatus = "unreachable"
)

// String returns the wire value.
func (s ServerStatus) String() string { return string(s) }

// Valid reports whether s is a known status.
func (s ServerStatus) Valid() bool {
	switch s {
	case ServerUnknown, ServerExcellent, ServerGreen, ServerYellow, ServerRed, ServerUnreachable:
		return true
	}
	return false
}

// Transports of a server: SSH (the worker logs in) or agent (lcm-agent on
// the server keeps an outbound connection to the agent gateway).
const (
	TransportSSH   = "ssh"
	TransportAgent = "agent"
)

// DefaultSegment is the worker segment of a server that names none.
const DefaultSegment = "default"

// ManagementUser is the dedicated account join creates on every server.
const ManagementUser = "lcm"

// Auth methods of the bootstrap (join) credentials.
const (
	AuthKey      = "key"
	AuthPassword = "password"
)

// Server is one managed server. Secrets (keys, passwords) never appear
// here: they stay in the store and reach a worker sealed, per job.
type Server struct {
	ID                 string
	Name               string
	Host               string
	Port               int
	Transport          string
	Segment            string
	GroupIDs           []string
	Status             ServerStatus
	Joined             bool
	HostKey            string // pinned authorized-keys line
	HostKeyFingerprint string // SHA256:…
	// AuthMethod is how the device authenticates the management user:
	// AuthKey (default) or AuthPassword (devices without key support keep
	// an encrypted login password).
	AuthMethod     string
	OSName         string
	OSVersion      string
	Kernel         string
	Virtualization string
	Hostname       string
	PackageFamily  string // pkgmgr family ("apt", "dnf", …); "" until detected
	RebootRequired bool
	UpdatesAvail   int
	SecurityAvail  int
	SSHHardened    bool
	// Hardening is what LCM last proved about SSH and sudo.
	Hardening   Hardening
	LastSeenAt  *time.Time
	CreatedAt   time.Time
	ActiveJobID string
	// Agent is the agent state of a server with TransportAgent (nil
	// otherwise).
	Agent *AgentState
}

// Addr is host:port.
func (s *Server) Addr() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) }

// Group is a server group: a set of servers and the managers who see them.
type Group struct {
	ID          string
	Name        string
	Description string
	// Segment, when set, places the group's servers in this worker segment
	// unless a server names its own.
	Segment    string
	ServerIDs  []string
	ManagerIDs []string
	CreatedAt  time.Time
}

// ValidSegment reports whether s can be a NATS subject token: workers
// subscribe to lcm.jobs.<segment>.>, so dots, wildcards and spaces are out.
func ValidSegment(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		ok := c == '-' || c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
		if !ok {
			return false
		}
	}
	return true
}

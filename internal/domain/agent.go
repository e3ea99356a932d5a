package domain

import "time"

// AgentSilence is how long an agent may stay silent before it counts as
// unreachable. Why 90 s: agents send a heartbeat every 30 s
// (agentproto.HeartbeatInterval), so three missed heartbeats.
const AgentSilence = 90 * time.Second

// AgentState is what LCM knows about the lcm-agent of a server.
type AgentState struct {
	// AgentID is the id of the current enrollment ("" before the first
	// token). A new token replaces it; the old id is revoked.
	AgentID string
	// TokenIssuedAt is when the current token was issued; EnrolledAt when
	// an agent connected with it for the first time.
	TokenIssuedAt *time.Time
	// Connected is the last state the gateway reported; LastSeenAt the
	// last heartbeat (or connect/disconnect).
	Connected  bool
	LastSeenAt *time.Time
	Version    string
	Hostname   string
	// Gateway is the name of the gateway the agent is (or was last)
	// connected to, as that gateway reports itself; Capability the
	// protocol capability version the agent speaks (agentproto `v`).
	Gateway    string
	Capability int
}

// Online reports whether the agent is connected and was heard from within
// AgentSilence of now.
func (a AgentState) Online(now time.Time) bool {
	return a.Connected && a.LastSeenAt != nil && now.Sub(*a.LastSeenAt) <= AgentSilence
}

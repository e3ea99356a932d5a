// Package agentproto is the wire protocol between lcm-agent and the agent
// gateway (lcm-agentgw, or the gateway inside lcm-api): MQTT topic names,
// JSON envelopes, the capability version and the enrollment token. It
// imports only the standard library, so the agent binary stays small and
// free of server code.
//
// An agent talks MQTT 5 over a WebSocket (`wss://…/mqtt`, subprotocol
// "mqtt") with QoS 1. Its username and client id are its agent id, its
// password the agent secret. It subscribes to its own cmd topic and
// publishes to its own res, inv and status topics:
//
//	lcm/a/<agentID>/cmd     gateway → agent   Command, Cancel
//	lcm/a/<agentID>/res     agent → gateway   Accepted, Output, Progress, Result
//	lcm/a/<agentID>/inv     agent → gateway   inventory (reserved)
//	lcm/a/<agentID>/status  agent → gateway   Status (every 30 s; "offline" from the gateway)
//
// The gateway bridges each topic to the NATS subject
// lcm.agent.<agentID>.<channel>.
package agentproto

import (
	"strings"
	"time"
)

// CapabilityVersion is the protocol version this code speaks; every envelope
// carries it in "v". A receiver accepts any version ≥ 1 and ignores fields it
// does not know, so an older gateway and a newer agent still understand each
// other; a feature that needs the peer's support checks the peer's version.
//
// History (add a line, never edit one):
//
//	1 (2026-11-24): initial protocol: cmd/cancel, accepted/output/progress/
//	  result, status heartbeat, one-time enrollment token with secret
//	  rotation at first connect.
const CapabilityVersion = 1

// MaxOutputBytes caps the stdout+stderr one command may send (4 MiB). Why:
// one command's output crosses the gateway, the bus and the job ledger
// (stored encrypted) as a whole; the largest output LCM asks for on purpose
// (a full package list with versions, ~1 MiB on a busy host) fits with room
// to spare, while a runaway command (`cat` of a log, `yes`) cannot flood the
// control plane. Past the cap the agent sends TruncationNotice once, keeps
// draining the command and reports Result.Truncated.
const MaxOutputBytes = 4 << 20

// TruncationNotice is the stderr chunk an agent sends when it hits
// MaxOutputBytes.
const TruncationNotice = "\n[lcm-agent: output truncated after 4 MiB]\n"

// MaxChunkBytes bounds one Output chunk. Why 32 KiB: small enough that live
// console output appears promptly and a chunk stays far below every message
// limit on the way, large enough that 4 MiB is only 128 messages.
const MaxChunkBytes = 32 << 10

// MaxStdinBytes bounds Command.Stdin (512 KiB). Why: the command envelope
// travels as one NATS message, whose default max_payload is 1 MiB, and
// base64 inflates stdin by 4/3. Stdin carries scripts and config files, not
// bulk data.
const MaxStdinBytes = 512 << 10

// MaxMessageBytes is the largest MQTT packet the gateway accepts (1 MiB),
// matching NATS's default max_payload so whatever the gateway accepts it can
// also forward.
const MaxMessageBytes = 1 << 20

// HeartbeatInterval is how often an agent publishes Status and, for each
// running command, Progress. Why 30 s: a silent command (a long `apt-get
// upgrade` download) must not look like a lost agent, while a vanished agent
// is noticed within a few intervals (see LostAfter).
const HeartbeatInterval = 30 * time.Second

// LostAfter is how long the control plane waits without any message about a
// running command before it treats the agent as lost: three missed
// heartbeats, so one delayed message never fails a job.
const LostAfter = 3 * HeartbeatInterval

// Channel is the last element of an agent topic.
type Channel string

// The four channels of an agent.
const (
	ChannelCmd    Channel = "cmd"
	ChannelRes    Channel = "res"
	ChannelInv    Channel = "inv"
	ChannelStatus Channel = "status"
)

// TopicPrefix starts every agent topic.
const TopicPrefix = "lcm/a/"

// Valid reports whether c is one of the four channels.
func (c Channel) Valid() bool {
	switch c {
	case ChannelCmd, ChannelRes, ChannelInv, ChannelStatus:
		return true
	}
	return false
}

// Topic is the MQTT topic of an agent's channel.
func Topic(agentID string, c Channel) string { return TopicPrefix + agentID + "/" + string(c) }

// ParseTopic splits lcm/a/<agentID>/<channel>; ok is false for anything
// else, including wildcards and an invalid agent id.
func ParseTopic(topic string) (agentID string, c Channel, ok bool) {
	rest, found := strings.CutPrefix(topic, TopicPrefix)
	if !found {
		return "", "", false
	}
	id, ch, found := strings.Cut(rest, "/")
	if !found || !ValidAgentID(id) || !Channel(ch).Valid() {
		return "", "", false
	}
	return id, Channel(ch), true
}

// ValidAgentID reports whether id is a canonical lowercase UUID
// (8-4-4-4-12 hex). Agent ids appear in MQTT topics, NATS subjects and KV
// keys; a UUID contains none of the characters any of them treats
// specially ('/', '.', '+', '#', '*', '>').
func ValidAgentID(id string) bool { return validUUID(id) }

func validUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
				return false
			}
		}
	}
	return true
}

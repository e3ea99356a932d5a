package agentgw

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/lcmproject/lcm/internal/safe"
	"github.com/lcmproject/lcm/pkg/agentproto"
)

// authTimeout bounds the KV lookup of one CONNECT. Why 5 s: a connect must
// not hang on a slow bus; the agent retries with backoff, and a timeout is a
// rejection like any other failure.
const authTimeout = 5 * time.Second

// hook is the gateway's only mochi hook: authentication, ACL and the
// bridge from agents into NATS. Every method that decides is fail-closed:
// a recovered panic denies.
type hook struct {
	mqtt.HookBase
	creds CredentialStore
	bus   Messenger
	log   *slog.Logger
	// name is the gateway's name, stamped on every status it forwards.
	name string
	// disconnect ends a client's connection with a DISCONNECT reason
	// (the broker's DisconnectClient, set once it exists).
	disconnect func(cl *mqtt.Client, code packets.Code) error
	// sessions maps a connected agent id to the secret hash it
	// authenticated with, for revalidation.
	sessions sync.Map
	// testHookAuth, when set (tests only), runs inside authentication.
	testHookAuth atomic.Pointer[func(agentID string)]
}

func (h *hook) ID() string { return "lcm-agentgw" }

func (h *hook) Provides(b byte) bool {
	return bytes.Contains([]byte{mqtt.OnConnectAuthenticate, mqtt.OnACLCheck, mqtt.OnPublish,
		mqtt.OnSessionEstablished, mqtt.OnDisconnect}, []byte{b})
}

// OnConnectAuthenticate admits a CONNECT only when the username is an agent
// id, the client id equals it (so no agent can take over another's
// session), and the password is that agent's secret per LCM_AGENTS.
func (h *hook) OnConnectAuthenticate(cl *mqtt.Client, pk packets.Packet) (ok bool) {
	agentID := string(pk.Connect.Username)
	defer func() {
		if r := recover(); r != nil {
			safe.Report("agent authentication (connection rejected)", r, "agent_id", safeID(agentID), "remote", cl.Net.Remote)
			ok = false
		}
	}()
	if f := h.testHookAuth.Load(); f != nil {
		(*f)(agentID)
	}
	if cl.ID != agentID {
		h.log.Warn("agent rejected: client id differs from username", "agent_id", safeID(agentID), "remote", cl.Net.Remote)
		return false
	}
	var newHash string
	for _, p := range pk.Properties.User {
		if p.Key == agentproto.EnrollProperty {
			newHash = p.Val
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), authTimeout)
	defer cancel()
	hash, err := authenticate(ctx, h.creds, agentID, string(pk.Connect.Password), newHash)
	if err != nil {
		h.log.Warn("agent rejected", "agent_id", safeID(agentID), "remote", cl.Net.Remote, "err", err)
		return false
	}
	h.sessions.Store(agentID, hash)
	if newHash != "" {
		h.log.Info("agent enrolled", "agent_id", agentID, "remote", cl.Net.Remote)
	}
	return true
}

// OnACLCheck lets an agent publish only to its own res, inv and status
// topics and subscribe only to its own cmd topic (exact names, no wildcards).
func (h *hook) OnACLCheck(cl *mqtt.Client, topic string, write bool) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			safe.Report("agent ACL check (denied)", r)
			ok = false
		}
	}()
	self := string(cl.Properties.Username)
	id, ch, valid := agentproto.ParseTopic(topic)
	if !valid || id != self || !agentproto.ValidAgentID(self) || cl.ID != self {
		h.log.Warn("agent ACL denied", "agent_id", safeID(self), "topic", topic, "write", write)
		return false
	}
	if write {
		return ch == agentproto.ChannelRes || ch == agentproto.ChannelInv || ch == agentproto.ChannelStatus
	}
	return ch == agentproto.ChannelCmd
}

// OnPublish forwards what an agent publishes (already ACL-checked) to NATS
// and keeps it from MQTT subscribers, of which there are none by ACL.
// Payloads that are not valid envelopes for their channel are refused, so a
// compromised agent cannot feed junk to the control plane.
func (h *hook) OnPublish(cl *mqtt.Client, pk packets.Packet) (out packets.Packet, err error) {
	if cl.Net.Inline {
		return pk, nil // the gateway's own cmd publishes
	}
	defer func() {
		if r := recover(); r != nil {
			safe.Report("agent publish hook (message refused)", r)
			out, err = pk, packets.ErrImplementationSpecificError
		}
	}()
	id, ch, ok := agentproto.ParseTopic(pk.TopicName)
	if !ok || id != string(cl.Properties.Username) {
		return pk, packets.ErrNotAuthorized
	}
	if pk.FixedHeader.Retain {
		// The broker keeps nothing (RetainAvailable 0); an agent never
		// retains, so a retained message is not forwarded either. MQTT 5
		// makes it a protocol error answered with DISCONNECT 0x9A (0x9A is
		// no PUBACK reason: a client library rejects such a PUBACK).
		h.log.Warn("agent message refused: retained; disconnecting it", "agent_id", id, "channel", ch)
		if h.disconnect != nil {
			_ = h.disconnect(cl, packets.ErrRetainNotSupported)
		}
		return pk, packets.ErrRejectPacket
	}
	payload, err := h.checkPayload(ch, pk.Payload)
	if err != nil {
		h.log.Warn("agent message refused", "agent_id", id, "channel", ch, "err", err)
		return pk, packets.ErrPayloadFormatInvalid
	}
	if err := h.bus.PublishAgent(id, string(ch), payload); err != nil {
		h.log.Error("agent message not forwarded", "agent_id", id, "channel", ch, "err", err)
		// 0x80 (unspecified error): 0x88 "server unavailable" is no
		// PUBACK reason code. The agent sends it again.
		return pk, packets.ErrUnspecifiedError
	}
	return pk, packets.CodeSuccessIgnore
}

// checkPayload validates a message for its channel and returns what is
// forwarded: the payload as sent, except that a status carries this
// gateway's name (an agent cannot claim another gateway).
func (h *hook) checkPayload(ch agentproto.Channel, b []byte) ([]byte, error) {
	if ch == agentproto.ChannelInv {
		if !json.Valid(b) {
			return nil, fmt.Errorf("inventory is not JSON")
		}
		return b, nil
	}
	m, err := agentproto.Decode(b)
	if err != nil {
		return nil, err
	}
	switch m := m.(type) {
	case *agentproto.Accepted, *agentproto.Output, *agentproto.Progress, *agentproto.Result:
		if ch == agentproto.ChannelRes {
			return b, nil
		}
	case *agentproto.Status:
		if ch == agentproto.ChannelStatus {
			m.Gateway = h.name
			return agentproto.Encode(m)
		}
	}
	return nil, fmt.Errorf("message type not allowed on %s", ch)
}

func (h *hook) OnSessionEstablished(cl *mqtt.Client, _ packets.Packet) {
	if c, ok := cl.Net.Conn.(*wsConn); ok {
		c.decided()
	}
	if !cl.Net.Inline {
		h.log.Info("agent connected", "agent_id", cl.ID, "remote", cl.Net.Remote)
	}
}

// OnDisconnect announces an agent offline on NATS, unless a newer
// connection of the same agent took its session over.
func (h *hook) OnDisconnect(cl *mqtt.Client, err error, _ bool) {
	if cl.Net.Inline || cl.IsTakenOver() {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			safe.Report("agent disconnect hook", r)
		}
	}()
	h.sessions.Delete(cl.ID)
	h.log.Info("agent disconnected", "agent_id", cl.ID, "err", err)
	st := agentproto.Status{Header: agentproto.NewHeader(agentproto.TypeStatus, agentproto.NewID()),
		State: agentproto.StateOffline, Time: time.Now().UTC().Format(time.RFC3339), Gateway: h.name}
	if b, merr := agentproto.Encode(&st); merr == nil {
		if perr := h.bus.PublishAgent(cl.ID, string(agentproto.ChannelStatus), b); perr != nil {
			h.log.Debug("offline status not published", "agent_id", cl.ID, "err", perr)
		}
	}
}

// safeID keeps whatever a client sent as username out of the log unless it
// is a well-formed agent id (it might be a mistyped secret).
func safeID(s string) string {
	if agentproto.ValidAgentID(s) {
		return s
	}
	return "(invalid)"
}

package fleet

import (
	"context"
	"log/slog"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/safe"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/pkg/agentproto"
)

// ContactFunc records a contact outcome for the traffic light
// (status.Service.RecordContact).
type ContactFunc func(ctx context.Context, serverID string, ok bool, reason string) error

// AgentMonitor keeps the agent state of agent servers: it stores the
// heartbeats and offline notices the gateways publish (lcm.agent.*.status)
// and, like an SSH contact, feeds the traffic light: a connect or
// heartbeat after silence is a successful contact, a disconnect or a
// silence longer than domain.AgentSilence a failed one (status counts a
// server unreachable after two in a row, so after at most two sweeps).
type AgentMonitor struct {
	Store   *store.Store
	Contact ContactFunc
	// OnConnect is called when an agent connects after being
	// disconnected (Service.AgentConnected: a connectivity check records
	// the server's facts).
	OnConnect func(ctx context.Context, serverID string)
	Log       *slog.Logger
	// Now is the clock (tests).
	Now func() time.Time
}

func (m *AgentMonitor) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now().UTC()
}

func (m *AgentMonitor) log() *slog.Logger {
	if m.Log != nil {
		return m.Log
	}
	return slog.Default()
}

// HandleStatus is the subscriber of the status channel of every agent.
// agentID comes from the NATS subject (the gateway derives it from the
// authenticated connection); the payload is validated.
func (m *AgentMonitor) HandleStatus(agentID string, data []byte) {
	if !agentproto.ValidAgentID(agentID) {
		return
	}
	msg, err := agentproto.Decode(data)
	if err != nil {
		return
	}
	st, ok := msg.(*agentproto.Status)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	online := st.State == agentproto.StateOnline
	rep := store.AgentReport{AgentID: agentID, Connected: online, At: m.now()}
	rep.Gateway = truncate(st.Gateway, 255)
	if online {
		rep.Version, rep.Hostname, rep.Capability = truncate(st.AgentVersion, 128), truncate(st.Hostname, 255), st.V
	}
	serverID, changed, err := m.Store.RecordAgentState(ctx, rep)
	if err != nil {
		m.log().Warn("agent state not stored", "agent_id", agentID, "err", err)
		return
	}
	if serverID == "" || m.Contact == nil {
		if serverID != "" && online && changed && m.OnConnect != nil {
			m.OnConnect(ctx, serverID)
		}
		return
	}
	switch {
	case online && changed:
		err = m.Contact(ctx, serverID, true, "")
		if m.OnConnect != nil {
			m.OnConnect(ctx, serverID)
		}
	case !online && changed:
		err = m.Contact(ctx, serverID, false, "the agent disconnected")
	}
	if err != nil {
		m.log().Warn("agent contact not recorded", "server_id", serverID, "err", err)
	}
}

// Sweep marks agents silent for longer than domain.AgentSilence as
// disconnected and records a failed contact for every agent that is not
// connected.
func (m *AgentMonitor) Sweep(ctx context.Context) error {
	now := m.now()
	ids, err := m.Store.SilentAgents(ctx, now.Add(-domain.AgentSilence))
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := m.Store.MarkAgentDisconnected(ctx, id); err != nil {
			return err
		}
		if m.Contact != nil {
			if err := m.Contact(ctx, id, false, "the agent has not been heard from for more than "+domain.AgentSilence.String()); err != nil {
				m.log().Warn("agent contact not recorded", "server_id", id, "err", err)
			}
		}
	}
	return nil
}

// Run sweeps every interval until ctx ends.
func (m *AgentMonitor) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		safe.Do("agent sweep", func() {
			if err := m.Sweep(ctx); err != nil && ctx.Err() == nil {
				m.log().Warn("agent sweep failed", "err", err)
			}
		})
	}
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

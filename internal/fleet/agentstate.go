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

// Lease is a leader lease (*bus.Lease): of several lcm-api replicas only
// the holder keeps the agent state.
type Lease interface {
	Acquire(ctx context.Context) (bool, error)
	Renew(ctx context.Context) (bool, error)
	Release(ctx context.Context) error
}

// SubscribeFunc starts delivering the gateways' status messages to fn
// (bus.SubscribeAgents on the status channel); the returned func stops.
type SubscribeFunc func(fn func(agentID string, data []byte)) (func() error, error)

// RunLeader keeps the agent state on one replica only: while this replica
// holds lease it subscribes to the status messages and sweeps every
// sweepEvery; it renews (or tries to take) the lease every renewEvery and
// unsubscribes when it loses it. So one disconnect or one silence counts
// one failed contact however many replicas run, and messages are handled
// in the order a single subscriber sees them. Messages published during a
// handover are lost; the next heartbeat (30 s) restores the state, and
// RecordAgentState's compare-and-set keeps an overlap from counting a
// transition twice.
func (m *AgentMonitor) RunLeader(ctx context.Context, lease Lease, sub SubscribeFunc, sweepEvery, renewEvery time.Duration) {
	var unsub func() error
	leader := false
	stopLeading := func() {
		if unsub != nil {
			_ = unsub()
			unsub = nil
		}
		leader = false
	}
	defer func() {
		stopLeading()
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = lease.Release(rctx)
	}()
	renew := time.NewTicker(renewEvery)
	defer renew.Stop()
	sweep := time.NewTicker(sweepEvery)
	defer sweep.Stop()
	for {
		var ok bool
		var err error
		if leader {
			ok, err = lease.Renew(ctx)
		} else {
			ok, err = lease.Acquire(ctx)
		}
		if err != nil && ctx.Err() == nil {
			m.log().Warn("agent monitor lease", "err", err)
		}
		switch {
		case ok && !leader:
			u, serr := sub(m.HandleStatus)
			if serr != nil {
				m.log().Warn("agent state not tracked: subscribe failed", "err", serr)
				_ = lease.Release(ctx)
				break
			}
			unsub, leader = u, true
			m.log().Info("agent monitor: this replica keeps the agent state")
		case !ok && leader:
			stopLeading()
			m.log().Info("agent monitor: another replica keeps the agent state")
		}
		select {
		case <-ctx.Done():
			return
		case <-renew.C:
		case <-sweep.C:
			if leader {
				safe.Do("agent sweep", func() {
					if err := m.Sweep(ctx); err != nil && ctx.Err() == nil {
						m.log().Warn("agent sweep failed", "err", err)
					}
				})
			}
		}
	}
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

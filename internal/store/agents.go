package store

import (
	"context"
	"fmt"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
)

// agentRow is the agent state of a server with the agent transport: the
// id of its current enrollment and what the gateway last reported. The
// agent's secret is not here: only its hash, in the NATS KV bucket
// LCM_AGENTS (agentgw).
type agentRow struct {
	ServerID      string `gorm:"primaryKey;size:36"`
	AgentID       string `gorm:"size:36;not null;default:'';index"`
	TokenIssuedAt *time.Time
	Connected     bool `gorm:"not null;default:false"`
	LastSeenAt    *time.Time
	Version       string `gorm:"size:128;not null;default:''"`
	Hostname      string `gorm:"size:255;not null;default:''"`
	Gateway       string `gorm:"size:255;not null;default:''"`
	Capability    int    `gorm:"not null;default:0"`
	UpdatedAt     time.Time
}

func (agentRow) TableName() string { return "server_agents" }

func (r agentRow) state() *domain.AgentState {
	return &domain.AgentState{AgentID: r.AgentID, TokenIssuedAt: r.TokenIssuedAt, Connected: r.Connected,
		LastSeenAt: r.LastSeenAt, Version: r.Version, Hostname: r.Hostname, Gateway: r.Gateway, Capability: r.Capability}
}

// addAgents fills Agent of the agent servers among out.
func (s *Store) addAgents(ctx context.Context, out []domain.Server) error {
	var ids []string
	for _, srv := range out {
		if srv.Transport == domain.TransportAgent {
			ids = append(ids, srv.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	q := s.conn(ctx)
	if len(ids) <= decorateInMax {
		q = q.Where("server_id IN ?", ids)
	}
	var rows []agentRow
	if err := q.Find(&rows).Error; err != nil {
		return mapErr(err, "server agents")
	}
	byID := make(map[string]agentRow, len(rows))
	for _, r := range rows {
		byID[r.ServerID] = r
	}
	for i := range out {
		if out[i].Transport != domain.TransportAgent {
			continue
		}
		r := byID[out[i].ID]
		r.ServerID = out[i].ID
		out[i].Agent = r.state()
	}
	return nil
}

// AgentOf returns the agent state of a server (empty when it never had a
// token).
func (s *Store) AgentOf(ctx context.Context, serverID string) (domain.AgentState, error) {
	var rows []agentRow
	if err := s.conn(ctx).Where("server_id = ?", serverID).Limit(1).Find(&rows).Error; err != nil {
		return domain.AgentState{}, mapErr(err, "server agent")
	}
	if len(rows) == 0 {
		return domain.AgentState{}, nil
	}
	return *rows[0].state(), nil
}

// SetAgentID records a new enrollment of a server: the new agent id, not
// connected yet. It returns the previous agent id ("" if none).
func (s *Store) SetAgentID(ctx context.Context, serverID, agentID string, at time.Time) (string, error) {
	var old string
	err := s.InTx(ctx, func(tx *Store) error {
		var rows []agentRow
		if err := tx.conn(ctx).Where("server_id = ?", serverID).Limit(1).Find(&rows).Error; err != nil {
			return mapErr(err, "server agent")
		}
		row := agentRow{ServerID: serverID, AgentID: agentID, TokenIssuedAt: &at, UpdatedAt: at}
		if len(rows) == 0 {
			return mapErr(tx.conn(ctx).Create(&row).Error, "server agent")
		}
		old = rows[0].AgentID
		return mapErr(tx.conn(ctx).Model(&agentRow{ServerID: serverID}).
			Select("agent_id", "token_issued_at", "connected", "updated_at").Updates(&row).Error, "server agent")
	})
	return old, err
}

// AgentReport is one state report of the gateway about an agent.
type AgentReport struct {
	AgentID   string
	Connected bool
	Version   string
	Hostname  string
	// Gateway names the reporting gateway; Capability is the agent's
	// protocol version (0: unknown, kept as stored).
	Gateway    string
	Capability int
	At         time.Time
}

// RecordAgentState stores a report for the server whose current agent id
// it names; a report of a replaced agent id changes nothing. It returns
// the server id ("" when no server has this agent id) and whether the
// connected state changed. The change is a compare-and-set on the stored
// state, so of two writers recording the same transition (replicas, a
// sweep) exactly one sees changed.
func (s *Store) RecordAgentState(ctx context.Context, r AgentReport) (serverID string, changed bool, err error) {
	if r.AgentID == "" {
		return "", false, nil
	}
	for range 5 {
		var rows []agentRow
		if err := s.conn(ctx).Where("agent_id = ?", r.AgentID).Limit(1).Find(&rows).Error; err != nil {
			return "", false, mapErr(err, "server agent")
		}
		if len(rows) == 0 {
			return "", false, nil
		}
		cur := rows[0]
		row := agentRow{Connected: r.Connected, LastSeenAt: &r.At, UpdatedAt: r.At, Version: cur.Version, Hostname: cur.Hostname,
			Gateway: cur.Gateway, Capability: cur.Capability}
		if r.Version != "" {
			row.Version = r.Version
		}
		if r.Hostname != "" {
			row.Hostname = r.Hostname
		}
		if r.Gateway != "" {
			row.Gateway = r.Gateway
		}
		if r.Capability > 0 {
			row.Capability = r.Capability
		}
		res := s.conn(ctx).Model(&agentRow{}).Where("server_id = ? AND agent_id = ? AND connected = ?", cur.ServerID, r.AgentID, cur.Connected).
			Select("connected", "last_seen_at", "version", "hostname", "gateway", "capability", "updated_at").Updates(&row)
		if res.Error != nil {
			return "", false, mapErr(res.Error, "server agent")
		}
		if res.RowsAffected == 1 {
			return cur.ServerID, cur.Connected != r.Connected, nil
		}
		// Another writer changed the state in between: read it again.
	}
	return "", false, fmt.Errorf("store: agent %s state changed concurrently too often", r.AgentID)
}

// SilentAgents lists the servers whose agent was connected once but is not
// connected now or was not heard from since before.
func (s *Store) SilentAgents(ctx context.Context, before time.Time) ([]string, error) {
	var rows []agentRow
	err := s.conn(ctx).Select("server_id").Where("agent_id <> '' AND last_seen_at IS NOT NULL AND (connected = ? OR last_seen_at < ?)",
		false, before).Find(&rows).Error
	if err != nil {
		return nil, mapErr(err, "server agents")
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.ServerID
	}
	return out, nil
}

// MarkAgentDisconnected records that a server's agent is gone (silent for
// too long). Only a real change is written, so repeated sweeps do not
// churn the server list cache.
func (s *Store) MarkAgentDisconnected(ctx context.Context, serverID string) error {
	return mapErr(s.conn(ctx).Model(&agentRow{}).Where("server_id = ? AND connected = ?", serverID, true).
		Updates(map[string]any{"connected": false, "updated_at": time.Now().UTC()}).Error, "server agent")
}

package fleet

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lcmproject/lcm/internal/agentdist"
	"github.com/lcmproject/lcm/internal/agentgw"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/store"
)

// AgentConfig connects the fleet service to the agent transport.
type AgentConfig struct {
	// Credentials is the agent credential bucket; Bus reaches the
	// gateways (to disconnect a replaced agent at once).
	Credentials agentgw.CredentialStore
	Bus         agentgw.Messenger
	// Port is the agent listener's port (agent_port; 0: disabled) and
	// Fingerprint the SHA-256 of the certificate it presents.
	Port        int
	Fingerprint string
	// Gateways are separately run lcm-agentgw processes (config
	// agent_gateways). When set, tokens name one of them — among those
	// serving the server's segment, spread by server id — instead of
	// the agent listener above.
	Gateways []AgentGateway
	Dist     *agentdist.Dist
}

// AgentGateway is a separately run gateway as agents reach it.
type AgentGateway struct {
	Name        string
	URL         string
	Fingerprint string
	// Segments it serves; empty: all.
	Segments []string
}

// pick returns the gateway a server's agent is sent to: one serving its
// segment, the same one for the same server (FNV of its id), so tokens
// of a fleet spread evenly over equal gateways.
func pickGateway(gws []AgentGateway, serverID, segment string) (AgentGateway, bool) {
	var ok []AgentGateway
	for _, g := range gws {
		if len(g.Segments) == 0 || slices.Contains(g.Segments, segment) {
			ok = append(ok, g)
		}
	}
	if len(ok) == 0 {
		return AgentGateway{}, false
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(serverID))
	return ok[int(h.Sum32()%uint32(len(ok)))], true
}

// SetAgents enables agent servers.
func (s *Service) SetAgents(c AgentConfig) { s.agents = &c }

// ErrAgentsDisabled: the agent listener is off or the bus has no agent
// bucket.
var errAgentsDisabled = &domain.Error{Kind: domain.ErrConflict, Code: "agents_disabled",
	Message: "no agent gateway: the agent listener is disabled (agent_port is 0) and no agent_gateways are configured, or the agent credential bucket is unavailable"}

// CreateAgentRequest describes a new server managed through lcm-agent.
type CreateAgentRequest struct {
	Name     string
	GroupIDs []string
	Segment  string
}

// CreateAgent stores a new agent server. It has no host or SSH login: the
// agent connects out; its token comes from IssueAgentToken.
func (s *Service) CreateAgent(ctx context.Context, p *domain.Principal, r CreateAgentRequest) (domain.Server, error) {
	r.Name = strings.TrimSpace(r.Name)
	if err := validName(r.Name); err != nil {
		return domain.Server{}, err
	}
	if err := s.checkPlacement(ctx, p, r.GroupIDs, r.Segment); err != nil {
		return domain.Server{}, err
	}
	srv := domain.Server{Name: r.Name, Transport: domain.TransportAgent, Segment: r.Segment, GroupIDs: r.GroupIDs,
		Status: domain.ServerUnknown, AuthMethod: domain.TransportAgent, Joined: true}
	srv, err := s.store.CreateServer(ctx, store.NewServer{Server: srv})
	if err != nil {
		return domain.Server{}, err
	}
	srv.Agent = &domain.AgentState{}
	return srv, nil
}

// AgentToken is a freshly issued enrollment token with what the operator
// needs to install the agent. Token is shown once and never stored.
type AgentToken struct {
	ServerID   string
	AgentID    string
	Token      string
	GatewayURL string
	// Install maps an architecture to its copy-paste install command and
	// Checksums to the binary's SHA-256; architectures whose binary is
	// not installed are missing.
	Install   map[string]string
	Checksums map[string]string
	IssuedAt  time.Time
	// Replaced is the previous agent id, now revoked ("" if none).
	Replaced string
}

// IssueAgentToken creates a new enrollment for an agent server: a new
// agent id and one-time token (only its secret's hash is stored). The
// previous agent id is revoked and a connected agent with it disconnected.
// host is the host name the operator reached the UI with (the agent
// gateway is on the same host, port agent_port); baseURL is the UI's URL
// for the download in the install command.
func (s *Service) IssueAgentToken(ctx context.Context, p *domain.Principal, id, host, baseURL string) (AgentToken, error) {
	srv, err := s.store.GetServer(ctx, store.ScopeOf(p), id)
	if err != nil {
		return AgentToken{}, err
	}
	if srv.Transport != domain.TransportAgent {
		return AgentToken{}, domain.Invalid("not_agent_server", "the server is managed over SSH, not through lcm-agent")
	}
	a := s.agents
	if a == nil || a.Credentials == nil {
		return AgentToken{}, errAgentsDisabled
	}
	var gw, fp string
	switch {
	case len(a.Gateways) > 0:
		g, ok := pickGateway(a.Gateways, srv.ID, srv.Segment)
		if !ok {
			return AgentToken{}, &domain.Error{Kind: domain.ErrConflict, Code: "no_agent_gateway",
				Message: fmt.Sprintf("no configured agent gateway serves segment %q (agent_gateways[].segments)", srv.Segment)}
		}
		gw, fp = g.URL, g.Fingerprint
	case a.Port != 0 && a.Fingerprint != "":
		if host == "" || strings.ContainsAny(host, "/?#@ ") {
			return AgentToken{}, domain.Invalid("invalid_host", "the request names no usable host")
		}
		gw, fp = (&url.URL{Scheme: "wss", Host: net.JoinHostPort(host, strconv.Itoa(a.Port)), Path: "/mqtt"}).String(), a.Fingerprint
	default:
		return AgentToken{}, errAgentsDisabled
	}
	token, agentID, err := agentgw.Enroll(ctx, a.Credentials, srv.ID, gw, fp)
	if err != nil {
		return AgentToken{}, err
	}
	now := time.Now().UTC()
	old, err := s.store.SetAgentID(ctx, srv.ID, agentID, now)
	if err != nil {
		return AgentToken{}, err
	}
	if old != "" && old != agentID {
		if err := agentgw.Revoke(ctx, a.Credentials, old); err != nil && !errors.Is(err, agentgw.ErrUnknownAgent) {
			s.log.Error("old agent credentials not revoked", "server_id", srv.ID, "agent_id", old, "err", err)
			return AgentToken{}, err
		}
		if a.Bus != nil {
			if err := agentgw.Kick(a.Bus, old); err != nil {
				s.log.Warn("replaced agent not disconnected at once (the gateway's revalidation will)", "agent_id", old, "err", err)
			}
		}
	}
	out := AgentToken{ServerID: srv.ID, AgentID: agentID, Token: token, GatewayURL: gw, IssuedAt: now, Replaced: old,
		Install: map[string]string{}, Checksums: map[string]string{}}
	if a.Dist != nil {
		for _, arch := range agentdist.Arches {
			b, err := a.Dist.Find(arch)
			if err != nil {
				continue
			}
			out.Checksums[arch] = b.SHA256
			out.Install[arch] = agentdist.InstallCommand(baseURL, b, token)
		}
	}
	return out, nil
}

// AgentBinary returns the lcm-agent binary for arch (the public download).
func (s *Service) AgentBinary(arch string) (agentdist.Binary, error) {
	if !agentdist.ValidArch(arch) {
		return agentdist.Binary{}, domain.Invalid("invalid_arch", "arch must be one of "+strings.Join(agentdist.Arches, ", "))
	}
	if s.agents == nil || s.agents.Dist == nil {
		return agentdist.Binary{}, domain.NotFound("agent binary")
	}
	b, err := s.agents.Dist.Find(arch)
	if errors.Is(err, agentdist.ErrUnavailable) {
		return agentdist.Binary{}, domain.NotFound("agent binary for " + arch)
	}
	return b, err
}

// AgentConnected runs a connectivity check, as the system, on an agent
// server whose agent just connected: it records the facts (OS, kernel,
// package family) that SSH servers learn at join, and after a reboot the
// new ones. A busy server is skipped (its running job contacts it anyway).
func (s *Service) AgentConnected(ctx context.Context, serverID string) {
	srv, err := s.store.GetServer(ctx, store.SystemScope, serverID)
	if err != nil || srv.Transport != domain.TransportAgent {
		return
	}
	if _, err := s.jobs.SubmitServer(ctx, nil, srv, domain.JobConnectivity, nil); err != nil && !errors.Is(err, domain.ErrConflict) {
		s.log.Warn("connectivity check after agent connect not submitted", "server_id", serverID, "err", err)
	}
}

package agentgw

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/lcmproject/lcm/internal/bus"
	"github.com/lcmproject/lcm/internal/safe"
	"github.com/lcmproject/lcm/pkg/agentproto"
)

// Messenger is the NATS side of the gateway and the Executor
// (*bus.Bus satisfies it).
type Messenger interface {
	PublishAgent(agentID, channel string, data []byte) error
	SubscribeAgent(agentID, channel string, fn func(data []byte)) (func() error, error)
	SubscribeAgents(channel string, fn func(agentID string, data []byte)) (func() error, error)
}

// RevalidateInterval is how often the gateway re-reads the records of
// connected agents and disconnects those revoked, deleted or re-enrolled.
// Why one minute: revocation takes effect quickly without a KV watch per
// agent; the cost is one KV read per connected agent per minute.
const RevalidateInterval = time.Minute

// Options configure a Gateway.
type Options struct {
	Bus         Messenger
	Credentials CredentialStore
	Logger      *slog.Logger
	// Name identifies this gateway in the agents' state (default: the
	// host name); at most 255 bytes.
	Name string
	// RevalidateInterval overrides RevalidateInterval (tests).
	RevalidateInterval time.Duration
	// MaxAgents bounds the agents connected at once (default
	// DefaultMaxAgents); MaxPending the connections upgraded but not yet
	// authenticated (default DefaultMaxPending); ConnectTimeout how long a
	// connection may take from the upgrade to its CONNECT being decided
	// (default DefaultConnectTimeout).
	MaxAgents      int
	MaxPending     int
	ConnectTimeout time.Duration
}

// Limits against hostile or broken clients. Every connection costs the
// gateway memory before it has proven anything, so what an unauthenticated
// peer can hold is bounded in number and time; what an authenticated agent
// can queue is bounded per connection.
const (
	// DefaultMaxAgents: the budget is 10,000 agents per gateway
	// (docs/benchmarks.md); beyond 20,000 a CONNECT is refused "server
	// busy" and the agent retries with backoff, presumably on another
	// gateway.
	DefaultMaxAgents = 20000
	// DefaultMaxPending: upgraded WebSockets whose CONNECT is not decided
	// yet. Why 1,024: a whole fleet reconnecting after a gateway restart
	// authenticates in a few hundred at a time (one KV read each), while
	// a flood of idle sockets is refused with 503 before it costs more.
	DefaultMaxPending = 1024
	// DefaultConnectTimeout: from the upgrade until CONNECT is decided.
	// Why 10 s: an agent sends CONNECT right after the upgrade; a
	// slow-loris peer trickling bytes is cut off.
	DefaultConnectTimeout = 10 * time.Second
	// maxWritesPending is the queue of packets to one agent. Why 64: the
	// gateway sends an agent only commands and cancels, one or two per
	// job; mochi's default (8,192 slots) costs 64 KiB per connection.
	maxWritesPending = 64
	// receiveMaximum bounds unacknowledged QoS 1 messages per direction
	// and connection (an agent streams output in 32 KiB chunks; 64 in
	// flight is 2 MiB).
	receiveMaximum = 64
)

// Gateway is a running agent gateway. Serve Handler() on the agent
// listener; Close ends every agent connection.
type Gateway struct {
	srv       *mqtt.Server
	ln        *wsListener
	hook      *hook
	log       *slog.Logger
	unsub     func() error
	stop      context.CancelFunc
	done      chan struct{}
	closeOnce sync.Once
}

// New starts the embedded broker and the NATS → agent bridge.
func New(o Options) (*Gateway, error) {
	if o.Bus == nil || o.Credentials == nil {
		return nil, errors.New("agentgw: Bus and Credentials are required")
	}
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	log = log.With("component", "agentgw")
	caps := mqtt.NewDefaultServerCapabilities()
	caps.MaximumPacketSize = agentproto.MaxMessageBytes
	caps.MaximumQos = 1                   // the protocol uses QoS 1 only
	caps.RetainAvailable = 0              // nothing an agent sends is retained
	caps.WildcardSubAvailable = 0         // an agent subscribes to exactly its cmd topic
	caps.SharedSubAvailable = 0           //
	caps.MinimumProtocolVersion = 5       // lcm-agent speaks MQTT 5 (user properties at enrollment)
	caps.MaximumSessionExpiryInterval = 0 // no state kept for disconnected agents
	caps.TopicAliasMaximum = 0            // aliases would be per-connection state a client controls
	caps.SubIDAvailable = 0               //
	caps.MaximumClientWritesPending = maxWritesPending
	caps.ReceiveMaximum = receiveMaximum
	caps.MaximumInflight = receiveMaximum
	caps.MaximumMessageExpiryInterval = 0
	caps.MaximumClients = int64(orDefault(o.MaxAgents, DefaultMaxAgents))
	srv := mqtt.New(&mqtt.Options{
		InlineClient: true,
		Capabilities: caps,
		Logger:       log,
		// $SYS topics are unreachable for agents (ACL); publish them rarely.
		SysTopicResendInterval: 3600,
	})
	ln := newWSListener(log, orDefault(o.MaxPending, DefaultMaxPending), o.ConnectTimeout)
	g := &Gateway{srv: srv, ln: ln, log: log, done: make(chan struct{}),
		hook: &hook{creds: o.Credentials, bus: o.Bus, log: log, name: gatewayName(o.Name)}}
	g.hook.disconnect = srv.DisconnectClient
	if err := srv.AddHook(g.hook, nil); err != nil {
		return nil, fmt.Errorf("agentgw: %w", err)
	}
	if err := srv.AddListener(g.ln); err != nil {
		return nil, fmt.Errorf("agentgw: %w", err)
	}
	if err := srv.Serve(); err != nil {
		return nil, fmt.Errorf("agentgw: %w", err)
	}
	g.ln.setEstablish(srv.EstablishConnection)
	unsub, err := o.Bus.SubscribeAgents(string(agentproto.ChannelCmd), g.toAgent)
	if err != nil {
		_ = srv.Close()
		return nil, err
	}
	unkick, err := o.Bus.SubscribeAgents(kickChannel, g.kick)
	if err != nil {
		_ = unsub()
		_ = srv.Close()
		return nil, err
	}
	g.unsub = func() error { _ = unkick(); return unsub() }
	interval := o.RevalidateInterval
	if interval <= 0 {
		interval = RevalidateInterval
	}
	ctx, cancel := context.WithCancel(context.Background())
	g.stop = cancel
	go func() { // a panic restarts the loop (recovered and counted)
		defer close(g.done)
		safe.Supervise(ctx, "agent revalidation", func(ctx context.Context) error { g.revalidate(ctx, interval); return nil })
	}()
	return g, nil
}

// gatewayName is the name a gateway stamps on status messages.
func gatewayName(name string) string {
	if name == "" {
		name, _ = os.Hostname()
	}
	if len(name) > 255 {
		name = name[:255]
	}
	return name
}

// Name is the name this gateway reports itself by.
func (g *Gateway) Name() string { return g.hook.name }

func orDefault(v, d int) int {
	if v > 0 {
		return v
	}
	return d
}

// toAgent publishes a command envelope from NATS to the agent's cmd topic.
// Agents not connected here are no one's subscribers: the message is
// dropped, and the Executor notices the missing Accepted.
func (g *Gateway) toAgent(agentID string, data []byte) {
	if !agentproto.ValidAgentID(agentID) {
		return
	}
	if err := g.srv.Publish(agentproto.Topic(agentID, agentproto.ChannelCmd), data, false, 1); err != nil {
		g.log.Warn("command not published to agent", "agent_id", agentID, "err", err)
	}
}

// kickChannel is the NATS-only channel (lcm.agent.<id>.kick, never an MQTT
// topic) on which the control plane asks every gateway to recheck one
// agent's record at once, after it replaced or revoked its credentials.
const kickChannel = "kick"

// Kick asks every gateway to recheck agentID's record now and disconnect
// it if the record no longer admits its connection (instead of at the next
// revalidation round).
func Kick(b Messenger, agentID string) error {
	return b.PublishAgent(agentID, kickChannel, []byte(`{}`))
}

// kick rechecks one connected agent; the payload is ignored (the record
// decides, so a stray message can disconnect nobody who is still valid).
func (g *Gateway) kick(agentID string, _ []byte) {
	cl, ok := g.srv.Clients.Get(agentID)
	if !ok || cl.Net.Inline || cl.Closed() {
		return
	}
	v, ok := g.hook.sessions.Load(cl.ID)
	hash, _ := v.(string)
	err := ErrUnknownAgent
	if ok {
		ctx, cancel := context.WithTimeout(context.Background(), authTimeout)
		err = stillValid(ctx, g.hook.creds, cl.ID, hash)
		cancel()
	}
	switch {
	case err == nil:
	case errors.Is(err, ErrUnknownAgent) || errors.Is(err, ErrRevoked) || errors.Is(err, ErrBadSecret):
		g.log.Warn("agent disconnected on request: credentials no longer valid", "agent_id", cl.ID, "err", err)
		_ = g.srv.DisconnectClient(cl, packets.ErrNotAuthorized)
	default:
		// A transient error: the next revalidation round decides.
		g.log.Warn("agent recheck on request skipped", "agent_id", cl.ID, "err", err)
	}
}

// Handler serves /mqtt (WebSocket upgrade) and answers everything else on
// the agent listener with a JSON 404.
func (g *Gateway) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/mqtt", g.ln)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSONError(w, http.StatusNotFound, "the agent listener serves only /mqtt", "not_found")
	})
	return safe.HTTP("agent listener", mux)
}

// revalidate disconnects connected agents whose record no longer admits
// them. Unlike CONNECT it keeps a connection on a transient bus error: a
// NATS hiccup must not drop the whole fleet, and a definite answer
// (unknown, revoked, other secret) still disconnects at the next round.
func (g *Gateway) revalidate(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, cl := range g.srv.Clients.GetAll() {
			if cl.Net.Inline || cl.Closed() {
				continue
			}
			v, ok := g.hook.sessions.Load(cl.ID)
			hash, _ := v.(string)
			var err error
			if !ok {
				err = ErrUnknownAgent
			} else {
				cctx, cancel := context.WithTimeout(ctx, authTimeout)
				err = stillValid(cctx, g.hook.creds, cl.ID, hash)
				cancel()
			}
			if err == nil {
				continue
			}
			if errors.Is(err, ErrUnknownAgent) || errors.Is(err, ErrRevoked) || errors.Is(err, ErrBadSecret) {
				g.log.Warn("agent disconnected: credentials no longer valid", "agent_id", cl.ID, "err", err)
				_ = g.srv.DisconnectClient(cl, packets.ErrNotAuthorized)
				continue
			}
			g.log.Warn("agent revalidation skipped", "agent_id", cl.ID, "err", err)
		}
	}
}

// Close stops the bridge and ends every agent connection.
func (g *Gateway) Close() error {
	g.closeOnce.Do(func() {
		g.stop()
		<-g.done
		if g.unsub != nil {
			_ = g.unsub()
		}
		for _, cl := range g.srv.Clients.GetAll() {
			if !cl.Net.Inline {
				_ = g.srv.DisconnectClient(cl, packets.ErrServerShuttingDown)
			}
		}
		g.ln.shutdown()
		_ = g.srv.Close()
	})
	return nil
}

var _ Messenger = (*bus.Bus)(nil)
var _ CredentialStore = (*bus.AgentCredentials)(nil)

// Package agentsim simulates many lcm-agents from one process for load
// tests and benchmarks of the agent gateway: each simulated agent is one
// MQTT 5 connection over a TLS WebSocket, as lcm-agent's, but with one
// goroutine per connection and small buffers so 10,000 of them fit in one
// process. An agent answers commands with a Responder instead of a shell
// (see FleetResponder for Debian-like answers). It is never a substitute
// for the real lcm-agent, which the agent tests run too.
package agentsim

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/eclipse/paho.golang/packets"
	"github.com/gorilla/websocket"

	"github.com/lcmproject/lcm/internal/fleetsim"
	"github.com/lcmproject/lcm/pkg/agentproto"
)

// Agent is one simulated agent's credentials and, optionally, its own
// Responder (instead of Options.Respond).
type Agent struct {
	ID, Secret string
	Respond    Responder
}

// Responder answers one command: it writes the output and returns the
// exit code. It must return promptly once ctx ends (a cancel).
type Responder func(ctx context.Context, c *agentproto.Command, stdout, stderr io.Writer) int

// Options configure the simulated agents.
type Options struct {
	// URL is the gateway, wss://host:port/mqtt.
	URL string
	// Fingerprint is the pinned SHA-256 of the gateway's certificate;
	// empty skips the check (tests on httptest certificates).
	Fingerprint string
	// Sources are local IP addresses connections are made from, in turn
	// (several loopback addresses give more than one ephemeral port range).
	Sources []string
	// Respond answers commands; nil answers every command with exit 0
	// and no output.
	Respond Responder
	// KeepAlive in seconds; 0 means 300.
	KeepAlive uint16
}

// Conn is one connected simulated agent.
type Conn struct {
	Agent
	o      *Options
	ws     *websocket.Conn
	wmu    sync.Mutex
	nextID atomic.Uint32
	closed chan struct{}
	err    atomic.Pointer[error]

	mu      sync.Mutex
	running map[string]context.CancelFunc
}

// Commands counts commands answered by all simulated agents of the process.
var Commands atomic.Int64

var source atomic.Uint32

func (o *Options) dialer() *websocket.Dialer {
	d := &websocket.Dialer{
		Subprotocols:     []string{"mqtt"},
		HandshakeTimeout: 30 * time.Second,
		ReadBufferSize:   2048,
		WriteBufferSize:  2048,
		WriteBufferPool:  writePool,
		TLSClientConfig:  &tls.Config{InsecureSkipVerify: true}, // pinned below
	}
	if fp := agentproto.NormalizeFingerprint(o.Fingerprint); fp != "" {
		d.TLSClientConfig.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 || agentproto.FingerprintSHA256(cs.PeerCertificates[0].Raw) != fp {
				return errors.New("agentsim: gateway certificate does not match the pinned fingerprint")
			}
			return nil
		}
	}
	if len(o.Sources) > 0 {
		src := o.Sources[int(source.Add(1))%len(o.Sources)]
		nd := &net.Dialer{Timeout: 30 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
		d.NetDialContext = nd.DialContext
	}
	return d
}

var writePool = &sync.Pool{}

// Dial connects one agent. props are extra CONNECT user properties (the
// enrollment property). It returns after the CONNACK: an error for a
// refused connection.
func Dial(ctx context.Context, o *Options, a Agent, props ...packets.User) (*Conn, error) {
	ws, resp, err := o.dialer().DialContext(ctx, o.URL, http.Header{})
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("agentsim: websocket %s: %w", resp.Status, err)
		}
		return nil, fmt.Errorf("agentsim: websocket: %w", err)
	}
	ka := o.KeepAlive
	if ka == 0 {
		ka = 300
	}
	c := &Conn{Agent: a, o: o, ws: ws, closed: make(chan struct{}), running: map[string]context.CancelFunc{}}
	cp := packets.NewControlPacket(packets.CONNECT)
	cn := cp.Content.(*packets.Connect)
	cn.ClientID, cn.Username, cn.UsernameFlag = a.ID, a.ID, true
	cn.Password, cn.PasswordFlag, cn.CleanStart, cn.KeepAlive = []byte(a.Secret), true, true, ka
	cn.Properties.User = props
	if dl, ok := ctx.Deadline(); ok {
		_ = ws.SetReadDeadline(dl)
	}
	if err := c.write(cp); err != nil {
		ws.Close()
		return nil, err
	}
	p, err := c.read()
	if err != nil {
		ws.Close()
		return nil, fmt.Errorf("agentsim: connack: %w", err)
	}
	ca, ok := p.Content.(*packets.Connack)
	if !ok || ca.ReasonCode != 0 {
		ws.Close()
		return nil, fmt.Errorf("agentsim: connect refused: %v", p)
	}
	_ = ws.SetReadDeadline(time.Time{})
	sp := packets.NewControlPacket(packets.SUBSCRIBE)
	sub := sp.Content.(*packets.Subscribe)
	sub.PacketID = uint16(c.nextID.Add(1))
	sub.Subscriptions = []packets.SubOptions{{Topic: agentproto.Topic(a.ID, agentproto.ChannelCmd), QoS: 1}}
	if err := c.write(sp); err != nil {
		ws.Close()
		return nil, err
	}
	p, err = c.read()
	if sa, ok := p.Content.(*packets.Suback); err != nil || !ok || len(sa.Reasons) != 1 || sa.Reasons[0] >= 0x80 {
		ws.Close()
		return nil, fmt.Errorf("agentsim: subscribe refused: %v %v", p, err)
	}
	go c.loop(time.Duration(ka) * time.Second / 2)
	return c, nil
}

func (c *Conn) write(cp *packets.ControlPacket) error {
	var b bytes.Buffer
	if _, err := cp.WriteTo(&b); err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.ws.WriteMessage(websocket.BinaryMessage, b.Bytes())
}

func (c *Conn) read() (*packets.ControlPacket, error) {
	op, r, err := c.ws.NextReader()
	if err != nil {
		return nil, err
	}
	if op != websocket.BinaryMessage {
		return nil, errors.New("agentsim: non-binary websocket message")
	}
	return packets.ReadPacket(r)
}

// Done is closed when the connection has ended.
func (c *Conn) Done() <-chan struct{} { return c.closed }

// Err is why the connection ended (nil while it is up or after Close).
func (c *Conn) Err() error {
	if p := c.err.Load(); p != nil {
		return *p
	}
	return nil
}

// Close disconnects the agent.
func (c *Conn) Close() {
	d := packets.NewControlPacket(packets.DISCONNECT)
	_ = c.write(d)
	_ = c.ws.Close()
	<-c.closed
}

// loop reads packets until the connection ends; a ticker sends PINGREQs.
func (c *Conn) loop(ping time.Duration) {
	stop := make(chan struct{})
	go func() {
		t := time.NewTicker(ping)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if c.write(packets.NewControlPacket(packets.PINGREQ)) != nil {
					return
				}
			}
		}
	}()
	defer func() {
		close(stop)
		c.mu.Lock()
		for _, cancel := range c.running {
			cancel()
		}
		c.mu.Unlock()
		close(c.closed)
	}()
	for {
		p, err := c.read()
		if err != nil {
			var ce *websocket.CloseError
			if !errors.As(err, &ce) && !errors.Is(err, net.ErrClosed) {
				c.err.Store(&err)
			}
			return
		}
		switch pk := p.Content.(type) {
		case *packets.Publish:
			if pk.QoS > 0 {
				ack := packets.NewControlPacket(packets.PUBACK)
				ack.Content.(*packets.Puback).PacketID = pk.PacketID
				_ = c.write(ack)
			}
			c.handle(pk.Payload)
		case *packets.Disconnect:
			err := fmt.Errorf("agentsim: disconnected by the gateway: reason 0x%02x", pk.ReasonCode)
			c.err.Store(&err)
			return
		}
	}
}

// Publish sends an envelope on one of the agent's channels (QoS 0: the
// simulator does not wait for PUBACKs).
func (c *Conn) Publish(ch agentproto.Channel, m any) error {
	b, err := agentproto.Encode(m)
	if err != nil {
		return err
	}
	cp := packets.NewControlPacket(packets.PUBLISH)
	p := cp.Content.(*packets.Publish)
	p.Topic, p.Payload = agentproto.Topic(c.ID, ch), b
	return c.write(cp)
}

func (c *Conn) handle(payload []byte) {
	m, err := agentproto.Decode(payload)
	if err != nil {
		return
	}
	switch m := m.(type) {
	case *agentproto.Cancel:
		c.mu.Lock()
		if cancel := c.running[m.ID]; cancel != nil {
			cancel()
		}
		c.mu.Unlock()
	case *agentproto.Command:
		ctx, cancel := context.WithCancel(context.Background())
		if m.TimeoutMS > 0 {
			ctx, cancel = context.WithTimeout(context.Background(), time.Duration(m.TimeoutMS)*time.Millisecond)
		}
		c.mu.Lock()
		if _, dup := c.running[m.ID]; dup {
			c.mu.Unlock()
			cancel()
			return
		}
		c.running[m.ID] = cancel
		c.mu.Unlock()
		go c.run(ctx, cancel, m)
	}
}

// chunkWriter turns writes into Output envelopes.
type chunkWriter struct {
	c      *Conn
	id     string
	stream string
	mu     *sync.Mutex
	seq    *int
}

func (w *chunkWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		k := min(len(p), agentproto.MaxChunkBytes)
		w.mu.Lock()
		*w.seq++
		o := agentproto.Output{Header: agentproto.NewHeader(agentproto.TypeOutput, w.id), Seq: *w.seq, Stream: w.stream,
			Data: append([]byte(nil), p[:k]...)}
		err := w.c.Publish(agentproto.ChannelRes, &o)
		w.mu.Unlock()
		if err != nil {
			return 0, err
		}
		p = p[k:]
	}
	return n, nil
}

func (c *Conn) run(ctx context.Context, cancel context.CancelFunc, m *agentproto.Command) {
	defer func() {
		cancel()
		c.mu.Lock()
		delete(c.running, m.ID)
		c.mu.Unlock()
	}()
	start := time.Now()
	if c.Publish(agentproto.ChannelRes, &agentproto.Accepted{Header: agentproto.NewHeader(agentproto.TypeAccepted, m.ID)}) != nil {
		return
	}
	var mu sync.Mutex
	seq := 0
	code := 0
	respond := c.Respond
	if respond == nil {
		respond = c.o.Respond
	}
	if respond != nil {
		code = respond(ctx, m, &chunkWriter{c: c, id: m.ID, stream: agentproto.StreamStdout, mu: &mu, seq: &seq},
			&chunkWriter{c: c, id: m.ID, stream: agentproto.StreamStderr, mu: &mu, seq: &seq})
	}
	res := agentproto.Result{Header: agentproto.NewHeader(agentproto.TypeResult, m.ID), ExitCode: code,
		DurationMS: time.Since(start).Milliseconds()}
	if ctx.Err() != nil {
		res.ExitCode, res.Code = -1, agentproto.CodeCancelled
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			res.Code = agentproto.CodeTimeout
		}
	}
	mu.Lock()
	res.Chunks = seq
	mu.Unlock()
	Commands.Add(1)
	_ = c.Publish(agentproto.ChannelRes, &res)
}

// Online publishes the agent's heartbeat, as lcm-agent does after connecting.
func (c *Conn) Online(version string) error {
	return c.Publish(agentproto.ChannelStatus, &agentproto.Status{Header: agentproto.NewHeader(agentproto.TypeStatus, agentproto.NewID()),
		State: agentproto.StateOnline, AgentVersion: version, Hostname: "sim-" + c.ID[:8], Time: time.Now().UTC().Format(time.RFC3339)})
}

// Enroll performs an agent's enrollment connect with a token: it swaps the
// token's secret for a new one and returns the agent's credentials.
func Enroll(ctx context.Context, o *Options, token string) (Agent, error) {
	t, err := agentproto.ParseToken(token)
	if err != nil {
		return Agent{}, err
	}
	secret, err := agentproto.NewSecret()
	if err != nil {
		return Agent{}, err
	}
	c, err := Dial(ctx, o, Agent{ID: t.AgentID, Secret: t.Secret},
		packets.User{Key: agentproto.EnrollProperty, Value: agentproto.SecretHash(secret)})
	if err != nil {
		return Agent{}, err
	}
	c.Close()
	return Agent{ID: t.AgentID, Secret: secret}, nil
}

// FleetResponder answers commands like the simulated Debian host h
// (fleetsim: the same responder table and host state as its SSH hosts).
func FleetResponder(h *fleetsim.Instance) Responder {
	return func(ctx context.Context, c *agentproto.Command, stdout, stderr io.Writer) int {
		return h.Exec(ctx, c.Cmd, c.Sudo, bytes.NewReader(c.Stdin), stdout, stderr)
	}
}

// Fleet is a set of connected simulated agents.
type Fleet struct {
	Conns []*Conn
}

// ConnectAll dials every agent, parallel at most par at a time, and
// returns when all are connected (or at the first error, with those
// connected so far closed).
func ConnectAll(ctx context.Context, o *Options, agents []Agent, par int) (*Fleet, error) {
	f := &Fleet{Conns: make([]*Conn, len(agents))}
	if par <= 0 {
		par = 64
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for w := 0; w < par; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < int64(len(agents)) && cctx.Err() == nil; i = next.Add(1) - 1 {
				c, err := Dial(cctx, o, agents[i])
				if err != nil {
					once.Do(func() { first = fmt.Errorf("agent %d: %w", i, err); cancel() })
					return
				}
				f.Conns[i] = c
			}
		}()
	}
	wg.Wait()
	if first != nil {
		f.Close()
		return nil, first
	}
	return f, nil
}

// Close disconnects every agent.
func (f *Fleet) Close() {
	var wg sync.WaitGroup
	for _, c := range f.Conns {
		if c != nil {
			wg.Add(1)
			go func() { defer wg.Done(); c.Close() }()
		}
	}
	wg.Wait()
}

// OnHost runs a simulated agent on the simulated host h the way lcm-agent
// runs under systemd: connected while the host is up; when the host
// reboots (its boot counter moves) the connection drops at once, as the
// machine goes down, and the agent connects again once the host is back.
// It ends with ctx.
type OnHost struct {
	dials atomic.Int32
	done  chan struct{}
}

// Dials counts the connections made so far (1 + one per reboot).
func (h *OnHost) Dials() int { return int(h.dials.Load()) }

// Done is closed when RunOnHost has returned.
func (h *OnHost) Done() <-chan struct{} { return h.done }

// RunOnHost connects a on host h (answering with FleetResponder unless a
// has its own Respond) until ctx ends. The first connection is made
// before it returns.
func RunOnHost(ctx context.Context, o *Options, a Agent, host *fleetsim.Instance) (*OnHost, error) {
	if a.Respond == nil {
		a.Respond = FleetResponder(host)
	}
	c, err := Dial(ctx, o, a)
	if err != nil {
		return nil, err
	}
	h := &OnHost{done: make(chan struct{})}
	h.dials.Add(1)
	go func() {
		defer close(h.done)
		const poll = 20 * time.Millisecond
		boots := host.Boots()
		for {
			// Up: until ctx ends or the host reboots.
			for c != nil && host.Boots() == boots {
				select {
				case <-ctx.Done():
					c.Close()
					return
				case <-c.Done():
					c = nil // dropped by the gateway; redial below
				case <-time.After(poll):
				}
			}
			if c != nil {
				c.Close() // the machine went down
				c = nil
			}
			boots = host.Boots()
			// Down, then up again: the agent starts with the host.
			for host.Down() || c == nil {
				select {
				case <-ctx.Done():
					return
				case <-time.After(poll):
				}
				if host.Down() {
					continue
				}
				dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				nc, err := Dial(dctx, o, a)
				cancel()
				if err == nil {
					c = nc
					h.dials.Add(1)
				}
			}
		}
	}()
	return h, nil
}

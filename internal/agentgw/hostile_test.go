package agentgw

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ppk "github.com/eclipse/paho.golang/packets"
	"github.com/gorilla/websocket"

	"github.com/lcmproject/lcm/internal/remote"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/pkg/agentproto"
)

// raw is a hostile client: a WebSocket to /mqtt speaking MQTT packets by
// hand, so it can send what no well-behaved client library would.
type raw struct {
	ws  *websocket.Conn
	wmu sync.Mutex
}

func (e *env) rawDial(t *testing.T) (*raw, *http.Response, error) {
	t.Helper()
	d := websocket.Dialer{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, Subprotocols: []string{"mqtt"},
		HandshakeTimeout: 30 * time.Second, ReadBufferSize: 1024, WriteBufferSize: 1024}
	ws, resp, err := d.Dial(e.url, nil)
	if err != nil {
		return nil, resp, err
	}
	return &raw{ws: ws}, resp, nil
}

func (r *raw) send(cp *ppk.ControlPacket) error {
	var b bytes.Buffer
	if _, err := cp.WriteTo(&b); err != nil {
		return err
	}
	return r.sendBytes(b.Bytes())
}

func (r *raw) sendBytes(b []byte) error {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	return r.ws.WriteMessage(websocket.BinaryMessage, b)
}

func (r *raw) read() (*ppk.ControlPacket, error) {
	_, rd, err := r.ws.NextReader()
	if err != nil {
		return nil, err
	}
	return ppk.ReadPacket(rd)
}

// closedWithin reports whether the gateway ends the connection within d
// (reading and discarding whatever it sends until then).
func (r *raw) closedWithin(d time.Duration) bool {
	_ = r.ws.SetReadDeadline(time.Now().Add(d))
	for {
		if _, err := r.read(); err != nil {
			var ne net.Error
			return !(errors.As(err, &ne) && ne.Timeout())
		}
	}
}

func connectPacket(clientID, user, pass string, props ...ppk.User) *ppk.ControlPacket {
	cp := ppk.NewControlPacket(ppk.CONNECT)
	c := cp.Content.(*ppk.Connect)
	c.ClientID, c.CleanStart, c.KeepAlive = clientID, true, 30
	if user != "" {
		c.Username, c.UsernameFlag = user, true
	}
	if pass != "" {
		c.Password, c.PasswordFlag = []byte(pass), true
	}
	c.Properties.User = props
	return cp
}

// connack sends CONNECT and returns the CONNACK reason (0xff: none came).
func (r *raw) connack(cp *ppk.ControlPacket) byte {
	if err := r.send(cp); err != nil {
		return 0xff
	}
	_ = r.ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	p, err := r.read()
	_ = r.ws.SetReadDeadline(time.Time{})
	if err != nil {
		return 0xff
	}
	if ca, ok := p.Content.(*ppk.Connack); ok {
		return ca.ReasonCode
	}
	return 0xfe
}

func publishPacket(topic string, qos byte, retain bool, id uint16, payload []byte) *ppk.ControlPacket {
	cp := ppk.NewControlPacket(ppk.PUBLISH)
	p := cp.Content.(*ppk.Publish)
	p.Topic, p.QoS, p.Retain, p.PacketID, p.Payload = topic, qos, retain, id, payload
	return cp
}

// TestHostileClients attacks a real gateway with what a hostile MQTT client
// can send while a real enrolled lcm-agent stays connected: after each
// attack the agent still runs a command, nothing panics (a panic would end
// the test binary), and the gateway's memory and goroutines come back down.
func TestHostileClients(t *testing.T) {
	e := newEnvWith(t, Options{MaxPending: 200, ConnectTimeout: 2 * time.Second})
	a := startAgent(t, e)
	ex := NewExecutor(e.bus, a)
	defer ex.Close()
	alive := func(t *testing.T) {
		t.Helper()
		var out bytes.Buffer
		res, err := ex.Run(context.Background(), remote.Command{Cmd: "echo alive", Stdout: &out})
		if err != nil || res.ExitCode != 0 || out.String() != "alive\n" {
			t.Fatalf("the real agent no longer runs commands: %v %+v %q", err, res, out.String())
		}
	}
	alive(t)
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	baseG := runtime.NumGoroutine()

	b, bSecret := e.enrolled(t) // a hostile but enrolled agent
	hostile := func(t *testing.T) *raw {
		t.Helper()
		r, _, err := e.rawDial(t)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.ws.Close() })
		if rc := r.connack(connectPacket(b, b, bSecret)); rc != 0 {
			t.Fatalf("enrolled agent refused: 0x%02x", rc)
		}
		return r
	}

	t.Run("credentials", func(t *testing.T) {
		_, cSecret := e.enrolled(t)
		for name, cp := range map[string]*ppk.ControlPacket{
			"none":               connectPacket(a, "", ""),
			"no password":        connectPacket(a, a, ""),
			"wrong secret":       connectPacket(a, a, "not-the-secret"),
			"another agent's id": connectPacket(a, b, bSecret),
			"another's secret":   connectPacket(a, a, bSecret),
			"not an agent id":    connectPacket("admin", "admin", "admin"),
			"re-enrolling a":     connectPacket(a, a, cSecret, ppk.User{Key: agentproto.EnrollProperty, Value: agentproto.SecretHash("x")}),
			"wildcard client id": connectPacket("#", "#", bSecret),
			"MQTT 3.1.1 of b": func() *ppk.ControlPacket {
				cp := connectPacket(b, b, bSecret)
				cp.Content.(*ppk.Connect).ProtocolVersion = 4
				return cp
			}(),
			"empty client id of b": connectPacket("", b, bSecret),
		} {
			r, _, err := e.rawDial(t)
			if err != nil {
				t.Fatal(err)
			}
			if rc := r.connack(cp); rc < 0x80 {
				t.Errorf("%s: CONNACK 0x%02x, want a refusal", name, rc)
			}
			if !r.closedWithin(30 * time.Second) {
				t.Errorf("%s: connection left open after the refusal", name)
			}
			r.ws.Close()
		}
		alive(t) // no takeover of the real agent's session
	})

	t.Run("topics and wildcards", func(t *testing.T) {
		r := hostile(t)
		topics := []string{agentproto.Topic(a, agentproto.ChannelCmd), "#", "+/+/+/+", "lcm/a/+/cmd", "lcm/a/" + a + "/#",
			"$SYS/#", "$share/g/lcm/a/" + b + "/cmd", agentproto.Topic(b, agentproto.ChannelRes)}
		for i, topic := range topics {
			sp := ppk.NewControlPacket(ppk.SUBSCRIBE)
			s := sp.Content.(*ppk.Subscribe)
			s.PacketID, s.Subscriptions = uint16(i+1), []ppk.SubOptions{{Topic: topic, QoS: 1}}
			if err := r.send(sp); err != nil {
				t.Fatal(err)
			}
			p, err := r.read()
			if err != nil {
				t.Fatalf("subscribe %s: connection ended: %v", topic, err)
			}
			sa, ok := p.Content.(*ppk.Suback)
			if !ok || len(sa.Reasons) != 1 || sa.Reasons[0] < 0x80 {
				t.Errorf("subscribe %s granted: %v", topic, p)
			}
		}
		msg := envelope(t, &agentproto.Progress{Header: agentproto.NewHeader(agentproto.TypeProgress, agentproto.NewID())})
		for i, topic := range []string{agentproto.Topic(a, agentproto.ChannelRes), agentproto.Topic(a, agentproto.ChannelStatus),
			agentproto.Topic(b, agentproto.ChannelCmd), "lcm/a/" + b + "/other"} {
			if err := r.send(publishPacket(topic, 1, false, uint16(100+i), msg)); err != nil {
				t.Fatal(err)
			}
			p, err := r.read()
			if err != nil {
				t.Fatalf("publish %s: connection ended: %v", topic, err)
			}
			if pa, ok := p.Content.(*ppk.Puback); !ok || pa.ReasonCode < 0x80 {
				t.Errorf("publish to %s accepted: %v", topic, p)
			}
		}
		alive(t)
	})

	t.Run("retained", func(t *testing.T) {
		r := hostile(t)
		st := envelope(t, &agentproto.Status{Header: agentproto.NewHeader(agentproto.TypeStatus, agentproto.NewID()), State: agentproto.StateOnline})
		if err := r.send(publishPacket(agentproto.Topic(b, agentproto.ChannelStatus), 1, true, 1, st)); err != nil {
			t.Fatal(err)
		}
		// MQTT 5: a retained publish where Retain Available is 0 is a
		// protocol error, answered with DISCONNECT 0x9A.
		p, err := r.read()
		if d, ok := p.Content.(*ppk.Disconnect); err != nil || !ok || d.ReasonCode != 0x9a {
			t.Errorf("retained publish: %v %v, want DISCONNECT 0x9a", p, err)
		}
		if !r.closedWithin(30 * time.Second) {
			t.Error("connection left open after the retained publish")
		}
		if n := e.gw.srv.Info.Retained; n != 0 {
			t.Errorf("%d retained messages kept", n)
		}
		alive(t)
	})

	t.Run("oversized", func(t *testing.T) {
		r := hostile(t)
		big := make([]byte, 2<<20)
		_ = r.send(publishPacket(agentproto.Topic(b, agentproto.ChannelInv), 1, false, 1, big))
		if !r.closedWithin(30 * time.Second) {
			t.Error("a 2 MiB packet did not end the connection")
		}
		// Before CONNECT: a 3 MiB WebSocket message of garbage.
		u, _, err := e.rawDial(t)
		if err != nil {
			t.Fatal(err)
		}
		defer u.ws.Close()
		_ = u.sendBytes(make([]byte, 3<<20))
		if !u.closedWithin(30 * time.Second) {
			t.Error("3 MiB before CONNECT did not end the connection")
		}
		alive(t)
	})

	t.Run("QoS 2 and QoS 1 floods", func(t *testing.T) {
		r := hostile(t)
		var acks atomic.Int64
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				if _, err := r.read(); err != nil {
					return
				}
				acks.Add(1)
			}
		}()
		st := envelope(t, &agentproto.Status{Header: agentproto.NewHeader(agentproto.TypeStatus, agentproto.NewID()), State: agentproto.StateOnline})
		const n = 5000
		for i := 0; i < n; i++ {
			qos := byte(2)
			payload := st
			if i%2 == 1 {
				qos, payload = 1, []byte("not an envelope")
			}
			if err := r.send(publishPacket(agentproto.Topic(b, agentproto.ChannelStatus), qos, false, uint16(i%60000+1), payload)); err != nil {
				break // disconnected: bounded too
			}
		}
		alive(t) // while the flood is being worked off
		_ = r.ws.Close()
		<-done
		t.Logf("flood of %d publishes: %d acknowledgements before the close", n, acks.Load())
		alive(t)
	})

	t.Run("slow loris", func(t *testing.T) {
		// A CONNECT trickled one byte at a time never completes in time.
		r, _, err := e.rawDial(t)
		if err != nil {
			t.Fatal(err)
		}
		defer r.ws.Close()
		var pkt bytes.Buffer
		_, _ = connectPacket(b, b, bSecret).WriteTo(&pkt)
		closed := make(chan struct{})
		go func() { r.closedWithin(60 * time.Second); close(closed) }()
	trickle:
		for _, c := range pkt.Bytes() {
			select {
			case <-closed:
				break trickle
			case <-time.After(200 * time.Millisecond):
			}
			if r.sendBytes([]byte{c}) != nil {
				break
			}
		}
		select {
		case <-closed:
		case <-time.After(60 * time.Second):
			t.Fatal("a trickled CONNECT kept the connection open")
		}
		// A TCP connection that never starts TLS is closed by the server.
		c, err := net.Dial("tcp", e.srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(60 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil || isTimeout(err) {
			t.Errorf("silent TCP connection not closed: %v", err)
		}
		alive(t)
	})

	t.Run("thousands of half-open connections", func(t *testing.T) {
		const upgrades, tcps = 1000, 2000
		var refused, accepted, cut atomic.Int64
		var mu sync.Mutex
		var open []*raw
		var wg sync.WaitGroup
		var next atomic.Int64
		for w := 0; w < 32; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for next.Add(1) <= upgrades {
					r, resp, err := e.rawDial(t)
					switch {
					case err == nil:
						accepted.Add(1)
						mu.Lock()
						open = append(open, r)
						mu.Unlock()
					case resp != nil && resp.StatusCode == http.StatusServiceUnavailable:
						refused.Add(1)
					default:
						// Cut off by the server's own bounds (a handshake
						// slower than ReadHeaderTimeout on a loaded machine):
						// bounded as well.
						cut.Add(1)
					}
				}
			}()
		}
		var tcpConns []net.Conn
		for i := 0; i < tcps; i++ {
			c, err := net.Dial("tcp", e.srv.Listener.Addr().String())
			if err != nil {
				t.Fatalf("tcp %d: %v", i, err)
			}
			tcpConns = append(tcpConns, c)
		}
		wg.Wait()
		var peak runtime.MemStats
		runtime.ReadMemStats(&peak)
		alive(t) // while they are all open
		// The gateway ends every one of them by itself.
		for _, r := range open {
			if !r.closedWithin(60 * time.Second) {
				t.Fatal("a half-open upgraded connection was never closed")
			}
			r.ws.Close()
		}
		for _, c := range tcpConns {
			_ = c.SetReadDeadline(time.Now().Add(60 * time.Second))
			if _, err := c.Read(make([]byte, 1)); err == nil || isTimeout(err) {
				t.Fatalf("half-open TCP connection never closed: %v", err)
			}
			c.Close()
		}
		// Goroutines and heap come back down (wait for the condition).
		deadline := time.Now().Add(60 * time.Second)
		var after runtime.MemStats
		for {
			runtime.GC()
			runtime.ReadMemStats(&after)
			g := runtime.NumGoroutine()
			if g <= baseG+100 && after.HeapInuse < base.HeapInuse+64<<20 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("not back down: %d goroutines (base %d), heap in use %d MiB (base %d MiB)",
					g, baseG, after.HeapInuse>>20, base.HeapInuse>>20)
			}
			time.Sleep(100 * time.Millisecond) // polling a condition, not a timing assumption
		}
		t.Logf("%d upgrades accepted, %d refused 503, %d cut during the handshake, %d raw TCP; heap in use: base %d MiB, peak %d MiB, after %d MiB",
			accepted.Load(), refused.Load(), cut.Load(), tcps, base.HeapInuse>>20, peak.HeapInuse>>20, after.HeapInuse>>20)
		alive(t)
	})
}

// TestPendingConnectionsAreBounded: upgraded WebSockets that never send
// CONNECT beyond MaxPending are refused with 503 before they cost more,
// and the gateway closes the pending ones at ConnectTimeout.
func TestPendingConnectionsAreBounded(t *testing.T) {
	const limit, attempts = 50, 200
	// A long timeout, so no pending connection expires while the test
	// opens the others: the limit alone decides.
	e := newEnvWith(t, Options{MaxPending: limit, ConnectTimeout: 60 * time.Second})
	var open []*raw
	refused := 0
	for i := 0; i < attempts; i++ {
		r, resp, err := e.rawDial(t)
		switch {
		case err == nil:
			open = append(open, r)
		case resp != nil && resp.StatusCode == http.StatusServiceUnavailable:
			refused++
		default:
			t.Fatalf("upgrade %d: %v", i, err)
		}
	}
	if len(open) != limit || refused != attempts-limit {
		t.Fatalf("%d pending accepted, %d refused; want %d and %d", len(open), refused, limit, attempts-limit)
	}
	// Once one is decided (here: it authenticates… or fails to), a place
	// frees up.
	if rc := open[0].connack(connectPacket("x", "x", "x")); rc < 0x80 {
		t.Fatalf("CONNACK 0x%02x", rc)
	}
	open[0].closedWithin(30 * time.Second)
	// The decided connection's handler may still be unwinding: 503 until
	// its place is free.
	testutil.WaitFor(t, 30*time.Second, "a place freed for a new pending connection", func() bool {
		r, resp, err := e.rawDial(t)
		if err == nil {
			r.ws.Close()
			return true
		}
		if resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatal(err)
		}
		return false
	})
	for _, r := range open[1:] {
		r.ws.Close()
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() || strings.Contains(err.Error(), "i/o timeout")
}

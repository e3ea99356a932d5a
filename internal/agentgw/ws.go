package agentgw

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/mochi-mqtt/server/v2/listeners"

	"github.com/lcmproject/lcm/pkg/agentproto"
)

// listenerID names the gateway's only mochi listener.
const listenerID = "agent-ws"

// wsListener is a mochi listener that does not listen: the agent listener's
// http.Server (shared with lcm-api's TLS setup) hands it upgraded
// WebSockets, and mochi closes their clients through it on shutdown. It
// mirrors mochi's own listeners/websocket.go.
type wsListener struct {
	log       *slog.Logger
	upgrader  websocket.Upgrader
	mu        sync.Mutex
	establish listeners.EstablishFn
	closed    bool
	conns     map[*wsConn]struct{} // open connections, closed by shutdown
	active    sync.WaitGroup       // ServeHTTP calls inside establish
	// pending counts connections whose CONNECT is not decided yet; above
	// maxPending an upgrade is refused with 503.
	pending, maxPending int
	connectTimeout      time.Duration
}

// wsBufferPool is shared by every connection's WebSocket writes: an idle
// agent holds no write buffer.
var wsBufferPool = &sync.Pool{}

func newWSListener(log *slog.Logger, maxPending int, connectTimeout time.Duration) *wsListener {
	if connectTimeout <= 0 {
		connectTimeout = DefaultConnectTimeout
	}
	return &wsListener{
		log:            log,
		conns:          map[*wsConn]struct{}{},
		maxPending:     maxPending,
		connectTimeout: connectTimeout,
		upgrader: websocket.Upgrader{
			Subprotocols:     []string{"mqtt"},
			HandshakeTimeout: 10 * time.Second,
			ReadBufferSize:   2048,
			WriteBufferSize:  2048,
			WriteBufferPool:  wsBufferPool,
			// Agents are programs, not browsers, and send no Origin. A
			// request with one comes from a web page: refuse it, so no
			// site can reach the gateway through a visitor's browser.
			CheckOrigin: func(r *http.Request) bool { return r.Header.Get("Origin") == "" },
		},
	}
}

func (l *wsListener) ID() string                  { return listenerID }
func (l *wsListener) Address() string             { return "/mqtt" }
func (l *wsListener) Protocol() string            { return "wss" }
func (l *wsListener) Init(*slog.Logger) error     { return nil }
func (l *wsListener) Serve(listeners.EstablishFn) {}

// Close is called by mochi's Server.Close; shutdown has already ended
// every connection by then.
func (l *wsListener) Close(closeClients listeners.CloseFn) { closeClients(listenerID) }

// shutdownWait bounds how long shutdown waits for connections to unwind
// after their sockets were closed (it takes microseconds in practice).
const shutdownWait = 5 * time.Second

// shutdown refuses new connections, closes the open ones and waits until
// no connection is inside mochi any more. mochi's Close waits on a
// WaitGroup that each new connection adds to; doing this first means no
// Add can race with that Wait.
func (l *wsListener) shutdown() {
	l.mu.Lock()
	l.closed = true
	for c := range l.conns {
		_ = c.Close()
	}
	l.mu.Unlock()
	done := make(chan struct{})
	go func() { l.active.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(shutdownWait):
		l.log.Warn("agent connections still unwinding at shutdown")
	}
}

func (l *wsListener) setEstablish(fn listeners.EstablishFn) {
	l.mu.Lock()
	l.establish = fn
	l.mu.Unlock()
}

// ServeHTTP upgrades /mqtt and runs the MQTT connection until it ends.
func (l *wsListener) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !websocket.IsWebSocketUpgrade(r) {
		writeJSONError(w, http.StatusBadRequest, "/mqtt expects a WebSocket upgrade (subprotocol mqtt)", "bad_request")
		return
	}
	l.mu.Lock()
	if l.pending >= l.maxPending {
		l.mu.Unlock()
		w.Header().Set("Retry-After", "5")
		writeJSONError(w, http.StatusServiceUnavailable, "too many agent connections being established; retry", "busy")
		return
	}
	l.pending++
	l.mu.Unlock()
	conn := &wsConn{l: l}
	defer conn.decided()
	c, err := l.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader has answered
	}
	defer c.Close()
	// Bounded until the CONNECT is decided; mochi then sets the deadline
	// from the agent's keepalive.
	_ = c.UnderlyingConn().SetDeadline(time.Now().Add(l.connectTimeout))
	if c.Subprotocol() != "mqtt" {
		_ = c.WriteControl(websocket.CloseMessage,
			websocket.FormatCloseMessage(websocket.ClosePolicyViolation, "subprotocol mqtt required"), time.Now().Add(time.Second))
		return
	}
	// One MQTT packet per WebSocket message; leave room for framing.
	c.SetReadLimit(agentproto.MaxMessageBytes + 64<<10)
	conn.Conn, conn.c = c.UnderlyingConn(), c
	l.mu.Lock()
	establish, closed := l.establish, l.closed
	if establish == nil || closed {
		l.mu.Unlock()
		_ = c.WriteControl(websocket.CloseMessage,
			websocket.FormatCloseMessage(websocket.CloseTryAgainLater, "gateway shutting down"), time.Now().Add(time.Second))
		return
	}
	l.conns[conn] = struct{}{}
	l.active.Add(1)
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		delete(l.conns, conn)
		l.mu.Unlock()
		l.active.Done()
	}()
	if err := establish(listenerID, conn); err != nil {
		l.log.Debug("agent connection ended", "remote", r.RemoteAddr, "err", err)
	}
}

// errNotBinary: MQTT over WebSocket uses binary messages only.
var errNotBinary = errors.New("agentgw: websocket message is not binary")

// wsConn presents a WebSocket as the byte stream mochi reads MQTT packets
// from. Deadlines and addresses come from the underlying connection.
type wsConn struct {
	net.Conn
	c    *websocket.Conn
	l    *wsListener
	once sync.Once
	r    io.Reader  // current message, nil between messages
	wm   sync.Mutex // gorilla allows one concurrent writer
}

// decided releases the connection's place among the pending ones (once:
// at authentication or when the connection ends).
func (ws *wsConn) decided() {
	if ws.l == nil {
		return
	}
	ws.once.Do(func() {
		ws.l.mu.Lock()
		ws.l.pending--
		ws.l.mu.Unlock()
	})
}

func (ws *wsConn) Read(p []byte) (int, error) {
	for {
		if ws.r == nil {
			op, r, err := ws.c.NextReader()
			if err != nil {
				return 0, err
			}
			if op != websocket.BinaryMessage {
				return 0, errNotBinary
			}
			ws.r = r
		}
		n, err := ws.r.Read(p)
		if errors.Is(err, io.EOF) {
			ws.r = nil
			if n == 0 {
				continue
			}
			err = nil
		}
		return n, err
	}
}

func (ws *wsConn) Write(p []byte) (int, error) {
	ws.wm.Lock()
	defer ws.wm.Unlock()
	if err := ws.c.WriteMessage(websocket.BinaryMessage, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (ws *wsConn) Close() error { return ws.c.Close() }

// writeJSONError answers in the API's error shape.
func writeJSONError(w http.ResponseWriter, status int, msg, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg, "code": code})
}

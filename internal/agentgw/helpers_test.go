package agentgw

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"log"
	"log/slog"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/packets"
	"github.com/eclipse/paho.golang/paho"
	"github.com/gorilla/websocket"

	"github.com/lcmproject/lcm/internal/bus"
	_ "github.com/lcmproject/lcm/internal/bus/natsembed"
	"github.com/lcmproject/lcm/pkg/agentproto"
)

// env is a gateway on a real embedded NATS, served over TLS by httptest.
type env struct {
	bus   *bus.Bus
	creds *bus.AgentCredentials
	gw    *Gateway
	srv   *httptest.Server
	url   string
	fp    string
}

func testLogger() *slog.Logger {
	if os.Getenv("LCM_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func newEnv(t *testing.T, revalidate time.Duration) *env {
	t.Helper()
	return newEnvWith(t, Options{RevalidateInterval: revalidate})
}

// newEnvWith starts a gateway with o (Bus, Credentials and Logger are set
// here) behind an HTTPS server configured like the agent listeners of
// lcm-api and lcm-agentgw (ReadHeaderTimeout bounds the TLS handshake).
func newEnvWith(t *testing.T, o Options) *env {
	t.Helper()
	ctx := context.Background()
	b, err := bus.Open(ctx, bus.Options{DataDir: t.TempDir(), Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	creds, err := b.AgentCredentials(ctx)
	if err != nil {
		t.Fatal(err)
	}
	o.Bus, o.Credentials, o.Logger = b, creds, testLogger()
	gw, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(gw.Handler())
	srv.Config.ReadHeaderTimeout = 5 * time.Second
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // hostile tests cause TLS handshake errors by the thousand
	srv.StartTLS()
	t.Cleanup(func() {
		gw.Close()
		srv.Close()
		b.Close()
	})
	return &env{bus: b, creds: creds, gw: gw, srv: srv,
		url: "wss://" + srv.Listener.Addr().String() + "/mqtt",
		fp:  agentproto.FingerprintSHA256(srv.Certificate().Raw)}
}

// client is a real paho MQTT 5 client over the gateway's WebSocket.
type client struct {
	*paho.Client
	received chan *paho.Publish
	gone     chan struct{}
}

// dial connects with the given credentials; extra user properties go into
// CONNECT. It returns the CONNACK and error of paho's Connect.
func (e *env) dial(t *testing.T, clientID, user, pass string, props ...paho.UserProperty) (*client, *paho.Connack, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	d := websocket.Dialer{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, Subprotocols: []string{"mqtt"}}
	ws, _, err := d.DialContext(ctx, e.url, nil)
	if err != nil {
		t.Fatalf("websocket: %v", err)
	}
	conn := packets.NewThreadSafeConn(&wsConn{Conn: ws.UnderlyingConn(), c: ws})
	c := &client{received: make(chan *paho.Publish, 16), gone: make(chan struct{})}
	var once sync.Once
	markGone := func() { once.Do(func() { close(c.gone) }) }
	c.Client = paho.NewClient(paho.ClientConfig{ClientID: clientID, Conn: conn,
		OnPublishReceived: []func(paho.PublishReceived) (bool, error){func(pr paho.PublishReceived) (bool, error) {
			c.received <- pr.Packet
			return true, nil
		}},
		OnServerDisconnect: func(*paho.Disconnect) { markGone() },
		OnClientError:      func(error) { markGone() },
	})
	ca, err := c.Connect(ctx, &paho.Connect{ClientID: clientID, CleanStart: true, KeepAlive: 30,
		Username: user, UsernameFlag: true, Password: []byte(pass), PasswordFlag: true,
		Properties: &paho.ConnectProperties{User: props}})
	if err == nil {
		t.Cleanup(func() { _ = c.Disconnect(&paho.Disconnect{}) })
	}
	return c, ca, err
}

// enrolled creates an agent with Enroll and performs its enrollment
// connect, returning its id and own secret.
func (e *env) enrolled(t *testing.T) (agentID, secret string) {
	t.Helper()
	tokStr, id, err := Enroll(context.Background(), e.creds, "server-1", e.url, e.fp)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := agentproto.ParseToken(tokStr)
	if err != nil {
		t.Fatal(err)
	}
	secret, _ = agentproto.NewSecret()
	c, _, err := e.dial(t, id, id, tok.Secret, paho.UserProperty{Key: agentproto.EnrollProperty, Value: agentproto.SecretHash(secret)})
	if err != nil {
		t.Fatalf("enrollment connect: %v", err)
	}
	_ = c.Disconnect(&paho.Disconnect{})
	return id, secret
}

// natsInbox subscribes to an agent channel on NATS and returns the channel
// of payloads.
func (e *env) natsInbox(t *testing.T, agentID string, ch agentproto.Channel) <-chan []byte {
	t.Helper()
	out := make(chan []byte, 64)
	unsub, err := e.bus.SubscribeAgent(agentID, string(ch), func(b []byte) { out <- b })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unsub() })
	return out
}

func recv[T any](t *testing.T, c <-chan T) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(30 * time.Second):
		t.Fatal("nothing received within 30 s")
		var zero T
		return zero
	}
}

func envelope(t *testing.T, m any) []byte {
	t.Helper()
	b, err := agentproto.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func record(t *testing.T, e *env, agentID string) Credential {
	t.Helper()
	raw, _, err := e.creds.Get(context.Background(), agentID)
	if err != nil {
		t.Fatal(err)
	}
	var c Credential
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

package agentgw

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
	"github.com/gorilla/websocket"

	"github.com/lcmproject/lcm/internal/bus"
	"github.com/lcmproject/lcm/pkg/agentproto"
)

const reasonBadCredentials = 0x86

func TestAuthenticationIsFailClosed(t *testing.T) {
	e := newEnv(t, 0)
	id, secret := e.enrolled(t)
	revokedID, revokedSecret := e.enrolled(t)
	if err := Revoke(context.Background(), e.creds, revokedID); err != nil {
		t.Fatal(err)
	}
	// A token that was issued but never enrolled.
	tokStr, pendingID, err := Enroll(context.Background(), e.creds, "server-2", e.url, e.fp)
	if err != nil {
		t.Fatal(err)
	}
	pending, _ := agentproto.ParseToken(tokStr)
	other, _ := agentproto.NewSecret()
	// A record that is not even JSON.
	junkID := agentproto.NewID()
	if err := e.creds.Create(context.Background(), junkID, []byte("{nope")); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name, clientID, user, pass string
		props                      []paho.UserProperty
	}{
		{"wrong password", id, id, other, nil},
		{"unknown agent", agentproto.NewID(), "", other, nil},
		{"username not an agent id", "x", "x", secret, nil},
		{"client id differs from username", agentproto.NewID(), id, secret, nil},
		{"revoked", revokedID, revokedID, revokedSecret, nil},
		{"token secret without enrollment", pendingID, pendingID, pending.Secret, nil},
		{"enroll again with a spent token", id, id, secret,
			[]paho.UserProperty{{Key: agentproto.EnrollProperty, Value: agentproto.SecretHash(other)}}},
		{"malformed enroll property", pendingID, pendingID, pending.Secret,
			[]paho.UserProperty{{Key: agentproto.EnrollProperty, Value: "zz"}}},
		{"corrupt record", junkID, junkID, secret, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			user := tt.user
			if user == "" {
				user = tt.clientID
			}
			_, ca, err := e.dial(t, tt.clientID, user, tt.pass, tt.props...)
			if err == nil {
				t.Fatal("connection accepted")
			}
			if ca == nil || ca.ReasonCode != reasonBadCredentials {
				t.Fatalf("want CONNACK 0x86, got %v (%v)", ca, err)
			}
		})
	}

	t.Run("panic in hook", func(t *testing.T) {
		boom := func(string) { panic("injected") }
		e.gw.hook.testHookAuth.Store(&boom)
		_, ca, err := e.dial(t, id, id, secret)
		e.gw.hook.testHookAuth.Store(nil)
		if err == nil || ca == nil || ca.ReasonCode != reasonBadCredentials {
			t.Fatalf("panicking hook admitted or answered oddly: %v %v", ca, err)
		}
		// The same credentials work once the hook behaves: the rejection
		// was the panic's doing.
		if _, _, err := e.dial(t, id, id, secret); err != nil {
			t.Fatalf("valid agent rejected: %v", err)
		}
	})

	t.Run("enrollment spends the token", func(t *testing.T) {
		rec := record(t, e, id)
		if !rec.Enrolled || rec.SecretSHA256 != agentproto.SecretHash(secret) {
			t.Fatalf("record after enrollment: %+v", rec)
		}
	})
}

func TestACL(t *testing.T) {
	e := newEnv(t, 0)
	a, aSecret := e.enrolled(t)
	b, _ := e.enrolled(t)
	ca, _, err := e.dial(t, a, a, aSecret)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	subs := []struct {
		topic string
		ok    bool
	}{
		{agentproto.Topic(a, agentproto.ChannelCmd), true},
		{agentproto.Topic(b, agentproto.ChannelCmd), false},
		{agentproto.Topic(a, agentproto.ChannelRes), false},
		{"lcm/a/+/cmd", false},
		{"#", false},
		{"$SYS/#", false},
	}
	for _, s := range subs {
		sa, err := ca.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: s.topic, QoS: 1}}})
		var granted bool
		if err == nil && len(sa.Reasons) == 1 {
			granted = sa.Reasons[0] < 0x80
		}
		if granted != s.ok {
			t.Errorf("subscribe %s: granted=%v, want %v (%v %v)", s.topic, granted, s.ok, sa, err)
		}
	}

	// Publishing to B's res or to A's own cmd is refused; the NATS side
	// sees only A's legitimate message that follows (same connection, so
	// a forwarded forbidden message would have arrived first).
	allRes := make(chan string, 8)
	unsub, err := e.bus.SubscribeAgents(string(agentproto.ChannelRes), func(id string, _ []byte) { allRes <- id })
	if err != nil {
		t.Fatal(err)
	}
	defer unsub()
	allCmd := e.natsInbox(t, a, agentproto.ChannelCmd)
	msg := envelope(t, &agentproto.Progress{Header: agentproto.NewHeader(agentproto.TypeProgress, agentproto.NewID())})
	for _, topic := range []string{agentproto.Topic(b, agentproto.ChannelRes), agentproto.Topic(a, agentproto.ChannelCmd), "lcm/other"} {
		pr, err := ca.Publish(ctx, &paho.Publish{Topic: topic, QoS: 1, Payload: msg})
		if err == nil && (pr == nil || pr.ReasonCode < 0x80) {
			t.Errorf("publish to %s accepted", topic)
		}
	}
	if _, err := ca.Publish(ctx, &paho.Publish{Topic: agentproto.Topic(a, agentproto.ChannelRes), QoS: 1, Payload: msg}); err != nil {
		t.Fatal(err)
	}
	if got := recv(t, allRes); got != a {
		t.Fatalf("first res message on NATS came from %s, want %s", got, a)
	}
	select {
	case m := <-allCmd:
		t.Fatalf("agent's publish to its own cmd reached NATS: %s", m)
	default:
	}
}

func TestBridge(t *testing.T) {
	e := newEnv(t, 0)
	id, secret := e.enrolled(t)
	status := e.natsInbox(t, id, agentproto.ChannelStatus)
	res := e.natsInbox(t, id, agentproto.ChannelRes)
	c, _, err := e.dial(t, id, id, secret)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if sa, err := c.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: agentproto.Topic(id, agentproto.ChannelCmd), QoS: 1}}}); err != nil || sa.Reasons[0] >= 0x80 {
		t.Fatalf("subscribe: %v %v", sa, err)
	}

	// NATS → agent.
	cmd := envelope(t, &agentproto.Command{Header: agentproto.NewHeader(agentproto.TypeCommand, agentproto.NewID()), Cmd: "true"})
	if err := e.bus.PublishAgent(id, "cmd", cmd); err != nil {
		t.Fatal(err)
	}
	got := recv(t, c.received)
	if got.Topic != agentproto.Topic(id, agentproto.ChannelCmd) || string(got.Payload) != string(cmd) || got.QoS != 1 {
		t.Fatalf("agent received %s qos %d: %s", got.Topic, got.QoS, got.Payload)
	}

	// Agent → NATS.
	result := envelope(t, &agentproto.Result{Header: agentproto.NewHeader(agentproto.TypeResult, agentproto.NewID()), ExitCode: 3})
	if _, err := c.Publish(ctx, &paho.Publish{Topic: agentproto.Topic(id, agentproto.ChannelRes), QoS: 1, Payload: result}); err != nil {
		t.Fatal(err)
	}
	if b := recv(t, res); string(b) != string(result) {
		t.Fatalf("NATS got %s", b)
	}
	// A status is forwarded with the gateway's own name: an agent cannot
	// claim another gateway.
	stMsg := agentproto.Status{Header: agentproto.NewHeader(agentproto.TypeStatus, agentproto.NewID()), State: agentproto.StateOnline,
		AgentVersion: "9.9.9", Gateway: "forged"}
	st := envelope(t, &stMsg)
	if _, err := c.Publish(ctx, &paho.Publish{Topic: agentproto.Topic(id, agentproto.ChannelStatus), QoS: 1, Payload: st}); err != nil {
		t.Fatal(err)
	}
	stMsg.Gateway = e.gw.Name()
	want := envelope(t, &stMsg)
	// The enrollment connection's "offline" may still be on its way.
	for b := recv(t, status); string(b) != string(want); b = recv(t, status) {
		if !strings.Contains(string(b), `"offline"`) || !strings.Contains(string(b), `"gateway":"`+e.gw.Name()+`"`) {
			t.Fatalf("NATS status %s, want %s", b, want)
		}
	}

	// Junk and envelopes on the wrong channel are refused with a reason.
	for _, p := range []struct {
		ch      agentproto.Channel
		payload []byte
	}{{agentproto.ChannelRes, []byte("junk")}, {agentproto.ChannelStatus, result}, {agentproto.ChannelRes, st}} {
		pr, err := c.Publish(ctx, &paho.Publish{Topic: agentproto.Topic(id, p.ch), QoS: 1, Payload: p.payload})
		if err == nil && (pr == nil || pr.ReasonCode < 0x80) {
			t.Errorf("%s on %s accepted", p.payload, p.ch)
		}
	}

	// Disconnecting announces the agent offline.
	_ = c.Disconnect(&paho.Disconnect{})
	m, err := agentproto.Decode(recv(t, status))
	if s, ok := m.(*agentproto.Status); err != nil || !ok || s.State != agentproto.StateOffline {
		t.Fatalf("after disconnect: %#v %v", m, err)
	}
}

func TestRevokedAgentIsDisconnected(t *testing.T) {
	e := newEnv(t, 20*time.Millisecond)
	id, secret := e.enrolled(t)
	c, _, err := e.dial(t, id, id, secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := Revoke(context.Background(), e.creds, id); err != nil {
		t.Fatal(err)
	}
	recv(t, c.gone)
	if _, ca, err := e.dial(t, id, id, secret); err == nil || ca.ReasonCode != reasonBadCredentials {
		t.Fatalf("revoked agent reconnected: %v %v", ca, err)
	}
}

func TestEnrollStoresOnlyTheHash(t *testing.T) {
	e := newEnv(t, 0)
	tokStr, id, err := Enroll(context.Background(), e.creds, "server-9", e.url, strings.ToUpper(e.fp))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := agentproto.ParseToken(tokStr)
	if err != nil {
		t.Fatal(err)
	}
	if tok.AgentID != id || tok.GatewayURL != e.url || tok.TLSFingerprintSHA256 != e.fp {
		t.Fatalf("token %+v", tok)
	}
	raw, _, err := e.creds.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), tok.Secret) {
		t.Fatal("the plaintext secret is stored")
	}
	rec := record(t, e, id)
	if rec.SecretSHA256 != agentproto.SecretHash(tok.Secret) || rec.ServerID != "server-9" || rec.Revoked || rec.Enrolled {
		t.Fatalf("record %+v", rec)
	}
	for _, bad := range [][3]string{{"", e.url, e.fp}, {"s", "ws://x/mqtt", e.fp}, {"s", e.url, "abc"}} {
		if _, _, err := Enroll(context.Background(), e.creds, bad[0], bad[1], bad[2]); err == nil {
			t.Errorf("Enroll(%q, %q, %q) accepted", bad[0], bad[1], bad[2])
		}
	}
	if err := Revoke(context.Background(), e.creds, agentproto.NewID()); err == nil {
		t.Error("revoking an unknown agent succeeded")
	}
	if _, _, err := e.creds.Get(context.Background(), agentproto.NewID()); err != bus.ErrAgentNotFound {
		t.Errorf("unknown agent: %v", err)
	}
}

func TestHandlerRoutes(t *testing.T) {
	e := newEnv(t, 0)
	cl := e.srv.Client()
	base := "https://" + e.srv.Listener.Addr().String()
	for _, tc := range []struct {
		path   string
		origin string
		status int
	}{{"/", "", 404}, {"/api/v1/health", "", 404}, {"/mqtt", "", 400}} {
		req, _ := http.NewRequest("GET", base+tc.path, nil)
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]string
		_ = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || body["error"] == "" || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("GET %s: %d %v", tc.path, resp.StatusCode, body)
		}
	}
	// A browser page (Origin header) cannot open the agent WebSocket.
	d := websocket.Dialer{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, Subprotocols: []string{"mqtt"}}
	if _, resp, err := d.Dial(e.url, http.Header{"Origin": {"https://evil.example"}}); err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("upgrade with Origin: %v %v", resp, err)
	}
	// Without the mqtt subprotocol the gateway closes the socket.
	d.Subprotocols = nil
	ws, _, err := d.Dial(e.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if _, _, err := ws.ReadMessage(); !websocket.IsCloseError(err, websocket.ClosePolicyViolation) {
		t.Errorf("no subprotocol: %v", err)
	}
}

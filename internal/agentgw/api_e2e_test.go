package agentgw

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/packets"
	"github.com/eclipse/paho.golang/paho"
	"github.com/gorilla/websocket"

	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/pkg/agentproto"
)

// TestAPIAgentListener starts the real lcm-api binary with its agent
// listener and checks that /mqtt is the gateway (WebSocket upgrade, MQTT
// CONNECT of an unknown agent rejected) on the UI certificate, and that
// every other path is a JSON 404.
func TestAPIAgentListener(t *testing.T) {
	port := testutil.FreePort(t)
	a := testutil.StartAPI(t, testutil.APIOptions{Config: map[string]any{"agent_port": port, "agent_host": "127.0.0.1"}})
	base := fmt.Sprintf("127.0.0.1:%d", port)

	// Same certificate as the UI listener.
	uiCert := peerCert(t, fmt.Sprintf("127.0.0.1:%d", a.Port))
	if got := peerCert(t, base); got != uiCert {
		t.Fatalf("agent listener certificate %s differs from the UI's %s", got, uiCert)
	}

	for _, path := range []string{"/", "/api/v1/health", "/mqtt/x"} {
		resp, err := a.Client.Get("https://" + base + path)
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]string
		_ = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || body["error"] == "" {
			t.Errorf("GET %s: %d %v", path, resp.StatusCode, body)
		}
	}

	d := websocket.Dialer{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, Subprotocols: []string{"mqtt"}}
	ws, resp, err := d.Dial("wss://"+base+"/mqtt", nil)
	if err != nil {
		t.Fatalf("websocket upgrade: %v %v", resp, err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols || ws.Subprotocol() != "mqtt" {
		t.Fatalf("upgrade answered %d, subprotocol %q", resp.StatusCode, ws.Subprotocol())
	}
	id := agentproto.NewID()
	sec, _ := agentproto.NewSecret()
	cli := paho.NewClient(paho.ClientConfig{ClientID: id, Conn: packets.NewThreadSafeConn(&wsConn{Conn: ws.UnderlyingConn(), c: ws})})
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	ca, err := cli.Connect(ctx, &paho.Connect{ClientID: id, CleanStart: true, Username: id, UsernameFlag: true,
		Password: []byte(sec), PasswordFlag: true})
	if err == nil || ca == nil || ca.ReasonCode != 0x86 {
		t.Fatalf("unknown agent against lcm-api: %v %v", ca, err)
	}
}

func peerCert(t *testing.T, addr string) string {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return agentproto.FingerprintSHA256(c.ConnectionState().PeerCertificates[0].Raw)
}

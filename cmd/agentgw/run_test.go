package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/nats-io/nats-server/v2/server"

	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/tlscert"
)

func TestVersion(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-version"}, &out, &out); err != nil || !strings.HasPrefix(out.String(), "lcm-agentgw ") {
		t.Fatalf("%v %q", err, out.String())
	}
}

func TestFlagsRequired(t *testing.T) {
	err := run(context.Background(), nil, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "-tls-cert") || !strings.Contains(err.Error(), "-nats-url") {
		t.Fatalf("missing flags: %v", err)
	}
}

// TestServesAgentListener runs the gateway against a real NATS server with
// JetStream and checks the listener, then a clean stop.
func TestServesAgentListener(t *testing.T) {
	dir := t.TempDir()
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: filepath.Join(dir, "js"), NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats not ready")
	}
	defer ns.Shutdown()
	certPEM, keyPEM, err := tlscert.Generate("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, []byte(certPEM), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, []byte(keyPEM), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t))

	ctx, cancel := context.WithCancel(context.Background())
	logs := &bytes.Buffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-listen", addr, "-tls-cert", certFile, "-tls-key", keyFile, "-nats-url", ns.ClientURL()}, logs, logs)
	}()
	cl := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, Timeout: 10 * time.Second}
	deadline := time.Now().Add(30 * time.Second)
	var resp *http.Response
	for {
		resp, err = cl.Get("https://" + addr + "/other")
		if err == nil || time.Now().After(deadline) {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("run ended early: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err != nil {
		t.Fatalf("listener never answered: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("GET /other: %d", resp.StatusCode)
	}
	d := websocket.Dialer{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, Subprotocols: []string{"mqtt"}}
	ws, wresp, err := d.Dial("wss://"+addr+"/mqtt", nil)
	if err != nil || wresp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", wresp, err)
	}
	ws.Close()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("run did not stop")
	}
}

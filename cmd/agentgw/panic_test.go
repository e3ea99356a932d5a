package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/health"
	"github.com/lcmproject/lcm/internal/safe"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/tlscert"
)

// TestTenPanicsRestartTheGateway: lcm-agentgw counts every recovered panic
// of its goroutines (hooks, listener, revalidation) with its own health
// monitor; nine in the window leave it serving, the tenth stops it
// gracefully with exit code 70 for its supervisor to start it afresh.
func TestTenPanicsRestartTheGateway(t *testing.T) {
	dir := t.TempDir()
	_, natsURL, caFile := leastPrivilegeNATS(t)
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
	t.Setenv("LCM_NATS_PASSWORD", gwPassword)
	logs := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(context.Background(), []string{"-listen", addr, "-tls-cert", certFile, "-tls-key", keyFile, "-nats-url", natsURL,
			"-nats-user", gwUser, "-nats-ca", caFile}, logs, logs)
	}()
	t.Cleanup(func() { safe.SetRecorder(nil, nil) })
	defer func() {
		if t.Failed() {
			t.Logf("gateway log:\n%s", logs.String())
		}
	}()
	cl := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, Timeout: 5 * time.Second}
	testutil.WaitFor(t, 30*time.Second, "the agent listener answers", func() bool {
		resp, err := cl.Get("https://" + addr + "/other")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusNotFound
	})
	before := safe.Total()
	for range health.MaxPanics - 1 {
		safe.Go("test goroutine", func() { panic("injected") })
	}
	testutil.WaitFor(t, 10*time.Second, "nine panics recovered", func() bool { return safe.Total()-before == health.MaxPanics-1 })
	select {
	case err := <-done:
		t.Fatalf("the gateway ended after %d panics: %v", health.MaxPanics-1, err)
	default:
	}
	safe.Go("test goroutine", func() { panic("injected") })
	select {
	case err := <-done:
		var ec health.ExitError
		if !errors.As(err, &ec) || int(ec) != health.ExitSelfRestart {
			t.Fatalf("run ended with %v, want exit code %d", err, health.ExitSelfRestart)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the gateway kept running after the tenth panic")
	}
}

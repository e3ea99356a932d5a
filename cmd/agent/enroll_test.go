package main

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lcmproject/lcm/pkg/agentproto"
)

func TestEnrollRefusesFingerprintMismatch(t *testing.T) {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	defer srv.Close()
	sec, _ := agentproto.NewSecret()
	tok, err := agentproto.Token{AgentID: agentproto.NewID(), Secret: sec,
		GatewayURL:           "wss://" + srv.Listener.Addr().String() + "/mqtt",
		TLSFingerprintSHA256: agentproto.FingerprintSHA256([]byte("some other certificate")),
	}.Format()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "etc", "agent.json")
	var out, errOut bytes.Buffer
	err = run(context.Background(), []string{"enroll", "-config", path, tok}, &out, &errOut)
	var pe *PinError
	if !errors.As(err, &pe) || pe.Got != agentproto.FingerprintSHA256(srv.Certificate().Raw) {
		t.Fatalf("enroll with a wrong pin: %v", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("config written despite the mismatch: %v", err)
	}
}

func TestEnrollRejectsBadToken(t *testing.T) {
	err := run(context.Background(), []string{"enroll", "-config", filepath.Join(t.TempDir(), "a.json"), "lcmenroll_xyz"}, &bytes.Buffer{}, &bytes.Buffer{})
	if !errors.Is(err, agentproto.ErrInvalid) {
		t.Fatalf("bad token: %v", err)
	}
}

func TestConfigFileMode(t *testing.T) {
	sec, _ := agentproto.NewSecret()
	c := config{AgentID: agentproto.NewID(), Secret: sec, GatewayURL: "wss://gw:9320/mqtt",
		TLSFingerprintSHA256: agentproto.FingerprintSHA256([]byte("c"))}
	path := filepath.Join(t.TempDir(), "d", "agent.json")
	if err := saveConfig(path, c); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(path)
	dst, _ := os.Stat(filepath.Dir(path))
	if st.Mode().Perm() != 0o600 || dst.Mode().Perm() != 0o700 {
		t.Fatalf("modes %v %v", st.Mode(), dst.Mode())
	}
	got, err := loadConfig(path)
	if err != nil || got != c {
		t.Fatalf("load: %v %+v", err, got)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := loadConfig(path); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("world-readable config accepted: %v", err)
	}
}

func TestVersionAndUsage(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-version"}, &out, &out); err != nil || !strings.HasPrefix(out.String(), "lcm-agent ") {
		t.Fatalf("-version: %v %q", err, out.String())
	}
	if err := run(context.Background(), []string{"bogus"}, &out, &out); err == nil {
		t.Fatal("unknown command accepted")
	}
}

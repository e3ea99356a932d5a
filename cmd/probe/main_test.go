package main

import (
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestProbe(t *testing.T) {
	status := http.StatusOK
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(status)
		io.WriteString(w, "database unavailable\nmore\n")
	})
	plain := httptest.NewServer(h)
	defer plain.Close()
	tlsSrv := httptest.NewTLSServer(h)
	defer tlsSrv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsSrv.Certificate().Raw}), 0o600)

	if err := run([]string{plain.URL + "/healthz"}, io.Discard); err != nil {
		t.Fatalf("200: %v", err)
	}
	if err := run([]string{"-insecure", tlsSrv.URL}, io.Discard); err != nil {
		t.Fatalf("TLS, -insecure: %v", err)
	}
	if err := run([]string{"-ca", ca, tlsSrv.URL}, io.Discard); err != nil {
		t.Fatalf("TLS, -ca: %v", err)
	}
	if err := run([]string{tlsSrv.URL}, io.Discard); err == nil || !strings.Contains(err.Error(), "unknown authority") {
		t.Fatalf("TLS without trust: %v", err)
	}
	status = http.StatusServiceUnavailable
	err := run([]string{plain.URL}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "503") || !strings.Contains(err.Error(), "database unavailable") || strings.Contains(err.Error(), "more") {
		t.Fatalf("503: %v", err)
	}
	for _, args := range [][]string{nil, {"a", "b"}, {"-ca", "/nonexistent", plain.URL}, {"http://127.0.0.1:1/"}} {
		if err := run(args, io.Discard); err == nil {
			t.Errorf("run(%v) succeeded", args)
		}
	}
}

package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/bus/bustest"
	"github.com/lcmproject/lcm/internal/scanner"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/vulndb/vulndbtest"
)

// TestServeAsAContainerWould runs `lcm-scanner serve` configured by the
// environment alone (the NATS password in a secret file) under its
// least-privilege account: it answers the control plane's status request,
// and its own listener serves /healthz and /metrics with the scanner's
// figures.
func TestServeAsAContainerWould(t *testing.T) {
	srv := bustest.StartScanner(t)
	api := srv.API
	pw := filepath.Join(t.TempDir(), "nats_password")
	os.WriteFile(pw, []byte(bustest.ScannerPassword+"\n"), 0o600)
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t))
	for k, v := range map[string]string{"LCM_SCANNER_NATS_URL": srv.URL, "LCM_SCANNER_NATS_USER": bustest.ScannerUser,
		"LCM_SCANNER_NATS_CA": srv.CAFile, "LCM_SCANNER_NATS_PASSWORD_FILE": pw, "LCM_SCANNER_DB": vulndbtest.Build(t),
		"LCM_SCANNER_METRICS_ADDR": metricsAddr, "LCM_SCANNER_CONCURRENCY": "3"} {
		t.Setenv(k, v)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"serve"}, io.Discard, io.Discard) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve ended with %v", err)
		}
	})
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + metricsAddr + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	testutil.WaitFor(t, 20*time.Second, "scanner /healthz 200", func() bool { code, _ := get("/healthz"); return code == 200 })
	c := &scanner.Client{Bus: api}
	testutil.WaitFor(t, 20*time.Second, "scanner answers status", func() bool {
		st, ok := c.Status(ctx)
		return ok && st.Enabled && st.Records == 6
	})
	code, body := get("/metrics")
	for _, want := range []string{"lcm_scanner_database_records 6", "process_resident_memory_bytes"} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("/metrics (%d) lacks %q", code, want)
		}
	}

	t.Setenv("LCM_SCANNER_CONCURRENCY", "none")
	if err := run(ctx, []string{"serve"}, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "LCM_SCANNER_CONCURRENCY") {
		t.Errorf("bad LCM_SCANNER_CONCURRENCY: %v", err)
	}
}

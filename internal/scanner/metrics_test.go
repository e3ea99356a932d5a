package scanner_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/lcmproject/lcm/internal/bus"
	"github.com/lcmproject/lcm/internal/metrics"
	"github.com/lcmproject/lcm/internal/sbom"
	"github.com/lcmproject/lcm/internal/scanner"
	"github.com/lcmproject/lcm/internal/vulndb/vulndbtest"
)

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func histogramCount(t *testing.T, o prometheus.Observer) uint64 {
	t.Helper()
	var m dto.Metric
	if err := o.(prometheus.Metric).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}

// TestScanMetrics: every scan is counted by engine and result and timed;
// the database gauges read what the scanner loaded at scrape time.
func TestScanMetrics(t *testing.T) {
	b := openBus(t)
	s := serve(t, b, vulndbtest.Build(t))
	s.RegisterMetrics(quiet)
	ok := metrics.ScannerScans.WithLabelValues(scanner.Engine, "ok")
	disabled := metrics.ScannerScans.WithLabelValues(scanner.Engine, "disabled")
	okBefore, disBefore := counterValue(t, ok), counterValue(t, disabled)
	durBefore := histogramCount(t, metrics.ScannerScanDuration.WithLabelValues(scanner.Engine))

	c := &scanner.Client{Bus: b}
	if _, _, err := c.Scan(context.Background(), "k", sbom.Build(oldBookworm, time.Now())); err != nil {
		t.Fatal(err)
	}
	empty := scanner.New(t.TempDir(), "empty", quiet)
	if res := empty.Scan(bus.ScanRequest{V: bus.MessageVersion, Key: "k"}); !res.Disabled {
		t.Fatalf("scan without a database: %+v", res)
	}
	if got := counterValue(t, ok) - okBefore; got != 1 {
		t.Errorf("ok scans counted %v, want 1", got)
	}
	if got := counterValue(t, disabled) - disBefore; got != 1 {
		t.Errorf("disabled scans counted %v, want 1", got)
	}
	if got := histogramCount(t, metrics.ScannerScanDuration.WithLabelValues(scanner.Engine)) - durBefore; got != 1 {
		t.Errorf("scan durations observed %d, want 1 (disabled answers are not timed)", got)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, err := metrics.Serve(ctx, "127.0.0.1:0", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"lcm_scanner_database_records 6", "lcm_scanner_database_newest_timestamp_seconds ", `lcm_scanner_scans_total{engine="osv",result="ok"}`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("scrape lacks %q", want)
		}
	}
}

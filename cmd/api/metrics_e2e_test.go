package main

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/lcmproject/lcm/internal/bus"
	"github.com/lcmproject/lcm/internal/testutil"
)

// TestMetricsE2E: with metrics_port set, the real binary serves /metrics
// on its own listener: request counts by route template (never by raw id),
// sign-in failures, the job streams' consumer backlogs; without it, no
// listener.
func TestMetricsE2E(t *testing.T) {
	port := testutil.FreePort(t)
	a := testutil.StartAPI(t, testutil.APIOptions{Dev: true, Config: map[string]any{"metrics_port": port}})
	tok := login(t, a, "admin", a.AdminPassword)
	a.Do("GET", "/api/v1/servers", tok, nil, nil)
	a.Do("GET", "/api/v1/servers/3f0c2b8e-1111-4222-8333-944455556666", tok, nil, nil)
	a.Do("POST", "/api/v1/auth/login", "", map[string]string{"username": "admin", "password": "wrong"}, nil)

	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	has := func(name string, want map[string]string) bool {
		f := fams[name]
		if f == nil {
			return false
		}
	next:
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if got[k] != v {
					continue next
				}
			}
			return true
		}
		return false
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
	}{
		{"lcm_http_requests_total", map[string]string{"method": "GET", "route": "/api/v1/servers", "code": "200"}},
		{"lcm_http_requests_total", map[string]string{"method": "GET", "route": "/api/v1/servers/:id", "code": "404"}},
		{"lcm_http_request_duration_seconds", map[string]string{"method": "POST", "route": "/api/v1/auth/login"}},
		{"lcm_auth_login_failures_total", map[string]string{"step": "password", "reason": "invalid"}},
		{"lcm_nats_consumer_pending_messages", map[string]string{"stream": bus.StreamJobEvents, "consumer": bus.ConsumerIngest}},
		{"process_resident_memory_bytes", nil},
	} {
		if !has(c.name, c.labels) {
			t.Errorf("no %s%v in the scrape", c.name, c.labels)
		}
	}
	if strings.Contains(string(body), "3f0c2b8e") {
		t.Error("a raw id reached a label")
	}
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}

	// Off by default.
	b := testutil.StartAPI(t, testutil.APIOptions{Dev: true})
	defer b.Stop()
	if _, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port)); err == nil {
		t.Fatal("a metrics listener without metrics_port")
	}
}

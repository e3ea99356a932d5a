package metrics

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape serves the registry on a loopback port and parses one scrape
// with Prometheus' own text parser.
func scrape(t *testing.T) map[string]*familyView {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, err := Serve(ctx, "127.0.0.1:0", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("the scrape does not parse: %v\n%s", err, body)
	}
	out := map[string]*familyView{}
	for name, f := range fams {
		v := &familyView{}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			val := m.GetGauge().GetValue() + m.GetCounter().GetValue() + float64(m.GetHistogram().GetSampleCount())
			v.samples = append(v.samples, sample{labels, val})
		}
		out[name] = v
	}
	return out
}

type sample struct {
	labels map[string]string
	value  float64
}

type familyView struct{ samples []sample }

func (f *familyView) find(want map[string]string) (float64, bool) {
	if f == nil {
		return 0, false
	}
next:
	for _, s := range f.samples {
		for k, v := range want {
			if s.labels[k] != v {
				continue next
			}
		}
		return s.value, true
	}
	return 0, false
}

// TestScrapeCarriesEveryFamily: a scrape parses and carries the counters,
// the Go and process collectors and a scrape-time gauge; a gauge whose
// read fails or hangs is left out of that scrape, not the whole scrape.
func TestScrapeCarriesEveryFamily(t *testing.T) {
	HTTPRequests.WithLabelValues("GET", "/api/v1/servers", "200").Inc()
	JobsFinished.WithLabelValues("refresh", "success").Add(2)
	JobDuration.WithLabelValues("refresh", "success").Observe(1.5)
	GaugeFunc("lcm_test_active", "test gauge", []string{"status"}, time.Second, nil, func(context.Context) ([]Gauge, error) {
		return []Gauge{{Labels: []string{"running"}, Value: 3}}, nil
	})
	GaugeFunc("lcm_test_failing", "fails", nil, time.Second, nil, func(context.Context) ([]Gauge, error) {
		return nil, errors.New("database away")
	})
	GaugeFunc("lcm_test_hanging", "hangs until its deadline", nil, 50*time.Millisecond, nil, func(ctx context.Context) ([]Gauge, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	// Registering a name again replaces the reader (a process wired twice).
	GaugeFunc("lcm_test_active", "test gauge", []string{"status"}, time.Second, nil, func(context.Context) ([]Gauge, error) {
		return []Gauge{{Labels: []string{"running"}, Value: 4}}, nil
	})
	start := time.Now()
	fams := scrape(t)
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("a scrape took %s", d)
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"lcm_http_requests_total", map[string]string{"method": "GET", "route": "/api/v1/servers", "code": "200"}, 1},
		{"lcm_jobs_finished_total", map[string]string{"kind": "refresh", "status": "success"}, 2},
		{"lcm_job_duration_seconds", map[string]string{"kind": "refresh", "status": "success"}, 1},
		{"lcm_test_active", map[string]string{"status": "running"}, 4},
		{"lcm_ssh_connect_errors_total", map[string]string{"stage": "handshake"}, 0},
	} {
		if got, ok := fams[c.name].find(c.labels); !ok || got != c.want {
			t.Errorf("%s%v = %v (present %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes"} {
		if fams[name] == nil {
			t.Errorf("%s missing", name)
		}
	}
	for _, name := range []string{"lcm_test_failing", "lcm_test_hanging"} {
		if fams[name] != nil && len(fams[name].samples) > 0 {
			t.Errorf("%s has samples although its read failed", name)
		}
	}
}

// TestServeOff: an empty address serves nothing.
func TestServeOff(t *testing.T) {
	addr, err := Serve(context.Background(), "", nil, nil)
	if err != nil || addr != "" {
		t.Fatalf("Serve(\"\") = %q, %v", addr, err)
	}
}

// TestHealthz: with a health function the listener answers /healthz with
// 200 while it holds and 503 with the reason when it does not; without one
// there is no /healthz.
func TestHealthz(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var down error
	addr, err := Serve(ctx, "127.0.0.1:0", nil, func() error { return down })
	if err != nil {
		t.Fatal(err)
	}
	get := func(base string) (int, string) {
		t.Helper()
		resp, err := http.Get("http://" + base + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get(addr); code != 200 || body != "ok\n" {
		t.Fatalf("healthy: %d %q", code, body)
	}
	down = errors.New("NATS not connected")
	if code, body := get(addr); code != 503 || !strings.Contains(body, "NATS not connected") {
		t.Fatalf("unhealthy: %d %q", code, body)
	}
	plain, err := Serve(ctx, "127.0.0.1:0", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := get(plain); code != 404 {
		t.Fatalf("/healthz without a health function: %d", code)
	}
}

// TestDashboardUsesRealMetrics: every lcm_* series the Grafana dashboard in
// deploy/ queries is one this repo exports (declared here, or a gauge the
// API wires in cmd/api/wire_metrics.go).
func TestDashboardUsesRealMetrics(t *testing.T) {
	known := map[string]bool{}
	ch := make(chan *prometheus.Desc, 100)
	go func() { Registry.Describe(ch); close(ch) }()
	nameRe := regexp.MustCompile(`fqName: "([a-z_:]+)"`)
	for d := range ch {
		if m := nameRe.FindStringSubmatch(d.String()); m != nil {
			known[m[1]] = true
		}
	}
	wired, err := os.ReadFile("../../cmd/api/wire_metrics.go")
	if err != nil {
		t.Fatal(err)
	}
	lit := regexp.MustCompile(`"(lcm_[a-z_]+)"`)
	for _, m := range lit.FindAllStringSubmatch(string(wired), -1) {
		known[m[1]] = true
	}
	raw, err := os.ReadFile("../../deploy/grafana/lcm-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatal(err)
	}
	series := regexp.MustCompile(`\b(lcm_[a-z_]+)`)
	n := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			for _, m := range series.FindAllStringSubmatch(tg.Expr, -1) {
				name := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(m[1], "_bucket"), "_sum"), "_count")
				n++
				if !known[name] {
					t.Errorf("panel %q queries %s, which LCM does not export", p.Title, m[1])
				}
			}
		}
	}
	if n < 10 {
		t.Fatalf("only %d series in the dashboard", n)
	}
}

// TestServePprofOnlyWhenAsked: the profiling endpoints answer on the
// metrics listener with WithPprof(true) and are 404 without it.
func TestServePprofOnlyWhenAsked(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, on := range []bool{false, true} {
		addr, err := Serve(ctx, "127.0.0.1:0", nil, nil, WithPprof(on))
		if err != nil {
			t.Fatal(err)
		}
		res, err := http.Get("http://" + addr + "/debug/pprof/goroutine?debug=1")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		want := http.StatusNotFound
		if on {
			want = http.StatusOK
		}
		if res.StatusCode != want || on && !strings.Contains(string(body), "goroutine profile") {
			t.Fatalf("pprof %v: %d %.80q", on, res.StatusCode, body)
		}
	}
}

// Package metrics holds LCM's Prometheus metrics: one registry per process
// with the Go and process collectors, the counters and histograms the
// packages update, and collectors that read a current figure at scrape
// time (jobs by state, NATS consumer backlog). Names follow the Prometheus
// conventions: lcm_ prefix, base units (seconds, bytes), _total for
// counters. docs/metrics.md lists them all.
package metrics

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Registry is this process's registry. The counters below are registered
// in it; collectors that need a process's services are added with
// Register when the process wires them.
var Registry = prometheus.NewRegistry()

var (
	// HTTPRequests counts answered API requests by method, route template
	// (bounded: gin's registered path, "unmatched" otherwise) and status.
	HTTPRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lcm_http_requests_total", Help: "API requests answered, by method, route template and status code.",
	}, []string{"method", "route", "code"})
	// HTTPDuration is the answer latency by method and route template.
	HTTPDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "lcm_http_request_duration_seconds", Help: "API request latency by method and route template.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}, []string{"method", "route"})
	// LoginFailures counts refused sign-ins by step (password, totp) and
	// reason (invalid, locked).
	LoginFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lcm_auth_login_failures_total", Help: "Refused sign-in attempts by step and reason.",
	}, []string{"step", "reason"})
	// RateLimited counts API-key requests refused by the rate limit.
	RateLimited = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "lcm_api_key_rate_limited_total", Help: "API-key requests refused by the per-key rate limit.",
	})
	// AccessLogSuppressed counts access-log lines of unauthenticated
	// requests left out by the log's rate limit.
	AccessLogSuppressed = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "lcm_http_access_log_suppressed_total", Help: "Access-log lines of unauthenticated requests left out by the log's rate limit.",
	})
	// JobsFinished counts jobs that reached a final state, and
	// JobDuration their duration from start to the final state.
	JobsFinished = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lcm_jobs_finished_total", Help: "Jobs that reached a final state, by kind and status.",
	}, []string{"kind", "status"})
	JobDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "lcm_job_duration_seconds", Help: "Job duration from start to final state, by kind and status.",
		Buckets: []float64{.1, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600},
	}, []string{"kind", "status"})
	// IngestEvents and IngestBytes measure the jobs ingest: events stored
	// (state changes and output chunks) and output bytes.
	IngestEvents = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lcm_ingest_events_total", Help: "Job events stored by the ingest, by type (state, output).",
	}, []string{"type"})
	IngestBytes = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "lcm_ingest_output_bytes_total", Help: "Job output bytes stored by the ingest.",
	})
	// SSHErrors counts failed SSH connections by stage: dial (TCP),
	// handshake (key exchange, host key, authentication).
	SSHErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lcm_ssh_connect_errors_total", Help: "Failed SSH connections by stage (dial, handshake).",
	}, []string{"stage"})
	// ScannerScans counts SBOMs matched by a scanner (lcm-scanner, or the
	// one inside an all-in-one lcm-api) by engine and result (ok, error,
	// disabled: no database), and ScannerScanDuration their matching time.
	ScannerScans = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lcm_scanner_scans_total", Help: "SBOMs a scanner matched, by engine and result (ok, error, disabled).",
	}, []string{"engine", "result"})
	ScannerScanDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "lcm_scanner_scan_duration_seconds", Help: "Time a scanner took to match one SBOM, by engine.",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
	}, []string{"engine"})
	// Panics counts recovered panics by where they happened.
	Panics = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lcm_panics_recovered_total", Help: "Panics recovered and counted, by where they happened.",
	}, []string{"where"})
)

func init() {
	Registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		HTTPRequests, HTTPDuration, LoginFailures, RateLimited, AccessLogSuppressed, JobsFinished, JobDuration,
		IngestEvents, IngestBytes, SSHErrors, Panics, ScannerScans, ScannerScanDuration,
	)
	// The three SSH stages exist from the start, so a rate over them is
	// defined before the first error.
	for _, s := range []string{"dial", "handshake"} {
		SSHErrors.WithLabelValues(s)
	}
}

// Gauge is one labelled figure read at scrape time.
type Gauge struct {
	Labels []string
	Value  float64
}

// GaugeFunc registers a gauge family whose values a function reads at
// every scrape, bounded by timeout (a slow database answers nothing for
// that scrape rather than holding it). A failed read is logged at debug.
func GaugeFunc(name, help string, labels []string, timeout time.Duration, log *slog.Logger, read func(ctx context.Context) ([]Gauge, error)) {
	g := &gaugeFunc{desc: prometheus.NewDesc(name, help, labels, nil), timeout: timeout, log: log, read: read}
	if err := Registry.Register(g); err != nil {
		// Registered before (a process wired twice, as tests do): the
		// newest reader wins.
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			panic(err)
		}
		Registry.Unregister(are.ExistingCollector)
		Registry.MustRegister(g)
	}
}

type gaugeFunc struct {
	desc    *prometheus.Desc
	timeout time.Duration
	log     *slog.Logger
	read    func(ctx context.Context) ([]Gauge, error)
}

func (g *gaugeFunc) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

func (g *gaugeFunc) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), g.timeout)
	defer cancel()
	vals, err := g.read(ctx)
	if err != nil {
		if g.log != nil {
			g.log.Debug("metrics: read failed", "metric", g.desc.String(), "err", err)
		}
		return
	}
	for _, v := range vals {
		m, err := prometheus.NewConstMetric(g.desc, prometheus.GaugeValue, v.Value, v.Labels...)
		if err == nil {
			ch <- m
		}
	}
}

// Handler serves the registry in the Prometheus text format.
func Handler() http.Handler {
	return promhttp.HandlerFor(Registry, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// ServeOption changes what Serve serves.
type ServeOption func(*serveOptions)

type serveOptions struct{ pprof bool }

// WithPprof adds Go's profiling endpoints (/debug/pprof/) to the listener.
func WithPprof(on bool) ServeOption { return func(o *serveOptions) { o.pprof = on } }

// Serve listens on addr and serves /metrics until ctx ends; "" means
// off. When health is not nil it also serves /healthz: 200 "ok" while
// health returns nil, 503 with the reason otherwise (what a container
// health check or a load balancer asks). It returns the bound address.
func Serve(ctx context.Context, addr string, log *slog.Logger, health func() error, opts ...ServeOption) (string, error) {
	var o serveOptions
	for _, opt := range opts {
		opt(&o)
	}
	if addr == "" {
		return "", nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", Handler())
	if health != nil {
		mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("Cache-Control", "no-store")
			if err := health(); err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = io.WriteString(w, err.Error()+"\n")
				return
			}
			_, _ = io.WriteString(w, "ok\n")
		})
	}
	if o.pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	go func() {
		if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed && log != nil {
			log.Error("metrics listener stopped", "err", err)
		}
	}()
	if log != nil {
		log.Info("metrics listener on", "url", "http://"+ln.Addr().String()+"/metrics")
	}
	return ln.Addr().String(), nil
}

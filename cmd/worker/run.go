package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/lcmproject/lcm/internal/bus"
	"github.com/lcmproject/lcm/internal/config"
	"github.com/lcmproject/lcm/internal/health/guard"
	"github.com/lcmproject/lcm/internal/jobs/runner"
	"github.com/lcmproject/lcm/internal/metrics"
	"github.com/lcmproject/lcm/internal/version"
)

const name = "lcm-worker"

// options are the worker's settings: flags, each with an LCM_WORKER_*
// environment variable as default (flags win).
type options struct {
	natsURL     string
	user        string
	password    string
	caFile      string
	segments    string
	concurrency int
	id          string
	debug       bool
	version     bool
	metricsAddr string
}

func parse(args []string, stderr io.Writer) (options, error) {
	env := func(k, def string) string {
		if v := os.Getenv(k); v != "" {
			return v
		}
		return def
	}
	var o options
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.natsURL, "nats-url", env("LCM_WORKER_NATS_URL", ""), "NATS URL of the control plane, e.g. tls://lcm.example:4222 (env LCM_WORKER_NATS_URL)")
	fs.StringVar(&o.user, "nats-user", env("LCM_WORKER_NATS_USER", ""), "NATS user (env LCM_WORKER_NATS_USER)")
	fs.StringVar(&o.password, "nats-password", "", "NATS password; prefer env LCM_WORKER_NATS_PASSWORD or LCM_WORKER_NATS_PASSWORD_FILE (a file holding it), flags are visible in ps")
	fs.StringVar(&o.caFile, "nats-ca", env("LCM_WORKER_NATS_CA", ""), "PEM file of the CA (or self-signed certificate) of a TLS NATS, e.g. lcm-api's UI certificate (env LCM_WORKER_NATS_CA)")
	fs.StringVar(&o.segments, "segments", env("LCM_WORKER_SEGMENTS", "default"), "comma-separated server segments to serve (env LCM_WORKER_SEGMENTS)")
	concurrency := runner.DefaultConcurrency
	if v := os.Getenv("LCM_WORKER_CONCURRENCY"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return o, fmt.Errorf("environment LCM_WORKER_CONCURRENCY: %q is not a positive whole number", v)
		}
		concurrency = n
	}
	fs.IntVar(&o.concurrency, "concurrency", concurrency, "jobs run at the same time (env LCM_WORKER_CONCURRENCY)")
	fs.StringVar(&o.id, "id", env("LCM_WORKER_ID", ""), "worker id in job history (default <hostname>-<random>)")
	fs.StringVar(&o.metricsAddr, "metrics-addr", env("LCM_WORKER_METRICS_ADDR", ""), "serve Prometheus metrics (/metrics) and /healthz on this address, e.g. 127.0.0.1:9340 (plain HTTP; off when empty; env LCM_WORKER_METRICS_ADDR)")
	fs.BoolVar(&o.debug, "debug", false, "log at debug level")
	fs.BoolVar(&o.version, "version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if o.concurrency < 1 {
		return o, fmt.Errorf("-concurrency %d: want at least 1", o.concurrency)
	}
	if o.password == "" {
		pw, _, err := config.SecretEnv(os.Getenv, "LCM_WORKER_NATS_PASSWORD")
		if err != nil {
			return o, err
		}
		o.password = pw
	}
	return o, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parse(args, stderr)
	if err != nil {
		return err
	}
	if o.version {
		fmt.Fprintln(stdout, version.Get().String(name))
		return nil
	}
	if o.natsURL == "" {
		return errors.New("-nats-url (or LCM_WORKER_NATS_URL) is required: the worker joins a control plane's NATS")
	}
	level := slog.LevelInfo
	if o.debug {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	var tlsCfg *tls.Config
	if o.caFile != "" {
		pem, err := os.ReadFile(o.caFile)
		if err != nil {
			return fmt.Errorf("-nats-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("-nats-ca %s: no PEM certificate", o.caFile)
		}
		tlsCfg = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	var segments []string
	for _, s := range strings.Split(o.segments, ",") {
		if s = strings.TrimSpace(s); s != "" {
			segments = append(segments, s)
		}
	}
	b, err := bus.Connect(ctx, bus.ClientOptions{URL: o.natsURL, User: o.user, Password: o.password, TLS: tlsCfg, Name: name})
	if err != nil {
		return err
	}
	defer b.Close()
	w, err := runner.New(runner.Config{Bus: b, ID: o.id, Segments: segments, Concurrency: o.concurrency, Log: log,
		// The memory a fleet-wide run used goes back to the system once
		// the pool has drained (the runtime would return it over minutes).
		OnPoolDrained: debug.FreeOSMemory})
	if err != nil {
		return err
	}
	if _, err := metrics.Serve(ctx, o.metricsAddr, log, func() error {
		if !b.Healthy() {
			return errors.New("NATS not connected")
		}
		return nil
	}); err != nil {
		return fmt.Errorf("-metrics-addr: %w", err)
	}
	log.Info("=== LCM worker starting ===", "version", version.Get().String(name), "worker", w.ID(), "nats", o.natsURL)
	// Self-healing as in lcm-api (guard.Run): 10 recovered panics in 15
	// minutes, or 5 failed NATS checks in a row (75 s without a connection
	// although the client reconnects by itself), stop the worker gracefully
	// with exit code 70; under systemd it sends READY=1 and WATCHDOG=1 while
	// connected.
	return guard.Run(ctx, log, func(context.Context) error {
		if !b.Healthy() {
			return errors.New("not connected to NATS")
		}
		return nil
	}, w.Run)
}

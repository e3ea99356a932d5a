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
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/lcmproject/lcm/internal/agentgw"
	"github.com/lcmproject/lcm/internal/bus"
	"github.com/lcmproject/lcm/internal/config"
	"github.com/lcmproject/lcm/internal/health/guard"
	"github.com/lcmproject/lcm/internal/metrics"
	"github.com/lcmproject/lcm/internal/version"
	"github.com/lcmproject/lcm/pkg/agentproto"
)

const name = "lcm-agentgw"

// shutdownTimeout bounds the graceful stop: agents are disconnected, then
// HTTP drained, then NATS.
const shutdownTimeout = 9 * time.Second

type options struct {
	listen, certFile, keyFile string
	natsURL, natsUser         string
	natsPasswordFile, natsCA  string
	metricsAddr, gwName       string
	debug, version            bool
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	env := func(k, def string) string {
		if v := os.Getenv(k); v != "" {
			return v
		}
		return def
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.listen, "listen", env("LCM_AGENTGW_LISTEN", "0.0.0.0:9320"), "address of the agent listener (env LCM_AGENTGW_LISTEN)")
	fs.StringVar(&o.certFile, "tls-cert", env("LCM_AGENTGW_TLS_CERT", ""), "TLS certificate (PEM) the agents pin (env LCM_AGENTGW_TLS_CERT)")
	fs.StringVar(&o.keyFile, "tls-key", env("LCM_AGENTGW_TLS_KEY", ""), "TLS private key (PEM) (env LCM_AGENTGW_TLS_KEY)")
	fs.StringVar(&o.natsURL, "nats-url", env("LCM_AGENTGW_NATS_URL", ""), "URL of the NATS JetStream cluster, e.g. nats://nats:4222 (env LCM_AGENTGW_NATS_URL)")
	fs.StringVar(&o.natsUser, "nats-user", env("LCM_AGENTGW_NATS_USER", ""), "NATS user (env LCM_AGENTGW_NATS_USER)")
	fs.StringVar(&o.natsPasswordFile, "nats-password-file", "", "file holding the NATS password (or env LCM_AGENTGW_NATS_PASSWORD, LCM_AGENTGW_NATS_PASSWORD_FILE; LCM_NATS_PASSWORD(_FILE) as before)")
	fs.StringVar(&o.natsCA, "nats-ca", env("LCM_AGENTGW_NATS_CA", ""), "PEM file of the CA (or self-signed certificate) of a TLS NATS, e.g. lcm-api's UI certificate when it listens (nats.listen) (env LCM_AGENTGW_NATS_CA)")
	fs.StringVar(&o.metricsAddr, "metrics-addr", env("LCM_AGENTGW_METRICS_ADDR", ""), "serve Prometheus metrics (/metrics) and /healthz on this address, e.g. 127.0.0.1:9341 (plain HTTP; off when empty; env LCM_AGENTGW_METRICS_ADDR)")
	fs.StringVar(&o.gwName, "name", env("LCM_AGENTGW_NAME", ""), "the gateway's name in the agents' state (default: the host name); use the name given in lcm-api's agent_gateways (env LCM_AGENTGW_NAME)")
	fs.BoolVar(&o.debug, "debug", false, "log at debug level")
	fs.BoolVar(&o.version, "version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return o, nil
}

// natsPassword is the gateway's NATS password: -nats-password-file, else
// the environment (LCM_AGENTGW_NATS_PASSWORD first, LCM_NATS_PASSWORD as
// documented before; each also as a _FILE).
func (o options) natsPassword() (string, error) {
	if o.natsPasswordFile != "" {
		b, err := os.ReadFile(o.natsPasswordFile)
		if err != nil {
			return "", fmt.Errorf("NATS password file: %w", err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	pw, _, err := config.FirstSecretEnv(os.Getenv, "LCM_AGENTGW_NATS_PASSWORD", "LCM_NATS_PASSWORD")
	return pw, err
}

func (o options) validate() error {
	var problems []string
	if o.certFile == "" || o.keyFile == "" {
		problems = append(problems, "-tls-cert and -tls-key are required (agents only talk TLS)")
	}
	if o.natsURL == "" {
		problems = append(problems, "-nats-url is required (a standalone gateway bridges into an external NATS)")
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// agentBucket opens the agent credential bucket, waiting while NATS or the
// bucket (created by lcm-api) is not there yet.
func agentBucket(ctx context.Context, b *bus.Bus, log *slog.Logger) (*bus.AgentCredentials, error) {
	for warned := false; ; {
		c, err := b.AgentCredentials(ctx)
		if err == nil {
			return c, nil
		}
		if !warned {
			log.Warn("waiting for NATS and the agent credential bucket (lcm-api creates it)", "err", err)
			warned = true
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("agent credential bucket: %w", err)
		case <-time.After(time.Second):
		}
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	if o.version {
		fmt.Fprintln(stdout, version.Get().String(name))
		return nil
	}
	if err := o.validate(); err != nil {
		return err
	}
	level := slog.LevelInfo
	if o.debug {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	pair, err := tls.LoadX509KeyPair(o.certFile, o.keyFile)
	if err != nil {
		return fmt.Errorf("TLS certificate: %w", err)
	}
	password, err := o.natsPassword()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("agent listener on %s: %w", o.listen, err)
	}
	var natsTLS *tls.Config
	if o.natsCA != "" {
		pem, err := os.ReadFile(o.natsCA)
		if err != nil {
			ln.Close()
			return fmt.Errorf("-nats-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			ln.Close()
			return fmt.Errorf("-nats-ca %s: no PEM certificate", o.natsCA)
		}
		natsTLS = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	// Connect, not Open: the gateway creates no stream or bucket (its NATS
	// user may not, see bus.AgentGatewayUser); lcm-api owns them.
	b, err := bus.Connect(ctx, bus.ClientOptions{URL: o.natsURL, User: o.natsUser, Password: password, TLS: natsTLS, Name: name})
	if err != nil {
		ln.Close()
		return err
	}
	defer b.Close()
	// Self-healing as in lcm-api (guard.Run): recovered panics (hooks, the
	// agent listener, the revalidation loop) are counted; 10 in 15
	// minutes, or 5 failed NATS checks in a row, stop the gateway
	// gracefully with exit code 70 for its supervisor to start it afresh.
	return guard.Run(ctx, log, func(context.Context) error {
		if !b.Healthy() {
			return errors.New("not connected to NATS")
		}
		return nil
	}, func(ctx context.Context) error { return serveGateway(ctx, o, b, ln, pair, log) })
}

// serveGateway runs the gateway on ln until ctx ends, then disconnects the
// agents and drains HTTP.
func serveGateway(ctx context.Context, o options, b *bus.Bus, ln net.Listener, pair tls.Certificate, log *slog.Logger) error {
	creds, err := agentBucket(ctx, b, log)
	if err != nil {
		ln.Close()
		return err
	}
	gw, err := agentgw.New(agentgw.Options{Bus: b, Credentials: creds, Logger: log, Name: o.gwName})
	if err != nil {
		ln.Close()
		return err
	}
	defer gw.Close()
	metrics.GaugeFunc("lcm_agentgw_connected_agents", "Agents connected to this gateway now.", nil, time.Second, log,
		func(context.Context) ([]metrics.Gauge, error) {
			return []metrics.Gauge{{Value: float64(gw.ConnectedClients())}}, nil
		})
	if _, err := metrics.Serve(ctx, o.metricsAddr, log, func() error {
		if !b.Healthy() {
			return errors.New("NATS not connected")
		}
		return nil
	}); err != nil {
		ln.Close()
		return fmt.Errorf("-metrics-addr: %w", err)
	}
	srv := &http.Server{
		Handler:           gw.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		// No WriteTimeout: agent WebSockets stay open for days.
		IdleTimeout: 2 * time.Minute,
		TLSConfig:   &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12},
		ErrorLog:    slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	served := make(chan error, 1)
	go func() { served <- srv.ServeTLS(ln, "", "") }()
	log.Info("lcm-agentgw started", "version", version.Get().String(name), "name", gw.Name(), "listen", ln.Addr().String(),
		"tls_sha256", agentproto.FingerprintSHA256(pair.Certificate[0]))
	select {
	case <-ctx.Done():
	case err := <-served:
		return fmt.Errorf("agent listener: %w", err)
	}
	log.Info("lcm-agentgw stopping")
	_ = gw.Close() // disconnects agents (hijacked connections Shutdown does not see)
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	return nil
}

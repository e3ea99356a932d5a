// Command lcm-scanner matches CycloneDX SBOMs against an offline OSV
// database. As a process of the deployment (`lcm-scanner serve`) it takes
// scan requests from the control plane's NATS (queue group "scanners");
// `lcm-scanner scan` matches one SBOM file for a quick check by hand. It
// never contacts managed servers and holds no database connection or
// master key.
//
// Usage:
//
//	lcm-scanner serve -nats-url tls://lcm:4222 -db /var/lib/lcm-scanner/osv [-metrics-addr 127.0.0.1:9342]
//	lcm-scanner scan -sbom sbom.json -db DIR [-min-severity high]
//	lcm-scanner -version
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
	"os/signal"
	"runtime/debug"
	"strconv"
	"syscall"

	"github.com/lcmproject/lcm/internal/bus"
	"github.com/lcmproject/lcm/internal/config"
	"github.com/lcmproject/lcm/internal/health"
	"github.com/lcmproject/lcm/internal/health/guard"
	"github.com/lcmproject/lcm/internal/metrics"
	"github.com/lcmproject/lcm/internal/sbom"
	"github.com/lcmproject/lcm/internal/scanner"
	"github.com/lcmproject/lcm/internal/version"
	"github.com/lcmproject/lcm/internal/vulndb"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	var ec health.ExitError
	if errors.As(err, &ec) {
		os.Exit(int(ec))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "lcm-scanner:", err)
		os.Exit(1)
	}
}

const usage = "usage: lcm-scanner serve -nats-url URL -db DIR | scan -sbom FILE -db DIR [-min-severity low|medium|high|critical] | -version"

func env(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && (args[0] == "-version" || args[0] == "--version") {
		fmt.Fprintln(stdout, version.Get().String("lcm-scanner"))
		return nil
	}
	if len(args) == 0 {
		return errors.New(usage)
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], stderr)
	case "scan":
		return scanFile(args[1:], stdout, stderr)
	}
	return errors.New(usage)
}

func serve(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("nats-url", env("LCM_SCANNER_NATS_URL", ""), "NATS URL of the control plane (env LCM_SCANNER_NATS_URL)")
	user := fs.String("nats-user", env("LCM_SCANNER_NATS_USER", ""), "NATS user (env LCM_SCANNER_NATS_USER); the password comes from env LCM_SCANNER_NATS_PASSWORD or the file LCM_SCANNER_NATS_PASSWORD_FILE names")
	ca := fs.String("nats-ca", env("LCM_SCANNER_NATS_CA", ""), "PEM file of the CA of a TLS NATS (env LCM_SCANNER_NATS_CA)")
	dir := fs.String("db", env("LCM_SCANNER_DB", "/var/lib/lcm-scanner/osv"), "directory of the OSV export: <ecosystem>/all.zip (env LCM_SCANNER_DB)")
	conc := fs.Int("concurrency", 2, "scan requests matched at once (env LCM_SCANNER_CONCURRENCY)")
	engine := fs.String("engine", env("LCM_SCANNER_ENGINE", scanner.Engine), "osv (built-in, offline OSV export) or trivy (trivy sbom --offline-scan with its own database)")
	trivyBin := fs.String("trivy-bin", env("LCM_SCANNER_TRIVY_BIN", ""), "trivy binary (default: trivy on PATH)")
	trivyCache := fs.String("trivy-cache-dir", env("LCM_SCANNER_TRIVY_CACHE_DIR", ""), "trivy --cache-dir holding its database")
	metricsAddr := fs.String("metrics-addr", env("LCM_SCANNER_METRICS_ADDR", ""), "serve Prometheus metrics (/metrics) and /healthz on this address, e.g. 127.0.0.1:9342 (plain HTTP; off when empty; env LCM_SCANNER_METRICS_ADDR)")
	if v := os.Getenv("LCM_SCANNER_CONCURRENCY"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return fmt.Errorf("environment LCM_SCANNER_CONCURRENCY: %q is not a positive whole number", v)
		}
		*conc = n
	}
	memLimit := fs.Int64("memory-limit", 900<<20, "soft limit of the Go heap in bytes (runtime/debug.SetMemoryLimit; 0: none); the GOMEMLIMIT variable wins")
	inline := fs.Int64("max-inline-result", 0, "bytes of a gzipped result sent in the reply; larger ones go through the LCM_VULNDB object store (0: the NATS payload limit)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("serve: unexpected argument %q", fs.Arg(0))
	}
	if *url == "" {
		return errors.New("serve needs -nats-url (or LCM_SCANNER_NATS_URL)")
	}
	// The garbage collector works harder near the limit instead of letting
	// the heap grow to twice what a loaded database keeps alive
	// (docs/benchmarks.md, scanner memory).
	if *memLimit > 0 && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(*memLimit)
	}
	if *engine != scanner.Engine && *engine != scanner.EngineTrivy {
		return fmt.Errorf("-engine %q: want osv or trivy", *engine)
	}
	password, _, err := config.SecretEnv(os.Getenv, "LCM_SCANNER_NATS_PASSWORD")
	if err != nil {
		return err
	}
	o := bus.ClientOptions{URL: *url, User: *user, Password: password, Name: "lcm-scanner"}
	if *ca != "" {
		pem, err := os.ReadFile(*ca)
		if err != nil {
			return err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("%s holds no PEM certificate", *ca)
		}
		o.TLS = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	b, err := bus.Connect(ctx, o)
	if err != nil {
		return err
	}
	defer b.Close()
	host, _ := os.Hostname()
	s := scanner.New(*dir, fmt.Sprintf("%s/%d", host, os.Getpid()), log)
	s.InlineLimit = *inline
	switch *engine {
	case scanner.Engine:
	case scanner.EngineTrivy:
		bin := *trivyBin
		if bin == "" {
			bin = scanner.FindTrivy()
		}
		if bin == "" {
			return errors.New("-engine trivy: no trivy binary found (set -trivy-bin)")
		}
		s.Trivy = &scanner.Trivy{Bin: bin, CacheDir: *trivyCache}
	default:
		return fmt.Errorf("-engine %q: want osv or trivy", *engine)
	}
	s.RegisterMetrics(log)
	if _, err := metrics.Serve(ctx, *metricsAddr, log, natsHealth(b)); err != nil {
		return fmt.Errorf("-metrics-addr: %w", err)
	}
	log.Info("lcm-scanner serving", "version", version.Get().String("lcm-scanner"), "db", *dir, "nats", *url)
	// Self-healing as in lcm-api (guard.Run): 10 recovered panics in 15
	// minutes, or 5 failed NATS checks in a row, stop it gracefully with
	// exit code 70 for its supervisor to start it afresh.
	return guard.Run(ctx, log, func(context.Context) error {
		if !b.Healthy() {
			return errors.New("not connected to NATS")
		}
		return nil
	}, func(ctx context.Context) error { return s.Serve(ctx, b, *conc) })
}

// natsHealth is /healthz of a process whose work comes over NATS: healthy
// while the connection is up (it reconnects by itself).
func natsHealth(b *bus.Bus) func() error {
	return func() error {
		if !b.Healthy() {
			return errors.New("NATS not connected")
		}
		return nil
	}
}

func scanFile(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("scan", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sbomPath := fs.String("sbom", "", "CycloneDX JSON SBOM of one server")
	dir := fs.String("db", "", "directory of the OSV export: <ecosystem>/all.zip")
	minSev := fs.String("min-severity", "unknown", "report findings from this severity on")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *sbomPath == "" || *dir == "" {
		return errors.New("scan needs -sbom and -db")
	}
	min := vulndb.SeverityRank(*minSev)
	if min == 0 && *minSev != "unknown" {
		return fmt.Errorf("-min-severity %q: want unknown, low, medium, high or critical", *minSev)
	}
	f, err := os.Open(*sbomPath)
	if err != nil {
		return err
	}
	defer f.Close()
	bom, err := sbom.Decode(f)
	if err != nil {
		return fmt.Errorf("%s: %w", *sbomPath, err)
	}
	db, err := vulndb.Load(*dir)
	if err != nil {
		return err
	}
	out := []vulndb.Finding{}
	for _, x := range db.Match(sbom.Components(bom)) {
		if vulndb.SeverityRank(x.Severity) >= min {
			out = append(out, x)
		}
	}
	return writeJSON(stdout, out)
}

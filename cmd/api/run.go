package main

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"github.com/lcmproject/lcm/internal/advisories"
	"github.com/lcmproject/lcm/internal/alerts"
	"github.com/lcmproject/lcm/internal/approvals"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lcmproject/lcm/internal/auth"
	"github.com/lcmproject/lcm/internal/backup"
	"github.com/lcmproject/lcm/internal/bus"
	_ "github.com/lcmproject/lcm/internal/bus/natsembed" // all-in-one: NATS runs inside lcm-api
	"github.com/lcmproject/lcm/internal/config"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/health"
	"github.com/lcmproject/lcm/internal/httpapi"
	"github.com/lcmproject/lcm/internal/safe"
	"github.com/lcmproject/lcm/internal/schedule"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/tlscert"
	"github.com/lcmproject/lcm/internal/updates"
	"github.com/lcmproject/lcm/internal/version"
	"github.com/lcmproject/lcm/internal/vulnsvc"
	"github.com/lcmproject/lcm/web"
)

const name = "lcm-api"

// shutdownTimeout bounds the graceful shutdown (spec: within 10 s): HTTP is
// drained first, then NATS, then the database is closed.
const shutdownTimeout = 9 * time.Second

type options struct {
	configPath string
	dataDir    string
	dev, demo  bool
	debug      bool
	version    bool
}

func parseFlags(args []string, stderr io.Writer) (options, []string, error) {
	var o options
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.configPath, "config", "", "path of config.json (default: next to the executable)")
	fs.StringVar(&o.dataDir, "data-dir", "", "data directory (overrides data_dir)")
	fs.BoolVar(&o.dev, "dev", false, "development mode: plain HTTP allowed, 2FA requirement off")
	fs.BoolVar(&o.demo, "demo", false, "demo mode: seed example data, 2FA requirement off")
	fs.BoolVar(&o.debug, "debug", false, "log at debug level without changing the config")
	fs.BoolVar(&o.version, "version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		return o, nil, err
	}
	return o, fs.Args(), nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "rotate-db-key" {
		return runRotate(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "nats-auth" {
		return runNATSAuth(args[1:], stdout, stderr)
	}
	o, rest, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return fmt.Errorf("unknown command %q (commands: rotate-db-key, nats-auth)", rest[0])
	}
	if o.version {
		fmt.Fprintln(stdout, version.Get().String(name))
		return nil
	}
	cfg, created, err := loadConfig(o)
	if err != nil {
		return err
	}
	log := newLogger(stderr, cfg)
	log.Info("=== LCM service starting ===", "version", version.Get().String(name), "config", cfg.Path)
	if created {
		log.Info("created a new config.json with a random JWT secret", "path", cfg.Path, "mode", "0600")
	}
	restored, err := applyRestore(ctx, cfg, log)
	if err != nil {
		return err
	}
	if restored {
		// The restored config.json (placement keys kept) is read again.
		if cfg, _, err = loadConfig(o); err != nil {
			return err
		}
	}
	return serve(ctx, cfg, log, stdout, restored)
}

func loadConfig(o options) (config.Config, bool, error) {
	path := o.configPath
	if path == "" {
		exe, err := os.Executable()
		if err != nil {
			return config.Config{}, false, err
		}
		path = filepath.Join(filepath.Dir(exe), "config.json")
	}
	cfg, created, err := config.Load(path)
	if err != nil {
		return cfg, false, err
	}
	if err := cfg.ApplyEnv(os.Getenv); err != nil {
		return cfg, false, err
	}
	if o.dataDir != "" {
		cfg.DataDir = o.dataDir
	}
	cfg.Dev, cfg.Demo, cfg.Debug = o.dev, o.demo, o.debug
	if o.debug {
		cfg.LogLevel = "debug"
	}
	if err := cfg.Validate(); err != nil {
		return cfg, false, err
	}
	return cfg, created, nil
}

func newLogger(w io.Writer, cfg config.Config) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// app is everything serve opened, closed in reverse order.
type app struct {
	cfg     config.Config
	log     *slog.Logger
	dataDir string
	lock    *os.File
	store   *store.Store
	bus     *bus.Bus
	health  *health.Monitor
	auth    *auth.Service
	alerts  *alerts.Service
	tls     *tls.Config
	servers []*http.Server
	// workerDone closes when the in-process worker has stopped.
	workerDone chan struct{}
	// schedDone closes when the scheduler has stopped (lease released).
	schedDone chan struct{}
	// exitCh receives a code when the process must end with it: 70 from
	// the health monitor, 42 once a restore is staged.
	exitCh chan int
	// restored is set when this start applied a staged restore: a fresh
	// auth epoch signs everyone out.
	restored bool
	backup   *backup.Service
	updates  *updates.Service
	// vulns is set once the schedule is wired; the fleet-wide alert rules
	// read the vulnerability database's age through it.
	vulns atomic.Pointer[vulnsvc.Service]
	// advisories is the early warning (wire_advisories.go).
	advisories *advisories.Service
	// approvals is the four-eyes inbox shared by rollouts, schedules and
	// custom actions.
	approvals *approvals.Service
}

func serve(ctx context.Context, cfg config.Config, log *slog.Logger, stdout io.Writer, restored bool) error {
	a := &app{cfg: cfg, log: log, dataDir: cfg.ResolvedDataDir(), restored: restored, exitCh: make(chan int, 1)}
	defer a.close()
	applyMemoryLimit(cfg.MemoryLimitMB, log)
	exitCh := a.exitCh
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	if err := a.openData(ctx, stdout); err != nil {
		return err
	}
	uiLn, agentLn, err := a.listen()
	if err != nil {
		return err
	}
	var err2 error
	if a.bus, err2 = bus.Open(ctx, bus.Options{URL: cfg.NATS.URL, User: cfg.NATS.User, Password: cfg.NATS.Password,
		DataDir: a.dataDir, Listen: cfg.NATS.Listen, TLS: a.tls, Users: natsUsers(cfg.NATS), Replicas: cfg.NATS.ReplicaCount(),
		Logger: log}); err2 != nil {
		uiLn.Close()
		if agentLn != nil {
			agentLn.Close()
		}
		return err2
	}
	a.health = health.New(a.store.Ping, func(code int) {
		select {
		case exitCh <- code:
		default:
		}
	}, log)
	a.health.SetInterval(time.Duration(cfg.HealthCheckIntervalSeconds) * time.Second)
	safe.SetRecorder(a.health, log)
	go safe.Supervise(ctx, "health monitor", func(ctx context.Context) error { a.health.Run(ctx); return nil })

	scheme := "https"
	if cfg.Dev {
		scheme = "http"
	}
	a.wireBackup() // before the alerts: their backup-overdue rule reads it
	a.wireUpdates()
	alertsSvc, mailer, err := a.wireAlerts(ctx)
	if err == nil {
		a.auth, err = a.wireAuth(ctx, fmt.Sprintf("%s://%s", scheme, uiLn.Addr()), mailer)
	}
	authSvc := a.auth
	if err != nil {
		uiLn.Close()
		if agentLn != nil {
			agentLn.Close()
		}
		return err
	}
	err = a.wireFleetChanges(ctx)
	if err != nil {
		uiLn.Close()
		if agentLn != nil {
			agentLn.Close()
		}
		return err
	}
	recordsSvc, err := a.wireRecords(ctx)
	if err != nil {
		uiLn.Close()
		if agentLn != nil {
			agentLn.Close()
		}
		return err
	}
	fleetSvc, jobsSvc := a.wireJobs()
	a.wireSelfReg(ctx, fleetSvc)
	portalSvc, speechSvc := a.wirePortal()
	a.approvals = approvals.New(a.store, log)
	invSvc, statusSvc, schedSvc, vulnSvc, autoSvc := a.wireSchedule(ctx, fleetSvc, jobsSvc, alertsSvc)
	a.vulns.Store(vulnSvc)
	loadSchedules, _ := schedule.SettingsStore(a.store, log)
	a.backup.SetSchedule(backup.TaskSchedule(schedSvc, loadSchedules))
	a.wireAgents(ctx, fleetSvc, statusSvc)
	luSvc, err := a.wireLinuxUsers(ctx, jobsSvc, fleetSvc)
	rolloutSvc, approvalSvc := a.wireRollouts(ctx, jobsSvc)
	regSvc := a.wireRegistries()
	ctrSvc := a.wireContainers(jobsSvc, invSvc, regSvc, statusSvc)
	if err == nil {
		err = a.wireDemo(ctx, jobsSvc, invSvc, statusSvc)
	}
	if err == nil {
		err = a.startJobs(ctx, jobsSvc) // after every finish hook is registered
	}
	if err != nil {
		uiLn.Close()
		if agentLn != nil {
			agentLn.Close()
		}
		return err
	}
	if err := a.wireMetrics(ctx); err != nil {
		uiLn.Close()
		if agentLn != nil {
			agentLn.Close()
		}
		return err
	}
	mcpListener := a.wireMCP(ctx, authSvc)
	api := httpapi.New(httpapi.Deps{
		Store: a.store, Bus: a.bus, Health: a.health, Log: log,
		AccessLog: cfg.AccessLog, Debug: cfg.LogLevel == "debug", Dev: cfg.Dev,
		RequestTimeout: time.Duration(cfg.RequestTimeoutSeconds) * time.Second,
		ClientAddr:     clientAddrFunc(authSvc), Allowed: allowedFunc(authSvc),
		Web: web.Dist(),
		Services: httpapi.Services{Auth: authSvc, Records: recordsSvc, Fleet: fleetSvc, Jobs: jobsSvc, Portal: portalSvc, Speech: speechSvc,
			Inventory: invSvc, Status: statusSvc, Schedules: schedSvc, MCP: mcpListener, Backups: a.backup, Alerts: alertsSvc, LinuxUsers: luSvc, Vulns: vulnSvc,
			Registries: regSvc,
			Advisories: a.advisories, Updates: a.updates,
			Rollouts: rolloutSvc, Approvals: approvalSvc,
			Containers: ctrSvc, Automation: autoSvc},
	})
	a.startHTTP("UI listener", uiLn, api.Handler(), !cfg.Dev)
	if agentLn != nil {
		a.startHTTP("agent listener", agentLn, a.agentGateway(ctx), true)
	}
	a.health.Ready()
	log.Info("=== LCM service started ===", "url", fmt.Sprintf("%s://%s", scheme, uiLn.Addr()), "database", a.store.Dialect(),
		"bus", map[bool]string{true: "embedded", false: "external"}[a.bus.Embedded()])

	select {
	case <-ctx.Done():
		log.Info("=== LCM service stopping ===", "reason", "signal")
		return a.shutdown()
	case code := <-exitCh:
		cancel() // stop the worker and the scheduler, as a signal does
		_ = a.shutdown()
		return exitCode(code)
	}
}

// openData takes the data-dir lock, opens and migrates the DB, binds the
// master key, runs data migrations, seeds, and loads the TLS certificate.
func (a *app) openData(ctx context.Context, stdout io.Writer) error {
	var err error
	if a.lock, err = lockDataDir(a.dataDir); err != nil {
		return err
	}
	if a.store, err = store.Open(ctx, store.Options{URL: a.cfg.Database.URL, DataDir: a.dataDir, Logger: a.log}); err != nil {
		return err
	}
	if err := a.store.Migrate(ctx); err != nil {
		return err
	}
	kr, created, err := a.store.ResolveMasterKey(ctx, a.dataDir)
	if err != nil {
		return err
	}
	a.store.SetKeyring(kr)
	if created {
		a.log.Info("created a new master key", "path", filepath.Join(a.dataDir, "lcm.key"), "key_id", kr.ID())
	}
	if _, err := a.store.RunDataMigrations(ctx, a.dataDir, version.Get().Version); err != nil {
		return err
	}
	var password string
	res, err := a.store.SeedIdentity(ctx, func() (string, error) {
		password = generatePassword()
		return hashPassword(password)
	})
	if err != nil {
		return err
	}
	if res.AdminCreated {
		printAdminPassword(stdout, password)
		// The argon2id hash just allocated 64 MiB; hand it back to the OS
		// now instead of carrying it as idle RSS until the GC scavenges.
		debug.FreeOSMemory()
	}
	if a.tls, err = a.loadTLS(ctx); err != nil {
		return err
	}
	return nil
}

func (a *app) loadTLS(ctx context.Context) (*tls.Config, error) {
	if a.cfg.TLSCertFile != "" {
		// The operator's certificate (tls_cert_file, tls_key_file): every
		// replica presents the same one, which a proxy can verify.
		pair, err := tls.LoadX509KeyPair(a.cfg.TLSCertFile, a.cfg.TLSKeyFile)
		if err != nil {
			return nil, fmt.Errorf("tls_cert_file/tls_key_file: %w", err)
		}
		a.log.Info("TLS certificate", "file", a.cfg.TLSCertFile, "sha256", tlscert.Fingerprint(pair))
		return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, nil
	}
	c, err := a.store.GetCertificate(ctx, "ui")
	if err != nil {
		certPEM, keyPEM, gerr := tlscert.Generate(a.cfg.Host)
		if gerr != nil {
			return nil, gerr
		}
		if err := a.store.CreateCertificate(ctx, store.Certificate{Name: "ui", CertPEM: certPEM, KeyPEM: keyPEM}); err != nil &&
			!errors.Is(err, domain.ErrConflict) {
			// A conflict: another replica starting at the same moment
			// stored its certificate first; every replica uses that one.
			return nil, err
		}
		if c, err = a.store.GetCertificate(ctx, "ui"); err != nil {
			return nil, err
		}
		a.log.Info("generated a self-signed TLS certificate (its key is stored encrypted)")
	}
	pair, err := tls.X509KeyPair([]byte(c.CertPEM), []byte(c.KeyPEM))
	if err != nil {
		return nil, fmt.Errorf("stored TLS certificate is unusable: %w", err)
	}
	a.log.Info("TLS certificate", "sha256", tlscert.Fingerprint(pair))
	return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, nil
}

// listen binds the listeners up front so a port in use is reported with the
// listener's name before anything else starts.
func (a *app) listen() (ui, agent net.Listener, err error) {
	uiAddr := net.JoinHostPort(a.cfg.Host, fmt.Sprint(a.cfg.Port))
	if ui, err = net.Listen("tcp", uiAddr); err != nil {
		return nil, nil, listenError("UI listener", uiAddr, "host/port", err)
	}
	if a.cfg.AgentPort != 0 {
		agentAddr := net.JoinHostPort(a.cfg.AgentHost, fmt.Sprint(a.cfg.AgentPort))
		if agent, err = net.Listen("tcp", agentAddr); err != nil {
			ui.Close()
			return nil, nil, listenError("agent listener", agentAddr, "agent_host/agent_port (0 disables it)", err)
		}
	}
	return ui, agent, nil
}

func listenError(what, addr, keys string, err error) error {
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("%s: %s is already in use by another program; stop it or change %s in config.json", what, addr, keys)
	}
	return fmt.Errorf("%s on %s: %w", what, addr, err)
}

func (a *app) startHTTP(what string, ln net.Listener, h http.Handler, useTLS bool) {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		// No WriteTimeout: live console streams stay open for long.
		IdleTimeout: 2 * time.Minute,
		ErrorLog:    slog.NewLogLogger(a.log.Handler(), slog.LevelDebug),
	}
	if useTLS {
		srv.TLSConfig = a.tls.Clone()
		ln = tls.NewListener(ln, srv.TLSConfig)
	}
	a.servers = append(a.servers, srv)
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.log.Error(what+" stopped", "err", err)
		}
	}()
}

// shutdown drains HTTP, then the bus, then closes the DB, within the budget.
func (a *app) shutdown() error {
	if a.health != nil {
		a.health.Stopping()
	}
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	for _, srv := range a.servers {
		if err := srv.Shutdown(ctx); err != nil {
			srv.Close()
		}
	}
	a.servers = nil
	// Let in-process jobs finish and the scheduler release its lease while
	// the bus is up.
	for _, done := range []chan struct{}{a.workerDone, a.schedDone} {
		if done == nil {
			continue
		}
		select {
		case <-done:
		case <-ctx.Done():
		}
	}
	if a.auth != nil {
		a.auth.Close(ctx)
	}
	if a.alerts != nil {
		a.alerts.Close() // pending deliveries resume from the store
	}
	if a.bus != nil {
		a.bus.Close()
		a.bus = nil
	}
	if a.store != nil {
		a.store.Close()
		a.store = nil
	}
	a.log.Info("=== LCM service stopped ===")
	return nil
}

func (a *app) close() {
	for _, srv := range a.servers {
		srv.Close()
	}
	if a.bus != nil {
		a.bus.Close()
	}
	if a.store != nil {
		a.store.Close()
	}
	if a.lock != nil {
		a.lock.Close()
	}
}

// generatePassword returns a random 20-character password from all four
// character classes.
func generatePassword() string {
	const (
		lower  = "abcdefghijkmnopqrstuvwxyz"
		upper  = "ABCDEFGHJKLMNPQRSTUVWXYZ"
		digits = "23456789"
		syms   = "-_.!@#%+="
	)
	all := lower + upper + digits + syms
	pick := func(set string) byte {
		n, _ := rand.Int(rand.Reader, big.NewInt(int64(len(set))))
		return set[n.Int64()]
	}
	for {
		b := make([]byte, 20)
		for i := range b {
			b[i] = pick(all)
		}
		s := string(b)
		if strings.ContainsAny(s, lower) && strings.ContainsAny(s, upper) && strings.ContainsAny(s, digits) && strings.ContainsAny(s, syms) && passwordAcceptable(s) {
			return s
		}
	}
}

func printAdminPassword(w io.Writer, pw string) {
	line := strings.Repeat("=", 64)
	fmt.Fprintf(w, "\n%s\n  LCM admin account created\n  username: admin\n  password: %s\n  This password is shown once and never again. Change it after signing in.\n%s\n\n", line, pw, line)
}

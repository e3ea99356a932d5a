// Package config holds LCM's one typed configuration struct and its loading
// order: defaults → config.json → environment (LCM_*) → command-line flags.
//
// A missing config.json is created with secure random values (a JWT secret
// from 48 random bytes) and mode 0600. A malformed one stops the start with
// the file, position and key named; the file is never rewritten then.
package config

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/lcmproject/lcm/pkg/agentproto"
)

// MaxNATSReplicas is JetStream's own limit on a stream's replicas.
const MaxNATSReplicas = 5

// MinJWTSecretLen is the spec's minimum: shorter secrets are refused on load
// because HMAC-SHA256 keys below 32 bytes weaken every session token.
const MinJWTSecretLen = 32

// Config is the whole configuration of lcm-api (and the shared parts of the
// other binaries). JSON names are the spec's configuration keys.
type Config struct {
	JWTSecret                string   `json:"jwt_secret"`
	AccessTokenTTLMinutes    int      `json:"access_token_ttl_minutes"`
	APIKeyRateLimitPerMinute int      `json:"api_key_rate_limit_per_minute"`
	Require2FARoles          []string `json:"require_2fa_roles,omitempty"`
	PublicBaseURL            string   `json:"public_base_url,omitempty"`
	AllowedIPs               []string `json:"allowed_ips,omitempty"`
	TrustProxyHeader         bool     `json:"trust_proxy_header"`
	LogLevel                 string   `json:"log_level"`
	AccessLog                bool     `json:"access_log"`
	// StorageHistoryDays is how long daily storage aggregates are kept
	// (the "days until full" forecast reads the last 30).
	StorageHistoryDays int `json:"storage_history_days"`
	// JobHistoryDays is how long finished jobs (with their output) and
	// finished schedule runs are kept; the daily cleanup task removes older
	// ones.
	JobHistoryDays int `json:"job_history_days"`
	// RequestTimeoutSeconds is the deadline of one API request: every
	// database call it makes ends by then (503 "request_timeout"), so a
	// database that stops answering cannot pile up requests. Health checks
	// have their own 2 s; uploads, backups and live streams are bounded
	// separately (docs/configuration.md).
	RequestTimeoutSeconds int `json:"request_timeout_seconds"`
	// HealthCheckIntervalSeconds is how often the process pings its
	// database; five failures in a row end it with exit code 70 for the
	// supervisor to restart (keep 5 × this below systemd's WatchdogSec).
	HealthCheckIntervalSeconds int `json:"health_check_interval_seconds"`

	Host      string `json:"host"`
	Port      int    `json:"port"`
	AgentHost string `json:"agent_host"`
	AgentPort int    `json:"agent_port"`
	// AgentGateways are separately run lcm-agentgw processes: the URL
	// agents connect to and the certificate fingerprint they pin. When set,
	// agent tokens name one of them instead of this process's agent
	// listener (which may then be off: agent_port 0).
	AgentGateways []AgentGateway `json:"agent_gateways,omitempty"`
	MCPHost       string         `json:"mcp_host"`
	MCPPort       int            `json:"mcp_port"`
	// MetricsHost:MetricsPort serves Prometheus metrics on /metrics (plain
	// HTTP, no authentication: keep it on loopback or a monitoring
	// network); port 0, the default, means off.
	MetricsHost string `json:"metrics_host"`
	MetricsPort int    `json:"metrics_port"`
	// TLSCertFile and TLSKeyFile, when set, are the PEM certificate and
	// key of the UI and agent listeners instead of the self-signed one
	// lcm-api generates and stores: replicas behind a proxy that verifies
	// them, or a certificate from the operator's CA.
	TLSCertFile string `json:"tls_cert_file,omitempty"`
	TLSKeyFile  string `json:"tls_key_file,omitempty"`
	// MetricsPprof adds Go's profiling endpoints (/debug/pprof/) to the
	// metrics listener: CPU, heap and goroutine profiles of a running
	// lcm-api for operators and benchmarks (docs/metrics.md). Off by
	// default; it changes nothing without metrics_port.
	MetricsPprof bool `json:"metrics_pprof"`
	// MemoryLimitMB is lcm-api's soft memory limit (Go's runtime memory
	// limit): above it the garbage collector works harder instead of
	// letting the heap grow to twice what is live. 0 means no limit; the
	// GOMEMLIMIT environment variable, when set, wins. See
	// docs/configuration.md for sizing.
	MemoryLimitMB int `json:"memory_limit_mb"`

	// DataDir holds lcm.key, the SQLite DB, version.json, the NATS store.
	// Relative paths are relative to the config file's directory.
	DataDir  string         `json:"data_dir"`
	Database DatabaseConfig `json:"database"`
	NATS     NATSConfig     `json:"nats"`
	Worker   WorkerConfig   `json:"worker"`
	Scanner  ScannerConfig  `json:"scanner"`
	DNS      DNSConfig      `json:"dns"`
	Speech   SpeechConfig   `json:"speech"`
	SMTP     SMTPConfig     `json:"smtp"`
	Updates  UpdatesConfig  `json:"updates"`

	// Set by flags only, never stored.
	Dev   bool `json:"-"`
	Demo  bool `json:"-"`
	Debug bool `json:"-"`
	// Path is the config file this was loaded from.
	Path string `json:"-"`
}

// DatabaseConfig selects the database: empty URL = embedded SQLite in the
// data dir; a postgres:// URL = PostgreSQL.
type DatabaseConfig struct {
	URL string `json:"url,omitempty"`
}

// NATSConfig selects the bus: empty URL = embedded NATS with JetStream.
type NATSConfig struct {
	URL string `json:"url,omitempty"`
	// Listen makes the embedded server accept remote workers (TLS + users).
	Listen string `json:"listen,omitempty"`
	// Credentials for an external NATS or for this process on a listening one.
	User     string `json:"user,omitempty"`
	Password string `json:"password,omitempty"`
	// Replicas is the replica count of every stream and KV bucket lcm-api
	// creates (1, the default, for the embedded server or a single
	// nats-server; 3 for a three-node cluster, so one node may fail).
	Replicas int `json:"replicas,omitempty"`
	// Workers are the remote lcm-worker accounts of a listening embedded
	// NATS, each limited to its segments.
	Workers []NATSWorker `json:"workers,omitempty"`
	// AgentGateways are the remote lcm-agentgw accounts of a listening
	// embedded NATS, limited to agent subjects and the agent bucket.
	AgentGateways []NATSAccount `json:"agent_gateways,omitempty"`
	// Scanners are the remote lcm-scanner accounts of a listening
	// embedded NATS, limited to scan subjects and the LCM_VULNDB store.
	Scanners []NATSAccount `json:"scanners,omitempty"`
}

// AgentGateway is one separately run lcm-agentgw as agents reach it.
type AgentGateway struct {
	// Name identifies the gateway (its -name flag; default: the URL's
	// host); the agent state shows it.
	Name string `json:"name,omitempty"`
	// URL is wss://host:port/mqtt as the agents reach it.
	URL string `json:"url"`
	// TLSFingerprintSHA256 is the SHA-256 of the gateway's certificate
	// (hex, colons allowed; lcm-agentgw logs it at start).
	TLSFingerprintSHA256 string `json:"tls_fingerprint_sha256"`
	// Segments limits the gateway to agent servers of these segments;
	// empty: every segment.
	Segments []string `json:"segments,omitempty"`
}

// NATSAccount is a NATS user and password.
type NATSAccount struct {
	User     string `json:"user"`
	Password string `json:"password"`
}

// NATSWorker is one remote worker's NATS account.
type NATSWorker struct {
	User     string   `json:"user"`
	Password string   `json:"password"`
	Segments []string `json:"segments"`
}

// WorkerConfig configures the in-process worker of the all-in-one mode.
type WorkerConfig struct {
	Disabled    bool     `json:"disabled,omitempty"`
	Segments    []string `json:"segments,omitempty"`
	Concurrency int      `json:"concurrency,omitempty"`
}

// ScannerConfig configures the in-process vulnerability scanner of the
// all-in-one mode.
type ScannerConfig struct {
	// Disabled leaves scanning to a separate lcm-scanner.
	Disabled bool `json:"disabled,omitempty"`
	// DBDir is the OSV export directory (<ecosystem>/all.zip); relative
	// to the data dir; default "vulndb".
	DBDir string `json:"db_dir,omitempty"`
	// Engine is "osv" (the built-in matcher, default) or "trivy" (runs
	// `trivy sbom --offline-scan` with Trivy's own database).
	Engine string `json:"engine,omitempty"`
	// TrivyBin is the trivy binary (default: trivy on PATH); TrivyCacheDir
	// its --cache-dir (where its database lives).
	TrivyBin      string `json:"trivy_bin,omitempty"`
	TrivyCacheDir string `json:"trivy_cache_dir,omitempty"`
}

// DNSConfig configures the embedded authoritative DNS listener (off when
// Listen is empty).
type DNSConfig struct {
	Listen    string   `json:"listen,omitempty"`
	AXFRAllow []string `json:"axfr_allow,omitempty"`
}

// SpeechConfig holds speech defaults; provider keys live encrypted in the DB.
type SpeechConfig struct {
	TTSLanguage string `json:"tts_language,omitempty"`
}

// SMTPConfig is the outgoing mail server for invitations and resets.
type SMTPConfig struct {
	Host     string `json:"host,omitempty"`
	Port     int    `json:"port,omitempty"`
	From     string `json:"from,omitempty"`
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
	// TLS: "none", "starttls" or "tls".
	TLS string `json:"tls,omitempty"`
}

// UpdatesConfig is the release feed lcm-api checks for a newer version
// (docs/updates.md).
type UpdatesConfig struct {
	// FeedURL is the JSON release feed; empty: no update checks.
	FeedURL string `json:"feed_url,omitempty"`
	// Channel: develop, beta, community (default) or enterprise.
	Channel string `json:"channel,omitempty"`
	// DailyCheckDisabled opts out of the daily check (the manual check
	// stays).
	DailyCheckDisabled bool `json:"daily_check_disabled,omitempty"`
}

// Defaults returns the configuration used for every key not set elsewhere.
// DefaultMemoryLimitMB is lcm-api's default soft memory limit: a
// fleet-wide run with the default concurrency stays below it
// (docs/benchmarks.md, "Fan-out"), and an idle instance is far below.
const DefaultMemoryLimitMB = 240

func Defaults() Config {
	return Config{
		AccessTokenTTLMinutes:      60,
		APIKeyRateLimitPerMinute:   120,
		LogLevel:                   "info",
		AccessLog:                  true,
		StorageHistoryDays:         180,
		JobHistoryDays:             180,
		RequestTimeoutSeconds:      30,
		HealthCheckIntervalSeconds: 15,
		Host:                       "127.0.0.1",
		Port:                       9310,
		AgentHost:                  "0.0.0.0",
		AgentPort:                  9320,
		MCPHost:                    "127.0.0.1",
		MCPPort:                    9330,
		MetricsHost:                "127.0.0.1",
		MemoryLimitMB:              DefaultMemoryLimitMB,
		DataDir:                    "data",
		Worker:                     WorkerConfig{Segments: []string{"default"}, Concurrency: 1024},
		Speech:                     SpeechConfig{TTSLanguage: "en-US"},
		SMTP:                       SMTPConfig{Port: 25, TLS: "none"},
	}
}

// Error is a configuration problem naming the file, position and key.
type Error struct {
	Path string
	Line int // 0 when unknown
	Col  int
	Key  string
	Msg  string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Path)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", e.Line, e.Col)
	}
	if e.Key != "" {
		fmt.Fprintf(&b, ": key %q", e.Key)
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

// Load reads the config file at path, creating it with secure random values
// when it does not exist. created reports whether the file was created.
func Load(path string) (cfg Config, created bool, err error) {
	cfg = Defaults()
	cfg.Path = path
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if cfg.JWTSecret, err = randomSecret(); err != nil {
			return cfg, false, err
		}
		if err := write(path, cfg); err != nil {
			return cfg, false, err
		}
		created = true
	case err != nil:
		return cfg, false, fmt.Errorf("config: %w", err)
	default:
		if err := decode(path, data, &cfg); err != nil {
			return cfg, false, err
		}
	}
	return cfg, created, nil
}

func decode(path string, data []byte, cfg *Config) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(cfg); err != nil {
		return decodeError(path, data, err)
	}
	if dec.More() {
		line, col := position(data, dec.InputOffset())
		return &Error{Path: path, Line: line, Col: col, Msg: "unexpected data after the JSON object"}
	}
	return nil
}

func decodeError(path string, data []byte, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		line, col := position(data, syn.Offset)
		return &Error{Path: path, Line: line, Col: col, Msg: "malformed JSON: " + syn.Error()}
	case errors.As(err, &typ):
		line, col := position(data, typ.Offset)
		return &Error{Path: path, Line: line, Col: col, Key: typ.Field,
			Msg: fmt.Sprintf("expected %s, found JSON %s", typ.Type, typ.Value)}
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return &Error{Path: path, Msg: "malformed JSON: unexpected end of file"}
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		key := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		line, col := keyPosition(data, key)
		return &Error{Path: path, Line: line, Col: col, Key: key, Msg: "unknown configuration key"}
	default:
		return &Error{Path: path, Msg: err.Error()}
	}
}

// position converts a byte offset into a 1-based line and column.
func position(data []byte, off int64) (line, col int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	line, col = 1, 1
	for _, c := range data[:off] {
		if c == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return line, col
}

func keyPosition(data []byte, key string) (int, int) {
	i := bytes.Index(data, []byte(`"`+key+`"`))
	if i < 0 {
		return 0, 0
	}
	return position(data, int64(i))
}

// randomSecret returns 48 random bytes, base64url encoded (64 characters).
func randomSecret() (string, error) {
	b := make([]byte, 48)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("config: random secret: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// write creates the file with mode 0600 atomically (temp file + rename), so a
// crash never leaves a half-written config behind.
func write(path string, cfg Config) error {
	data, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("config: create directory %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, ".config-*.json")
	if err != nil {
		return fmt.Errorf("config: cannot write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	// Link-then-rename refuses to replace a file someone created meanwhile.
	if err := os.Link(tmp.Name(), path); err != nil {
		return fmt.Errorf("config: create %s: %w", path, err)
	}
	return nil
}

// ApplyEnv overrides keys from LCM_* environment variables (for containers).
// Unknown LCM_ variables are ignored; a malformed value is an error naming it.
func (c *Config) ApplyEnv(getenv func(string) string) error {
	str := map[string]*string{
		"LCM_PUBLIC_BASE_URL": &c.PublicBaseURL,
		"LCM_LOG_LEVEL":       &c.LogLevel, "LCM_HOST": &c.Host, "LCM_AGENT_HOST": &c.AgentHost,
		"LCM_MCP_HOST": &c.MCPHost, "LCM_METRICS_HOST": &c.MetricsHost, "LCM_DATA_DIR": &c.DataDir,
		"LCM_NATS_URL": &c.NATS.URL, "LCM_NATS_LISTEN": &c.NATS.Listen, "LCM_NATS_USER": &c.NATS.User,
		"LCM_DNS_LISTEN": &c.DNS.Listen,
		"LCM_SMTP_HOST":  &c.SMTP.Host, "LCM_SMTP_FROM": &c.SMTP.From, "LCM_SMTP_USERNAME": &c.SMTP.Username,
		"LCM_TLS_CERT_FILE": &c.TLSCertFile, "LCM_TLS_KEY_FILE": &c.TLSKeyFile,
	}
	ints := map[string]*int{
		"LCM_PORT": &c.Port, "LCM_AGENT_PORT": &c.AgentPort, "LCM_MCP_PORT": &c.MCPPort, "LCM_METRICS_PORT": &c.MetricsPort,
		"LCM_ACCESS_TOKEN_TTL_MINUTES":      &c.AccessTokenTTLMinutes,
		"LCM_API_KEY_RATE_LIMIT_PER_MINUTE": &c.APIKeyRateLimitPerMinute, "LCM_SMTP_PORT": &c.SMTP.Port,
		"LCM_STORAGE_HISTORY_DAYS": &c.StorageHistoryDays, "LCM_JOB_HISTORY_DAYS": &c.JobHistoryDays,
		"LCM_NATS_REPLICAS": &c.NATS.Replicas, "LCM_MEMORY_LIMIT_MB": &c.MemoryLimitMB,
		"LCM_REQUEST_TIMEOUT_SECONDS": &c.RequestTimeoutSeconds, "LCM_HEALTH_CHECK_INTERVAL_SECONDS": &c.HealthCheckIntervalSeconds,
	}
	bools := map[string]*bool{"LCM_TRUST_PROXY_HEADER": &c.TrustProxyHeader, "LCM_ACCESS_LOG": &c.AccessLog,
		"LCM_WORKER_DISABLED": &c.Worker.Disabled, "LCM_SCANNER_DISABLED": &c.Scanner.Disabled, "LCM_METRICS_PPROF": &c.MetricsPprof}
	for k, p := range str {
		if v := getenv(k); v != "" {
			*p = v
		}
	}
	// Secrets: LCM_<KEY>, or LCM_<KEY>_FILE naming a file that holds it
	// (container secrets).
	secrets := map[string]*string{
		"LCM_JWT_SECRET": &c.JWTSecret, "LCM_DATABASE_URL": &c.Database.URL,
		"LCM_NATS_PASSWORD": &c.NATS.Password, "LCM_SMTP_PASSWORD": &c.SMTP.Password,
	}
	for k, p := range secrets {
		v, ok, err := SecretEnv(getenv, k)
		if err != nil {
			return err
		}
		if ok {
			*p = v
		}
	}
	if err := c.applyDatabasePassword(getenv); err != nil {
		return err
	}
	for k, p := range ints {
		if v := getenv(k); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("environment %s: %q is not a whole number", k, v)
			}
			*p = n
		}
	}
	for k, p := range bools {
		if v := getenv(k); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return fmt.Errorf("environment %s: %q is not a boolean", k, v)
			}
			*p = b
		}
	}
	if v := getenv("LCM_ALLOWED_IPS"); v != "" {
		c.AllowedIPs = splitList(v)
	}
	if v := getenv("LCM_REQUIRE_2FA_ROLES"); v != "" {
		c.Require2FARoles = splitList(v)
	}
	return nil
}

// applyDatabasePassword puts LCM_DATABASE_PASSWORD(_FILE) into the
// database URL, so the URL (host, user, database) can sit in plain
// configuration and only the password in a secret file, the same file the
// PostgreSQL container reads (POSTGRES_PASSWORD_FILE).
func (c *Config) applyDatabasePassword(getenv func(string) string) error {
	pw, ok, err := SecretEnv(getenv, "LCM_DATABASE_PASSWORD")
	if err != nil || !ok {
		return err
	}
	if c.Database.URL == "" {
		return errors.New("environment LCM_DATABASE_PASSWORD: database.url (LCM_DATABASE_URL) is not set; the password needs a postgres:// URL")
	}
	u, err := url.Parse(c.Database.URL)
	if err != nil || u.User == nil || u.User.Username() == "" {
		return errors.New("environment LCM_DATABASE_PASSWORD: database.url must name the user, e.g. postgres://lcm@db:5432/lcm")
	}
	if _, has := u.User.Password(); has {
		return errors.New("environment LCM_DATABASE_PASSWORD: database.url already holds a password; give it in one place")
	}
	u.User = url.UserPassword(u.User.Username(), pw)
	c.Database.URL = u.String()
	return nil
}

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Validate reports every problem with its key, joined into one error.
func (c *Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, &Error{Path: c.Path, Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	if n := len(c.JWTSecret); n < MinJWTSecretLen {
		bad("jwt_secret", "must be at least %d characters, has %d", MinJWTSecretLen, n)
	}
	if c.AccessTokenTTLMinutes < 1 || c.AccessTokenTTLMinutes > 7*24*60 {
		bad("access_token_ttl_minutes", "must be between 1 and 10080, is %d", c.AccessTokenTTLMinutes)
	}
	if c.APIKeyRateLimitPerMinute < 0 {
		bad("api_key_rate_limit_per_minute", "must be 0 (off) or positive, is %d", c.APIKeyRateLimitPerMinute)
	}
	if c.StorageHistoryDays < 90 || c.StorageHistoryDays > 365 {
		bad("storage_history_days", "must be between 90 and 365, is %d", c.StorageHistoryDays)
	}
	if c.JobHistoryDays < 7 || c.JobHistoryDays > 3650 {
		bad("job_history_days", "must be between 7 and 3650, is %d", c.JobHistoryDays)
	}
	if c.RequestTimeoutSeconds < 1 || c.RequestTimeoutSeconds > 3600 {
		bad("request_timeout_seconds", "must be between 1 and 3600, is %d", c.RequestTimeoutSeconds)
	}
	if c.HealthCheckIntervalSeconds < 1 || c.HealthCheckIntervalSeconds > 60 {
		bad("health_check_interval_seconds", "must be between 1 and 60, is %d", c.HealthCheckIntervalSeconds)
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		bad("log_level", "must be debug, info, warn or error, is %q", c.LogLevel)
	}
	checkPort := func(key string, p int, zeroOK bool) {
		if p < 0 || p > 65535 || (p == 0 && !zeroOK) {
			bad(key, "must be a port number, is %d", p)
		}
	}
	checkPort("port", c.Port, false)
	checkPort("agent_port", c.AgentPort, true)
	checkPort("mcp_port", c.MCPPort, true)
	checkPort("metrics_port", c.MetricsPort, true)
	for key, h := range map[string]string{"host": c.Host, "agent_host": c.AgentHost, "mcp_host": c.MCPHost, "metrics_host": c.MetricsHost} {
		if h != "" && net.ParseIP(h) == nil && h != "localhost" {
			bad(key, "must be an IP address, is %q", h)
		}
	}
	if u := c.Database.URL; u != "" && !strings.HasPrefix(u, "postgres://") && !strings.HasPrefix(u, "postgresql://") {
		bad("database.url", "must be a postgres:// URL (empty means embedded SQLite)")
	}
	if c.DataDir == "" {
		bad("data_dir", "must not be empty")
	}
	if c.Worker.Concurrency < 0 {
		bad("worker.concurrency", "must not be negative")
	}
	if c.MemoryLimitMB != 0 && (c.MemoryLimitMB < 64 || c.MemoryLimitMB > 1<<20) {
		bad("memory_limit_mb", "must be 0 (no limit) or between 64 and 1048576, is %d", c.MemoryLimitMB)
	}
	if e := c.Scanner.Engine; e != "" && e != "osv" && e != "trivy" {
		bad("scanner.engine", `must be "osv" (built-in) or "trivy"`)
	}
	if c.NATS.Listen != "" && c.NATS.URL == "" && (c.NATS.User == "" || c.NATS.Password == "") {
		bad("nats.user", "a listening embedded NATS (nats.listen) needs nats.user and nats.password for lcm-api itself")
	}
	if r := c.NATS.Replicas; r < 0 || r > MaxNATSReplicas {
		bad("nats.replicas", "must be between 1 and %d (0 means 1), is %d", MaxNATSReplicas, r)
	} else if r > 1 && c.NATS.URL == "" {
		bad("nats.replicas", "%d replicas need an external NATS cluster (nats.url); the embedded server is a single node", r)
	}
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		bad("tls_cert_file", "tls_cert_file and tls_key_file are set together or not at all")
	}
	for i, w := range c.NATS.Workers {
		if w.User == "" || w.Password == "" || len(w.Segments) == 0 {
			bad(fmt.Sprintf("nats.workers[%d]", i), "needs user, password and segments")
		}
	}
	for i, g := range c.NATS.AgentGateways {
		if g.User == "" || g.Password == "" {
			bad(fmt.Sprintf("nats.agent_gateways[%d]", i), "needs user and password")
		}
	}
	names := map[string]bool{}
	for i := range c.AgentGateways {
		g := &c.AgentGateways[i]
		key := fmt.Sprintf("agent_gateways[%d]", i)
		u, err := url.Parse(g.URL)
		if err != nil || u.Scheme != "wss" || u.Hostname() == "" || u.Path != "/mqtt" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			bad(key+".url", "must be wss://host:port/mqtt, is %q", g.URL)
			continue
		}
		fp := agentproto.NormalizeFingerprint(g.TLSFingerprintSHA256)
		if fp == "" {
			bad(key+".tls_fingerprint_sha256", "must be the SHA-256 of the gateway's certificate (64 hex digits; lcm-agentgw logs it as tls_sha256)")
			continue
		}
		g.TLSFingerprintSHA256 = fp
		if g.Name == "" {
			g.Name = u.Host
		}
		if names[g.Name] {
			bad(key+".name", "%q is used by two gateways", g.Name)
		}
		names[g.Name] = true
	}
	for i, g := range c.NATS.Scanners {
		if g.User == "" || g.Password == "" {
			bad(fmt.Sprintf("nats.scanners[%d]", i), "needs user and password")
		}
	}
	if u := c.Updates.FeedURL; u != "" {
		if pu, err := url.Parse(u); err != nil || (pu.Scheme != "https" && pu.Scheme != "http") || pu.Host == "" {
			bad("updates.feed_url", "must be an http(s) URL (empty: no update checks)")
		}
	}
	switch c.Updates.Channel {
	case "", "develop", "beta", "community", "enterprise":
	default:
		bad("updates.channel", "must be develop, beta, community or enterprise, is %q", c.Updates.Channel)
	}
	return errors.Join(errs...)
}

// ResolvedDataDir returns the data dir, relative paths resolved against the
// config file's directory.
func (c *Config) ResolvedDataDir() string {
	if filepath.IsAbs(c.DataDir) {
		return c.DataDir
	}
	return filepath.Join(filepath.Dir(c.Path), c.DataDir)
}

// Redacted returns a copy safe to log: every secret replaced.
func (c Config) Redacted() Config {
	mask := func(s *string) {
		if *s != "" {
			*s = "***"
		}
	}
	mask(&c.JWTSecret)
	mask(&c.NATS.Password)
	c.NATS.Workers = append([]NATSWorker(nil), c.NATS.Workers...)
	for i := range c.NATS.Workers {
		mask(&c.NATS.Workers[i].Password)
	}
	c.NATS.AgentGateways = append([]NATSAccount(nil), c.NATS.AgentGateways...)
	for i := range c.NATS.AgentGateways {
		mask(&c.NATS.AgentGateways[i].Password)
	}
	c.NATS.Scanners = append([]NATSAccount(nil), c.NATS.Scanners...)
	for i := range c.NATS.Scanners {
		mask(&c.NATS.Scanners[i].Password)
	}
	mask(&c.SMTP.Password)
	if c.Database.URL != "" {
		c.Database.URL = redactURL(c.Database.URL)
	}
	return c
}

func redactURL(u string) string {
	at := strings.LastIndex(u, "@")
	scheme := strings.Index(u, "://")
	if at < 0 || scheme < 0 || at < scheme {
		return u
	}
	userinfo := u[scheme+3 : at]
	if i := strings.Index(userinfo, ":"); i >= 0 {
		return u[:scheme+3] + userinfo[:i] + ":***" + u[at:]
	}
	return u
}

// RemoveSMTPPassword deletes smtp.password from the config file at path
// (the password lives encrypted in the database once imported). The file
// is rewritten atomically with its mode kept; keys come out sorted. It
// reports whether the file held a password.
func RemoveSMTPPassword(path string) (bool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return false, fmt.Errorf("config: %w", err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		return false, fmt.Errorf("config: %s: %w", path, err)
	}
	var smtp map[string]json.RawMessage
	if raw, ok := doc["smtp"]; !ok || json.Unmarshal(raw, &smtp) != nil {
		return false, nil
	}
	if _, ok := smtp["password"]; !ok {
		return false, nil
	}
	delete(smtp, "password")
	if doc["smtp"], err = json.Marshal(smtp); err != nil {
		return false, err
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return false, err
	}
	out = append(out, '\n')
	mode := fs.FileMode(0o600)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".config-*.json")
	if err != nil {
		return false, fmt.Errorf("config: cannot rewrite %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return false, err
	}
	if _, err := tmp.Write(out); err != nil {
		tmp.Close()
		return false, err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return false, err
	}
	if err := tmp.Close(); err != nil {
		return false, err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return false, fmt.Errorf("config: replace %s: %w", path, err)
	}
	return true, nil
}

// ReplicaCount is nats.replicas with its default applied.
func (n NATSConfig) ReplicaCount() int {
	if n.Replicas < 1 {
		return 1
	}
	return n.Replicas
}

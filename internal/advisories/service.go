// Package advisories is LCM's early warning: an opt-in poll (every 15
// minutes, schedule task "advisory_poll") of an OSV advisory source laid
// out as osv.dev's export bucket (<ecosystem>/modified_id.csv and
// <ecosystem>/<id>.json under a base URL). Advisories published or
// changed since the last poll are matched against the packages installed
// in the fleet, with the ecosystem version ordering internal/vulndb uses
// for the daily scan, and become early-warning findings per server and
// package before that scan runs. A local mirror (<ecosystem>/all.zip and
// modified_id.csv in the data dir) lets polling and scanning work offline.
//
// It knows nothing of HTTP; the routes are in internal/httpapi.
package advisories

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lcmproject/lcm/internal/audit"
	"github.com/lcmproject/lcm/internal/bus"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/vulndb"
)

// SettingKey is the setting that holds Settings.
const SettingKey = "advisories"

// DefaultBaseURL is osv.dev's public export bucket.
const DefaultBaseURL = "https://osv-vulnerabilities.storage.googleapis.com"

// Settings switch the early warning on (off by default: it contacts the
// advisory source) and name the source.
type Settings struct {
	Enabled bool   `json:"enabled"`
	BaseURL string `json:"base_url"`
}

// Uploader hands a mirrored export to the scanners (vulnsvc.Service).
type Uploader interface {
	UploadDB(ctx context.Context, ecosystem string, zip io.ReaderAt, size int64) (int, error)
}

// Options configure a Service.
type Options struct {
	Log *slog.Logger
	// MirrorDir holds the local mirror (<ecosystem>/all.zip,
	// <ecosystem>/modified_id.csv) and the record cache
	// (<ecosystem>/records/<id>.json).
	MirrorDir string
	// HTTP fetches from the source (nil: a client with DefaultTimeout).
	HTTP *http.Client
	// Now is the clock (nil: time.Now UTC).
	Now func() time.Time
	// OnCreated is called with the findings a poll created (the alert
	// trigger "early-warning findings created").
	OnCreated func(ctx context.Context, created []store.EarlyWarning)
	// Uploader, when set, receives every mirrored all.zip so the scanners
	// match against it too.
	Uploader Uploader
	// ScannerCache reports the scanners' match cache counters (nil or
	// false: unknown).
	ScannerCache func(ctx context.Context) (*bus.CacheCounters, bool)
	// Lookback is how far back the first poll of an ecosystem reads
	// (0: DefaultLookback).
	Lookback time.Duration
}

// DefaultLookback: the first poll reports what was published in the last
// day; older advisories are the daily scan's business.
const DefaultLookback = 24 * time.Hour

// DefaultTimeout bounds one request to the source; a full all.zip
// (Debian's is ~100 MB) needs minutes on a slow link.
const DefaultTimeout = 10 * time.Minute

// Service is the early warning.
type Service struct {
	store *store.Store
	o     Options
	log   *slog.Logger
	now   func() time.Time
	http  *http.Client

	pollMu   sync.Mutex
	mirrorMu sync.Mutex

	recordHits, recordMisses atomic.Int64 // record cache (local files, mirror)
	matchHits, matchMisses   atomic.Int64 // per-package-version match cache of the polls
	mirrorDB                 atomic.Pointer[vulndb.DB]
	mirrorLoaded             atomic.Bool
}

// New returns the service.
func New(st *store.Store, o Options) *Service {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Lookback <= 0 {
		o.Lookback = DefaultLookback
	}
	now := o.Now
	if now == nil {
		now = func() time.Time { return time.Now().UTC() }
	}
	hc := o.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: DefaultTimeout}
	}
	return &Service{store: st, o: o, log: o.Log, now: now, http: hc}
}

// Settings returns the stored settings with defaults filled.
func (s *Service) Settings(ctx context.Context) (Settings, error) {
	var v Settings
	if _, err := s.store.GetSetting(ctx, SettingKey, &v); err != nil {
		return v, err
	}
	if v.BaseURL == "" {
		v.BaseURL = DefaultBaseURL
	}
	return v, nil
}

// SettingsInput changes some settings.
type SettingsInput struct {
	Enabled *bool   `json:"enabled"`
	BaseURL *string `json:"base_url"`
}

// UpdateSettings validates and stores the settings, audited.
func (s *Service) UpdateSettings(ctx context.Context, p *domain.Principal, in SettingsInput) (Settings, error) {
	cur, err := s.Settings(ctx)
	if err != nil {
		return cur, err
	}
	if in.Enabled != nil {
		cur.Enabled = *in.Enabled
	}
	if in.BaseURL != nil {
		u := strings.TrimRight(strings.TrimSpace(*in.BaseURL), "/")
		if u == "" {
			u = DefaultBaseURL
		}
		if err := checkBaseURL(u); err != nil {
			return cur, err
		}
		cur.BaseURL = u
	}
	if err := s.store.PutSetting(ctx, SettingKey, cur); err != nil {
		return cur, err
	}
	audit.Append(ctx, s.store, s.log, p, store.AuditEntry{At: s.now(), Action: "settings.advisories_updated",
		Target: audit.Target("settings", SettingKey), Details: map[string]any{"enabled": cur.Enabled, "base_url": cur.BaseURL}})
	return cur, nil
}

func checkBaseURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || len(raw) > 512 {
		return domain.Invalid("invalid_base_url", "base_url must be an http(s) URL without credentials, query or fragment (up to 512 characters)")
	}
	return nil
}

// Findings lists early-warning findings of servers visible to p.
func (s *Service) Findings(ctx context.Context, p *domain.Principal, f store.EarlyWarningFilter) ([]store.EarlyWarning, int64, error) {
	if f.ServerID != "" {
		if err := s.store.ServerVisible(ctx, store.ScopeOf(p), f.ServerID); err != nil {
			return nil, 0, err
		}
	}
	return s.store.EarlyWarnings(ctx, store.ScopeOf(p), f)
}

// Acknowledge hides a finding of a server visible to p (audited by the
// caller's transport with the finding's details).
func (s *Service) Acknowledge(ctx context.Context, p *domain.Principal, id uint64) (store.EarlyWarning, error) {
	by := ""
	if p != nil {
		by = p.Username
	}
	return s.store.AcknowledgeEarlyWarning(ctx, store.ScopeOf(p), id, by, s.now())
}

// errDisabled refuses a manual poll while the early warning is off.
var errDisabled = domain.Conflict("early_warning_disabled", "the early warning is switched off: enable it in the settings first (it contacts the advisory source)")

func (s *Service) fetch(ctx context.Context, rawURL string, limit int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, &httpError{url: rawURL, status: resp.StatusCode}
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", rawURL, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("GET %s: larger than %d bytes", rawURL, limit)
	}
	return b, nil
}

type httpError struct {
	url    string
	status int
}

func (e *httpError) Error() string { return fmt.Sprintf("GET %s: HTTP %d", e.url, e.status) }

func isNotFound(err error) bool {
	var he *httpError
	return errors.As(err, &he) && he.status == http.StatusNotFound
}

func ecoURL(base, eco, file string) string {
	return strings.TrimRight(base, "/") + "/" + url.PathEscape(eco) + "/" + url.PathEscape(file)
}

// run records a run's outcome for the status.
func (s *Service) run(ctx context.Context, kind string, started time.Time, detail any, runErr error) {
	b, _ := json.Marshal(detail)
	r := store.AdvisoryRun{Kind: kind, StartedAt: started, FinishedAt: s.now(), Detail: b}
	if runErr != nil {
		r.Error = runErr.Error()
	}
	if err := s.store.PutAdvisoryRun(context.WithoutCancel(ctx), r); err != nil {
		s.log.Warn("advisory run not recorded", "kind", kind, "err", err)
	}
}

// jsonRaw passes stored JSON through unchanged.
type jsonRaw []byte

// MarshalJSON returns the stored JSON.
func (j jsonRaw) MarshalJSON() ([]byte, error) {
	if len(j) == 0 {
		return []byte("null"), nil
	}
	return j, nil
}

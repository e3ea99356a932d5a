// Package registrysvc keeps the container registries LCM holds
// credentials for (encrypted at rest) and runs the newer-image check
// against them (issue 15, docs/registries.md). The registry protocol
// itself is internal/registry; this package adds the stored settings:
// which hosts need a user name and password or token, and which speak
// plain HTTP.
package registrysvc

import (
	"context"
	"log/slog"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/registry"
	"github.com/lcmproject/lcm/internal/store"
)

// Limits of the stored fields.
const (
	maxUsername = 255
	// maxPassword fits a registry access token (GHCR's and GitLab's are
	// < 100 characters; JWT-shaped ones a few KiB).
	maxPassword = 8192
)

// Options configure the service and its checker.
type Options struct {
	Log *slog.Logger
	// Concurrency, CacheTTL and Timeout go to the registry.Checker (zero:
	// its defaults).
	Concurrency int
	CacheTTL    time.Duration
	Timeout     time.Duration
}

// Service manages stored registries and checks images against registries.
type Service struct {
	store   *store.Store
	log     *slog.Logger
	checker *registry.Checker
}

// New returns the service with its checker.
func New(st *store.Store, o Options) *Service {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	s := &Service{store: st, log: o.Log}
	s.checker = registry.New(registry.Options{Concurrency: o.Concurrency, CacheTTL: o.CacheTTL, Timeout: o.Timeout, Endpoints: s.Endpoint})
	return s
}

// Check compares each image's local repo digests with its registry's
// current digest for the tag, using the stored credentials of each host
// (anonymous HTTPS for hosts without any). One Result per ImageRef, in
// order; see registry.Checker.Check.
func (s *Service) Check(ctx context.Context, refs []registry.ImageRef) []registry.Result {
	return s.checker.Check(ctx, refs)
}

// Endpoint is the registry.EndpointSource of the stored settings.
func (s *Service) Endpoint(ctx context.Context, host string) (registry.Endpoint, bool, error) {
	r, ok, err := s.store.RegistryByHost(ctx, registry.NormalizeHost(host))
	if err != nil || !ok {
		return registry.Endpoint{}, false, err
	}
	return registry.Endpoint{Username: r.Username, Password: r.Password, PlainHTTP: r.PlainHTTP}, true, nil
}

// Registry is a stored registry as the API shows it: the password only
// as has_password.
type Registry struct {
	ID          string    `json:"id"`
	Host        string    `json:"host"`
	Username    string    `json:"username"`
	HasPassword bool      `json:"has_password"`
	PlainHTTP   bool      `json:"plain_http"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

func view(r store.RegistryCredential) Registry {
	return Registry{ID: r.ID, Host: r.Host, Username: r.Username, HasPassword: r.Password != "", PlainHTTP: r.PlainHTTP,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
}

// Input creates or changes a registry. Nil fields keep the stored value;
// a password sent as "" removes it.
type Input struct {
	Host      *string
	Username  *string
	Password  *string
	PlainHTTP *bool
}

// List returns every stored registry, by host.
func (s *Service) List(ctx context.Context) ([]Registry, error) {
	rows, err := s.store.ListRegistries(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Registry, len(rows))
	for i, r := range rows {
		out[i] = view(r)
	}
	return out, nil
}

// Get returns one registry.
func (s *Service) Get(ctx context.Context, id string) (Registry, error) {
	r, err := s.store.GetRegistry(ctx, id)
	if err != nil {
		return Registry{}, err
	}
	return view(r), nil
}

func printable(v string) bool {
	if !utf8.ValidString(v) {
		return false
	}
	for _, r := range v {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

func apply(r *store.RegistryCredential, in Input) error {
	if in.Host != nil {
		h := strings.TrimSpace(*in.Host)
		if strings.Contains(h, "://") || strings.Contains(h, "/") {
			return domain.Invalid("invalid_host", "host is a registry host name with an optional port, e.g. ghcr.io or registry.example.com:5000 (no scheme, no path)")
		}
		h = registry.NormalizeHost(h)
		if !registry.ValidHost(h) {
			return domain.Invalid("invalid_host", "host is a registry host name with an optional port, e.g. ghcr.io or registry.example.com:5000")
		}
		r.Host = h
	}
	if in.Username != nil {
		u := strings.TrimSpace(*in.Username)
		if len(u) > maxUsername || !printable(u) {
			return domain.Invalid("invalid_username", "username must be at most 255 printable characters")
		}
		r.Username = u
	}
	if in.Password != nil {
		if len(*in.Password) > maxPassword || !printable(*in.Password) {
			return domain.Invalid("invalid_password", "password must be at most 8192 printable characters")
		}
		r.Password = *in.Password
	}
	if in.PlainHTTP != nil {
		r.PlainHTTP = *in.PlainHTTP
	}
	if r.Host == "" {
		return domain.Invalid("invalid_host", "host is required")
	}
	if r.Password != "" && r.Username == "" {
		return domain.Invalid("username_required", "a password or token needs the user name it belongs to")
	}
	return nil
}

// Create stores a new registry; a second one for the same host is a
// conflict.
func (s *Service) Create(ctx context.Context, in Input) (Registry, error) {
	var r store.RegistryCredential
	if err := apply(&r, in); err != nil {
		return Registry{}, err
	}
	if _, dup, err := s.store.RegistryByHost(ctx, r.Host); err != nil {
		return Registry{}, err
	} else if dup {
		return Registry{}, domain.Conflict("duplicate", "a registry for "+r.Host+" is already stored")
	}
	saved, err := s.store.SaveRegistry(ctx, r)
	if err != nil {
		return Registry{}, err
	}
	s.checker.Forget(saved.Host)
	return view(saved), nil
}

// Update changes a registry.
func (s *Service) Update(ctx context.Context, id string, in Input) (Registry, error) {
	r, err := s.store.GetRegistry(ctx, id)
	if err != nil {
		return Registry{}, err
	}
	old := r.Host
	if err := apply(&r, in); err != nil {
		return Registry{}, err
	}
	if r.Host != old {
		if other, dup, err := s.store.RegistryByHost(ctx, r.Host); err != nil {
			return Registry{}, err
		} else if dup && other.ID != id {
			return Registry{}, domain.Conflict("duplicate", "a registry for "+r.Host+" is already stored")
		}
	}
	saved, err := s.store.SaveRegistry(ctx, r)
	if err != nil {
		return Registry{}, err
	}
	s.checker.Forget(old)
	s.checker.Forget(saved.Host)
	return view(saved), nil
}

// Delete removes a registry; its host is then checked anonymously.
func (s *Service) Delete(ctx context.Context, id string) (Registry, error) {
	r, err := s.store.GetRegistry(ctx, id)
	if err != nil {
		return Registry{}, err
	}
	if err := s.store.DeleteRegistry(ctx, id); err != nil {
		return Registry{}, err
	}
	s.checker.Forget(r.Host)
	return view(r), nil
}

// TestResult is the answer of a connection test. A refused login or an
// unreachable registry is a result (ok false with the reason), not an
// error.
type TestResult struct {
	OK     bool   `json:"ok"`
	Reason string `json:"reason,omitempty"`
	Error  string `json:"error,omitempty"`
}

// Test asks the registry's API root (GET /v2/) with the stored
// credentials, answering its challenge: ok when it lets them in.
func (s *Service) Test(ctx context.Context, id string) (TestResult, error) {
	r, err := s.store.GetRegistry(ctx, id)
	if err != nil {
		return TestResult{}, err
	}
	err = s.checker.Ping(ctx, r.Host, registry.Endpoint{Username: r.Username, Password: r.Password, PlainHTTP: r.PlainHTTP})
	if err != nil {
		msg := err.Error()
		if len(r.Password) >= 4 {
			msg = strings.ReplaceAll(msg, r.Password, "[redacted]")
		}
		s.log.Warn("registry test failed", "host", r.Host, "reason", registry.ReasonOf(err), "err", msg)
		return TestResult{OK: false, Reason: string(registry.ReasonOf(err)), Error: msg}, nil
	}
	return TestResult{OK: true}, nil
}

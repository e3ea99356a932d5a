package mcp

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
)

// SettingKey is the runtime setting that switches the listener.
const SettingKey = "mcp"

// Settings is the stored MCP setting. The address comes from config.json
// (mcp_host, mcp_port); only on/off changes at runtime.
type Settings struct {
	Enabled bool `json:"enabled"`
}

// State is what GET /settings/mcp shows.
type State struct {
	Enabled bool   `json:"enabled"`
	Host    string `json:"host"`
	Port    int    `json:"port"`
	URL     string `json:"url"`
	// Listening tells whether this replica's listener is bound now; Error
	// says why not when it should be (e.g. the port is taken).
	Listening bool   `json:"listening"`
	Error     string `json:"error,omitempty"`
}

// SettingsStore is where the setting lives.
type SettingsStore interface {
	GetSetting(ctx context.Context, key string, dst any) (bool, error)
	PutSetting(ctx context.Context, key string, value any) error
}

// Listener binds and unbinds the MCP listener as the setting says. Every
// replica runs one and follows the stored setting (Follow), so a change
// made on one replica reaches the others within the poll interval.
type Listener struct {
	st      SettingsStore
	host    string
	port    int
	handler http.Handler
	log     *slog.Logger

	mu      sync.Mutex
	srv     *http.Server
	addr    string
	lastErr string
}

// NewListener prepares the listener for host:port (not bound yet).
func NewListener(st SettingsStore, host string, port int, h http.Handler, log *slog.Logger) *Listener {
	return &Listener{st: st, host: host, port: port, handler: h, log: log}
}

// FollowInterval is how often a replica re-reads the setting.
const FollowInterval = 2 * time.Second

// Follow applies the stored setting now and then every FollowInterval
// until ctx ends, when the listener is closed. A database that cannot be
// read keeps the current state.
func (l *Listener) Follow(ctx context.Context) {
	t := time.NewTicker(FollowInterval)
	defer t.Stop()
	for {
		if set, err := l.load(ctx); err == nil {
			l.apply(set.Enabled)
		} else if ctx.Err() == nil {
			l.log.Warn("MCP setting unreadable; the listener keeps its state", "err", err)
		}
		select {
		case <-ctx.Done():
			l.apply(false)
			return
		case <-t.C:
		}
	}
}

func (l *Listener) load(ctx context.Context) (Settings, error) {
	var set Settings
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err := l.st.GetSetting(rctx, SettingKey, &set)
	return set, err
}

// apply binds or closes the listener; it is idempotent.
func (l *Listener) apply(enabled bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case enabled && l.srv == nil:
		addr := net.JoinHostPort(l.host, strconv.Itoa(l.port))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			msg := err.Error()
			if errors.Is(err, syscall.EADDRINUSE) {
				msg = addr + " is already in use by another program; stop it or change mcp_host/mcp_port in config.json"
			}
			if l.lastErr != msg {
				l.log.Error("MCP listener cannot start", "addr", addr, "err", msg)
			}
			l.lastErr = msg
			return
		}
		l.lastErr = ""
		srv := &http.Server{Handler: l.handler, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
			WriteTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute,
			ErrorLog: slog.NewLogLogger(l.log.Handler(), slog.LevelDebug)}
		l.srv, l.addr = srv, ln.Addr().String()
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				l.log.Error("MCP listener stopped", "err", err)
			}
		}()
		l.log.Info("MCP listener on", "url", "http://"+l.addr+Path)
	case !enabled && l.srv != nil:
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		if err := l.srv.Shutdown(ctx); err != nil {
			_ = l.srv.Close()
		}
		l.srv = nil
		l.log.Info("MCP listener off", "addr", l.addr)
	case !enabled:
		l.lastErr = ""
	}
}

// State reports the setting and this replica's listener.
func (l *Listener) State(ctx context.Context) (State, error) {
	set, err := l.load(ctx)
	if err != nil {
		return State{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	st := State{Enabled: set.Enabled, Host: l.host, Port: l.port, Listening: l.srv != nil, Error: l.lastErr,
		URL: "http://" + net.JoinHostPort(l.host, strconv.Itoa(l.port)) + Path}
	return st, nil
}

// Set stores the setting and applies it on this replica at once (the
// others follow within FollowInterval). It returns the previous setting
// (for the caller's audit entry) and the new state.
func (l *Listener) Set(ctx context.Context, enabled bool) (was bool, st State, err error) {
	var old Settings
	if _, err := l.st.GetSetting(ctx, SettingKey, &old); err != nil {
		return false, State{}, err
	}
	if err := l.st.PutSetting(ctx, SettingKey, Settings{Enabled: enabled}); err != nil {
		return old.Enabled, State{}, err
	}
	l.apply(enabled)
	if st, err = l.State(ctx); err != nil {
		return old.Enabled, State{}, err
	}
	if enabled && !st.Listening {
		return old.Enabled, st, domain.Unavailable("mcp_listen_failed", "the setting is saved, but the MCP listener cannot start: "+st.Error)
	}
	return old.Enabled, st, nil
}

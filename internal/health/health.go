// Package health watches the process: it pings the database, counts
// recovered panics, talks to systemd (READY, WATCHDOG heartbeats) and ends
// the process with ExitSelfRestart when it cannot recover by itself, so the
// supervisor restarts it cleanly.
package health

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

const (
	// ExitSelfRestart is the exit code of a controlled restart (spec).
	ExitSelfRestart = 70
	// ExitRestore is reserved for the staged backup restore (spec).
	ExitRestore = 42

	// MaxFailStreak consecutive failed DB checks end the process (spec: 5).
	MaxFailStreak = 5
	// MaxPanics recovered panics within PanicWindow end the process (spec: 10 in 15 min).
	MaxPanics   = 10
	PanicWindow = 15 * time.Minute
	// DefaultInterval between DB checks: 5 failures ≈ 75 s, inside the
	// 90 s systemd watchdog, so the process exits before systemd kills it.
	DefaultInterval = 15 * time.Second
	// pingTimeout bounds one DB check so a hung database counts as a failure.
	pingTimeout = 5 * time.Second
)

// Pinger is the database check.
type Pinger func(ctx context.Context) error

// Diagnostics is what signed-in callers see on /health.
type Diagnostics struct {
	FailStreak     int     `json:"fail_streak"`
	PanicsTotal    int64   `json:"panics_total"`
	PanicsRecent   int     `json:"panics_recent"`
	WatchdogActive bool    `json:"watchdog_active"`
	UptimeSeconds  float64 `json:"uptime_seconds"`
}

// Monitor owns the health goroutine (Run) and the counters.
type Monitor struct {
	ping     Pinger
	interval time.Duration
	exit     func(code int)
	notifier *Notifier
	log      *slog.Logger
	start    time.Time
	now      func() time.Time

	mu          sync.Mutex
	failStreak  int
	dbOK        bool
	panicsTotal int64
	panics      []time.Time
}

// New returns a monitor. exit is called with ExitSelfRestart when the
// process must restart (os.Exit in production, a recorder in tests).
func New(ping Pinger, exit func(int), log *slog.Logger) *Monitor {
	return &Monitor{ping: ping, interval: DefaultInterval, exit: exit, notifier: NewNotifier(),
		log: log, start: time.Now(), now: time.Now, dbOK: true}
}

// SetInterval changes the check interval (health_check_interval_seconds).
func (m *Monitor) SetInterval(d time.Duration) { m.interval = d }

// Ready tells systemd the service is up (Type=notify).
func (m *Monitor) Ready() { m.notifier.Notify("READY=1") }

// Stopping tells systemd the service is shutting down.
func (m *Monitor) Stopping() { m.notifier.Notify("STOPPING=1") }

// Run checks the database every interval and sends watchdog heartbeats while
// it is reachable, until ctx ends.
func (m *Monitor) Run(ctx context.Context) {
	check := time.NewTicker(m.interval)
	defer check.Stop()
	var wd <-chan time.Time
	if iv := m.notifier.WatchdogInterval(); iv > 0 {
		t := time.NewTicker(iv / 2) // heartbeat twice per watchdog period
		defer t.Stop()
		wd = t.C
	}
	m.Check(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-check.C:
			m.Check(ctx)
		case <-wd:
			if m.DBHealthy() {
				m.notifier.Notify("WATCHDOG=1")
			}
		}
	}
}

// Check runs one database check and updates the streak.
func (m *Monitor) Check(ctx context.Context) bool {
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	err := m.ping(pctx)
	cancel()
	if ctx.Err() != nil {
		return m.DBHealthy()
	}
	m.mu.Lock()
	if err == nil {
		if m.failStreak > 0 {
			m.log.Info("database reachable again", "after_failures", m.failStreak)
		}
		m.failStreak, m.dbOK = 0, true
		m.mu.Unlock()
		return true
	}
	m.failStreak++
	m.dbOK = false
	streak := m.failStreak
	m.mu.Unlock()
	m.log.Error("database check failed", "fail_streak", streak, "err", err)
	if streak >= MaxFailStreak {
		m.log.Error("database unreachable too long: restarting the process", "exit_code", ExitSelfRestart)
		m.exit(ExitSelfRestart)
	}
	return false
}

// DBHealthy reports the result of the last database check.
func (m *Monitor) DBHealthy() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.dbOK
}

// RecordPanic counts a recovered panic and restarts the process when there
// were too many in the window.
func (m *Monitor) RecordPanic() {
	now := m.now()
	m.mu.Lock()
	m.panicsTotal++
	m.panics = append(pruned(m.panics, now), now)
	recent := len(m.panics)
	m.mu.Unlock()
	if recent >= MaxPanics {
		m.log.Error("too many recovered panics: restarting the process", "panics_recent", recent, "exit_code", ExitSelfRestart)
		m.exit(ExitSelfRestart)
	}
}

func pruned(ts []time.Time, now time.Time) []time.Time {
	cut := now.Add(-PanicWindow)
	i := 0
	for i < len(ts) && ts[i].Before(cut) {
		i++
	}
	return ts[i:]
}

// Diagnostics returns the counters for signed-in health callers.
func (m *Monitor) Diagnostics() Diagnostics {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.panics = pruned(m.panics, now)
	return Diagnostics{
		FailStreak:     m.failStreak,
		PanicsTotal:    m.panicsTotal,
		PanicsRecent:   len(m.panics),
		WatchdogActive: m.notifier.WatchdogInterval() > 0,
		UptimeSeconds:  now.Sub(m.start).Seconds(),
	}
}

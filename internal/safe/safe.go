// Package safe recovers panics in the goroutines LCM owns: each recovered
// panic is logged with its stack and counted by the process's recorder
// (the health monitor, which restarts the process after 10 in 15 minutes,
// spec "Limits"), and the goroutine's loop goes on instead of the whole
// process dying.
package safe

import (
	"context"
	"fmt"
	"github.com/lcmproject/lcm/internal/metrics"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// Recorder counts recovered panics (health.Monitor).
type Recorder interface{ RecordPanic() }

var (
	mu    sync.RWMutex
	rec   Recorder
	log   = slog.Default()
	total atomic.Int64
)

// SetRecorder installs the process's panic recorder and logger (once, at
// start). Panics recovered before are logged and counted in Total only.
func SetRecorder(r Recorder, l *slog.Logger) {
	mu.Lock()
	defer mu.Unlock()
	rec = r
	if l != nil {
		log = l
	}
}

// Total is the number of panics recovered in this process.
func Total() int64 { return total.Load() }

// Recover must be deferred directly: defer safe.Recover("jobs ingest").
// It stops a panic, logs it with the stack and counts it.
func Recover(where string) {
	if v := recover(); v != nil {
		report(where, v)
	}
}

func report(where string, v any) {
	total.Add(1)
	metrics.Panics.WithLabelValues(where).Inc()
	mu.RLock()
	r, l := rec, log
	mu.RUnlock()
	l.Error("recovered panic", "where", where, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
	if r != nil {
		r.RecordPanic()
	}
}

// Go runs fn in a new goroutine that recovers a panic.
func Go(where string, fn func()) {
	go func() {
		defer Recover(where)
		fn()
	}()
}

// Do runs fn and reports whether it panicked (recovered and counted): for
// one iteration of a loop that must survive a bad item.
func Do(where string, fn func()) (panicked bool) {
	defer func() {
		if v := recover(); v != nil {
			report(where, v)
			panicked = true
		}
	}()
	fn()
	return false
}

// Supervise keeps a long-lived loop running until ctx ends: when the loop
// panics (recovered and counted) or returns early (its error logged), it
// starts again after RestartPause. A loop's helper goroutines recover with
// Recover and make the loop return, so the whole loop restarts.
func Supervise(ctx context.Context, where string, loop func(context.Context) error) {
	for ctx.Err() == nil {
		var err error
		panicked := Do(where, func() { err = loop(ctx) })
		if ctx.Err() != nil {
			return
		}
		if !panicked {
			mu.RLock()
			l := log
			mu.RUnlock()
			l.Error("loop stopped early; starting it again", "where", where, "err", err, "after", RestartPause)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(RestartPause):
		}
	}
}

// RestartPause is the wait before a stopped loop starts again.
var RestartPause = time.Second

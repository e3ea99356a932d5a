// Package safe recovers panics in the goroutines LCM owns: each recovered
// panic is logged with its stack and counted by the process's recorder
// (the health monitor, which restarts the process after 10 in 15 minutes,
// spec "Limits"), and the goroutine's loop goes on instead of the whole
// process dying.
package safe

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lcmproject/lcm/internal/metrics"
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

// Report logs and counts a panic value that the caller recovered itself
// (a deferred func that must also set a return value, an HTTP middleware
// that answers 500): the one way every recovered panic reaches the
// process's recorder. attrs are extra log attributes (key, value pairs);
// they must never hold secrets.
func Report(where string, v any, attrs ...any) {
	report(where, v, attrs...)
}

func report(where string, v any, attrs ...any) {
	total.Add(1)
	metrics.Panics.WithLabelValues(where).Inc()
	mu.RLock()
	r, l := rec, log
	mu.RUnlock()
	args := append([]any{"where", where, "panic", fmt.Sprint(v)}, attrs...)
	l.Error("recovered panic", append(args, "stack", string(debug.Stack()))...)
	if r != nil {
		r.RecordPanic()
	}
}

// HTTP wraps h so a panic while serving a request is recovered, logged and
// counted (net/http would only log it) and answered with 500 when the
// handler wrote nothing yet; http.ErrAbortHandler keeps its meaning.
func HTTP(where string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tw := &trackWriter{ResponseWriter: w}
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				report(where, v, "method", r.Method, "path", r.URL.Path)
				if !tw.wrote {
					w.Header().Set("Content-Type", "application/json; charset=utf-8")
					w.WriteHeader(http.StatusInternalServerError)
					_, _ = w.Write([]byte(`{"error":"internal server error","code":"internal"}` + "\n"))
				}
			}
		}()
		h.ServeHTTP(tw, r)
	})
}

// trackWriter notes whether the handler wrote; it passes Flush and Hijack
// through (live streams, WebSocket upgrades).
type trackWriter struct {
	http.ResponseWriter
	wrote bool
}

func (t *trackWriter) WriteHeader(code int) { t.wrote = true; t.ResponseWriter.WriteHeader(code) }
func (t *trackWriter) Write(b []byte) (int, error) {
	t.wrote = true
	return t.ResponseWriter.Write(b)
}
func (t *trackWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }
func (t *trackWriter) Flush() {
	if f, ok := t.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
func (t *trackWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	t.wrote = true
	h, ok := t.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, fmt.Errorf("safe: %T cannot be hijacked", t.ResponseWriter)
	}
	return h.Hijack()
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

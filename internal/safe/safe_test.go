package safe

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

type counter struct{ n atomic.Int64 }

func (c *counter) RecordPanic() { c.n.Add(1) }

func install(t *testing.T) *counter {
	t.Helper()
	c := &counter{}
	SetRecorder(c, slog.New(slog.NewTextHandler(io.Discard, nil)))
	t.Cleanup(func() { SetRecorder(nil, nil) })
	return c
}

func wait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(end) {
			t.Fatalf("timed out: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestRecoverDoGo(t *testing.T) {
	c := install(t)
	func() {
		defer Recover("direct")
		panic("boom")
	}()
	if c.n.Load() != 1 {
		t.Fatalf("Recover counted %d", c.n.Load())
	}
	if !Do("do", func() { var m map[string]int; m["x"] = 1 }) || c.n.Load() != 2 {
		t.Fatalf("Do: %d", c.n.Load())
	}
	if Do("do", func() {}) || c.n.Load() != 2 {
		t.Fatal("Do without a panic reported one")
	}
	Go("go", func() { panic(errors.New("in a goroutine")) })
	wait(t, "the goroutine's panic counted", func() bool { return c.n.Load() == 3 })
}

// TestSuperviseRestarts: a loop that panics twice and then runs until the
// end is started three times; one that returns early is started again.
func TestSuperviseRestarts(t *testing.T) {
	c := install(t)
	old := RestartPause
	RestartPause = 10 * time.Millisecond
	t.Cleanup(func() { RestartPause = old })
	ctx, cancel := context.WithCancel(context.Background())
	var runs atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		Supervise(ctx, "loop", func(ctx context.Context) error {
			switch runs.Add(1) {
			case 1, 2:
				panic("loop broke")
			case 3:
				return errors.New("returned early")
			}
			<-ctx.Done()
			return nil
		})
	}()
	wait(t, "fourth run", func() bool { return runs.Load() == 4 })
	cancel()
	<-done
	if c.n.Load() != 2 {
		t.Fatalf("%d panics counted, want 2", c.n.Load())
	}
}

// TestReportAndHTTP: a panic recovered by its own site (Report) and one in
// an HTTP handler (HTTP) are counted; the handler's client gets a JSON 500,
// a handler that already answered keeps its answer, and
// http.ErrAbortHandler still aborts.
func TestReportAndHTTP(t *testing.T) {
	c := install(t)
	Report("site", "boom", "k", "v")
	if c.n.Load() != 1 {
		t.Fatalf("Report counted %d", c.n.Load())
	}
	h := HTTP("test listener", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/late":
			w.WriteHeader(http.StatusTeapot)
			panic("after the answer")
		case "/abort":
			panic(http.ErrAbortHandler)
		case "/ok":
			_, _ = w.Write([]byte("fine"))
			return
		}
		panic("in a handler")
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/x", nil))
	if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), `"code":"internal"`) || c.n.Load() != 2 {
		t.Fatalf("panic in a handler: %d %q, counted %d", rec.Code, rec.Body.String(), c.n.Load())
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/late", nil))
	if rec.Code != http.StatusTeapot || c.n.Load() != 3 {
		t.Fatalf("panic after the answer: %d, counted %d", rec.Code, c.n.Load())
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/ok", nil))
	if rec.Body.String() != "fine" || c.n.Load() != 3 {
		t.Fatalf("a normal request: %q, counted %d", rec.Body.String(), c.n.Load())
	}
	func() {
		defer func() {
			if v := recover(); v != http.ErrAbortHandler {
				t.Fatalf("ErrAbortHandler did not pass through: %v", v)
			}
		}()
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/abort", nil))
	}()
	if c.n.Load() != 3 {
		t.Fatalf("an abort was counted as a panic: %d", c.n.Load())
	}
}

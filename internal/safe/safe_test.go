package safe

import (
	"context"
	"errors"
	"io"
	"log/slog"
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

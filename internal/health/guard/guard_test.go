package guard

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/health"
	"github.com/lcmproject/lcm/internal/safe"
	"github.com/lcmproject/lcm/internal/testutil"
)

// TestRun: serve's own end is Run's result; ten recovered panics cancel
// serve's context, Run waits for serve to return (the graceful stop) and
// answers ExitError(70).
func TestRun(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ok := func(context.Context) error { return nil }
	t.Cleanup(func() { safe.SetRecorder(nil, nil) })
	boom := errors.New("listener failed")
	if err := Run(context.Background(), log, ok, func(context.Context) error { return boom }); err != boom {
		t.Fatalf("serve's error: %v", err)
	}

	running, stopped := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), log, ok, func(ctx context.Context) error {
			close(running) // the recorder is installed before serve starts
			<-ctx.Done()
			close(stopped)
			return nil
		})
	}()
	<-running
	before := safe.Total()
	for range health.MaxPanics {
		safe.Go("test", func() { panic("injected") })
	}
	testutil.WaitFor(t, 10*time.Second, "ten panics recovered", func() bool { return safe.Total()-before >= health.MaxPanics })
	select {
	case err := <-done:
		var ec health.ExitError
		if !errors.As(err, &ec) || int(ec) != health.ExitSelfRestart {
			t.Fatalf("Run ended with %v", err)
		}
		select {
		case <-stopped:
		default:
			t.Fatal("Run returned before serve stopped")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ten panics did not stop Run")
	}
}

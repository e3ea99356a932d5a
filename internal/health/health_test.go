package health

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestFailStreakExits(t *testing.T) {
	var fail bool
	var exits []int
	m := New(func(context.Context) error {
		if fail {
			return errors.New("db down")
		}
		return nil
	}, func(c int) { exits = append(exits, c) }, quiet())
	ctx := context.Background()
	fail = true
	for i := 0; i < MaxFailStreak-1; i++ {
		m.Check(ctx)
	}
	fail = false
	m.Check(ctx) // a brief hiccup resets the streak
	if len(exits) != 0 || m.Diagnostics().FailStreak != 0 {
		t.Fatalf("hiccup caused exit %v", exits)
	}
	fail = true
	for i := 0; i < MaxFailStreak; i++ {
		m.Check(ctx)
	}
	if len(exits) != 1 || exits[0] != ExitSelfRestart {
		t.Fatalf("exits %v, want [70]", exits)
	}
}

func TestPanicWindow(t *testing.T) {
	var exits []int
	m := New(func(context.Context) error { return nil }, func(c int) { exits = append(exits, c) }, quiet())
	now := time.Now()
	m.now = func() time.Time { return now }
	for i := 0; i < MaxPanics-1; i++ {
		m.RecordPanic()
	}
	now = now.Add(PanicWindow + time.Second) // old panics decay
	m.RecordPanic()
	if len(exits) != 0 {
		t.Fatal("decayed panics caused an exit")
	}
	d := m.Diagnostics()
	if d.PanicsTotal != MaxPanics || d.PanicsRecent != 1 {
		t.Fatalf("diagnostics %+v", d)
	}
	for i := 0; i < MaxPanics-1; i++ {
		m.RecordPanic()
	}
	if len(exits) != 1 || exits[0] != ExitSelfRestart {
		t.Fatalf("exits %v", exits)
	}
}

func TestSDNotifyWatchdogOnlyWhileDBReachable(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	t.Setenv("NOTIFY_SOCKET", sock)
	t.Setenv("WATCHDOG_USEC", "100000") // 100 ms
	var mu sync.Mutex
	dbErr := error(nil)
	m := New(func(context.Context) error { mu.Lock(); defer mu.Unlock(); return dbErr }, func(int) {}, quiet())
	m.SetInterval(20 * time.Millisecond)
	m.Ready()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go m.Run(ctx)
	read := func(d time.Duration) []string {
		var got []string
		buf := make([]byte, 64)
		deadline := time.Now().Add(d)
		for {
			conn.SetReadDeadline(deadline)
			n, err := conn.Read(buf)
			if err != nil {
				return got
			}
			got = append(got, string(buf[:n]))
		}
	}
	msgs := strings.Join(read(300*time.Millisecond), ",")
	if !strings.HasPrefix(msgs, "READY=1") || !strings.Contains(msgs, "WATCHDOG=1") {
		t.Fatalf("messages %q", msgs)
	}
	if !m.Diagnostics().WatchdogActive {
		t.Fatal("watchdog not reported active")
	}
	mu.Lock()
	dbErr = errors.New("down")
	mu.Unlock()
	time.Sleep(60 * time.Millisecond) // let a failed check land
	read(20 * time.Millisecond)       // drain heartbeats sent before it
	if msgs := read(250 * time.Millisecond); len(msgs) != 0 {
		t.Fatalf("heartbeats while DB down: %v", msgs)
	}
}

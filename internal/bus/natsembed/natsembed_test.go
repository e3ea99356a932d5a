package natsembed_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/lcmproject/lcm/internal/bus"
	_ "github.com/lcmproject/lcm/internal/bus/natsembed"
)

func TestEmbeddedIdempotentAndDedup(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for i := 0; i < 2; i++ { // second open on the same store: idempotent
		b, err := bus.Open(ctx, bus.Options{DataDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		if b.ClientURL() != "" {
			t.Fatal("embedded server without listen must take no port")
		}
		for _, name := range []string{bus.BucketLocks, bus.BucketLeader, bus.BucketRateLimit, bus.BucketLockout, bus.BucketAuth, bus.BucketAgents} {
			if _, err := b.KV(ctx, name); err != nil {
				t.Fatalf("bucket %s: %v", name, err)
			}
		}
		if i == 0 {
			for j := 0; j < 2; j++ {
				if _, err := b.JS.Publish(ctx, bus.JobSubject("default", "s1"), []byte("job"), jetstream.WithMsgID("job-1")); err != nil {
					t.Fatal(err)
				}
			}
		}
		st, err := b.JS.Stream(ctx, bus.StreamJobs)
		if err != nil {
			t.Fatal(err)
		}
		info, _ := st.Info(ctx)
		if info.State.Msgs != 1 {
			t.Fatalf("dedup by job id failed: %d messages", info.State.Msgs)
		}
		b.Close()
	}
}

// TestServeConcurrently: requests are answered n at a time (all n block
// until every one of them arrived), and stop waits for the ones in flight.
func TestServeConcurrently(t *testing.T) {
	ctx := context.Background()
	b, err := bus.Open(ctx, bus.Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	const n = 4
	var arrived sync.WaitGroup
	arrived.Add(n)
	release := make(chan struct{})
	var finished atomic.Int32
	stop, err := b.ServeConcurrently("test.concurrent", "q", n, func(data []byte) []byte {
		arrived.Done()
		<-release
		finished.Add(1)
		return append([]byte("re:"), data...)
	})
	if err != nil {
		t.Fatal(err)
	}
	replies := make(chan string, n)
	for i := range n {
		go func() {
			r, err := b.Request(ctx, "test.concurrent", []byte(fmt.Sprint(i)), 10*time.Second)
			if err != nil {
				replies <- err.Error()
				return
			}
			replies <- string(r)
		}()
	}
	arrived.Wait() // deadlocks (test timeout) unless n run at once
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }() // while all n are in flight
	close(release)
	<-stopped
	if f := finished.Load(); f != n {
		t.Fatalf("stop returned with %d of %d handlers finished", f, n)
	}
	got := map[string]bool{}
	for range n {
		got[<-replies] = true
	}
	for i := range n {
		if !got[fmt.Sprintf("re:%d", i)] {
			t.Fatalf("replies %v", got)
		}
	}
}

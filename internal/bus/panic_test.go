package bus

import (
	"context"
	"io"
	"log/slog"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/lcmproject/lcm/internal/safe"
	"github.com/lcmproject/lcm/internal/testutil"
)

type panicCount struct{ n atomic.Int64 }

func (p *panicCount) RecordPanic() { p.n.Add(1) }

// TestHandlerPanicsAreRecovered: a request handler or subscriber that
// panics (on a bad message) is recovered and counted, and the
// subscription keeps serving the next message (real NATS).
func TestHandlerPanicsAreRecovered(t *testing.T) {
	url := os.Getenv("LCM_TEST_NATS_URL")
	if url == "" {
		url = nats.DefaultURL
	}
	b, err := Open(context.Background(), Options{URL: url})
	if err != nil {
		testutil.Unavailable(t, "NATS at %s: %v", url, err)
	}
	defer b.Close()
	pc := &panicCount{}
	safe.SetRecorder(pc, slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer safe.SetRecorder(nil, nil)

	subject := "lcm.test.panic." + t.Name()
	for name, serve := range map[string]func(string, string, func([]byte) []byte) (func(), error){
		"Serve": b.Serve,
		"ServeConcurrently": func(s, q string, fn func([]byte) []byte) (func(), error) {
			return b.ServeConcurrently(s, q, 4, fn)
		},
	} {
		before := pc.n.Load()
		stop, err := serve(subject+"."+name, "", func(data []byte) []byte {
			if string(data) == "bad" {
				panic("handler met a bad message")
			}
			return append([]byte("ok:"), data...)
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.NC.Request(subject+"."+name, []byte("bad"), 300*time.Millisecond); err == nil {
			t.Fatalf("%s: a panicking handler answered", name)
		}
		msg, err := b.NC.Request(subject+"."+name, []byte("good"), 2*time.Second)
		if err != nil || string(msg.Data) != "ok:good" {
			t.Fatalf("%s: after a panic: %v %v", name, err, msg)
		}
		if pc.n.Load() != before+1 {
			t.Fatalf("%s: %d panics counted", name, pc.n.Load()-before)
		}
		stop()
	}

	got := make(chan string, 2)
	stop, err := b.Subscribe(subject+".sub", func(_ string, data []byte) {
		if string(data) == "bad" {
			panic("subscriber met a bad message")
		}
		got <- string(data)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	_ = b.NC.Publish(subject+".sub", []byte("bad"))
	_ = b.NC.Publish(subject+".sub", []byte("good"))
	select {
	case v := <-got:
		if v != "good" {
			t.Fatalf("subscriber got %q", v)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the subscriber stopped after a panic")
	}
}

package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lcmproject/lcm/pkg/agentproto"
)

// recorder collects what a runner publishes.
type recorder struct {
	mu     sync.Mutex
	msgs   []any
	result chan *agentproto.Result
}

func newRecorder() *recorder { return &recorder{result: make(chan *agentproto.Result, 4)} }

func (r *recorder) publish(_ context.Context, ch agentproto.Channel, m any) error {
	if ch != agentproto.ChannelRes {
		return nil
	}
	r.mu.Lock()
	r.msgs = append(r.msgs, m)
	r.mu.Unlock()
	if res, ok := m.(*agentproto.Result); ok {
		r.result <- res
	}
	return nil
}

func (r *recorder) output(stream string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b bytes.Buffer
	for _, m := range r.msgs {
		if o, ok := m.(*agentproto.Output); ok && o.Stream == stream {
			b.Write(o.Data)
		}
	}
	return b.String()
}

func (r *recorder) wait(t *testing.T) *agentproto.Result {
	t.Helper()
	select {
	case res := <-r.result:
		return res
	case <-time.After(60 * time.Second):
		t.Fatal("no result")
		return nil
	}
}

func command(t *testing.T, c agentproto.Command) []byte {
	t.Helper()
	c.Header = agentproto.NewHeader(agentproto.TypeCommand, agentproto.NewID())
	b, err := agentproto.Encode(&c)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func testRunner(t *testing.T) (*runner, *recorder) {
	rec := newRecorder()
	r := newRunner(rec.publish, slog.New(slog.NewTextHandler(io.Discard, nil)))
	t.Cleanup(r.wait)
	return r, rec
}

func TestRunnerOutputAndExitCode(t *testing.T) {
	r, rec := testRunner(t)
	r.handle(context.Background(), command(t, agentproto.Command{Cmd: `echo out; echo err >&2; printf "$LC_ALL"; cat; exit 3`, Stdin: []byte("in\n")}))
	res := rec.wait(t)
	if res.Code != "" || res.ExitCode != 3 {
		t.Fatalf("result %+v", res)
	}
	if got := rec.output(agentproto.StreamStdout); got != "out\nCin\n" {
		t.Fatalf("stdout %q", got)
	}
	if got := rec.output(agentproto.StreamStderr); got != "err\n" {
		t.Fatalf("stderr %q", got)
	}
	if _, ok := rec.msgs[0].(*agentproto.Accepted); !ok {
		t.Fatalf("first message %T, want Accepted", rec.msgs[0])
	}
	seq := 0
	for _, m := range rec.msgs {
		if o, ok := m.(*agentproto.Output); ok {
			seq++
			if o.Seq != seq {
				t.Fatalf("seq %d, want %d", o.Seq, seq)
			}
		}
	}
	if res.Chunks != seq {
		t.Fatalf("result chunks %d, sent %d", res.Chunks, seq)
	}
}

func TestRunnerSignalExitCode(t *testing.T) {
	r, rec := testRunner(t)
	r.handle(context.Background(), command(t, agentproto.Command{Cmd: `kill -TERM $$`}))
	if res := rec.wait(t); res.ExitCode != 128+int(syscall.SIGTERM) {
		t.Fatalf("result %+v", res)
	}
}

func TestRunnerTruncatesAtCap(t *testing.T) {
	r, rec := testRunner(t)
	r.handle(context.Background(), command(t, agentproto.Command{Cmd: `head -c 5242880 /dev/zero; echo done >&2`}))
	res := rec.wait(t)
	if !res.Truncated || res.Code != "" || res.ExitCode != 0 {
		t.Fatalf("result %+v", res)
	}
	out, errOut := rec.output(agentproto.StreamStdout), rec.output(agentproto.StreamStderr)
	if len(out)+len(errOut)-len(agentproto.TruncationNotice) > agentproto.MaxOutputBytes {
		t.Fatalf("sent %d bytes past the cap", len(out)+len(errOut))
	}
	if !strings.Contains(errOut, agentproto.TruncationNotice) || strings.Contains(errOut, "done") {
		t.Fatalf("stderr %q", errOut)
	}
}

func TestRunnerCancelKillsProcessGroup(t *testing.T) {
	r, rec := testRunner(t)
	c := agentproto.Command{Header: agentproto.NewHeader(agentproto.TypeCommand, agentproto.NewID()),
		Cmd: `sleep 300 & echo $!; wait`}
	b, _ := agentproto.Encode(&c)
	r.handle(context.Background(), b)
	var pid int
	waitFor(t, func() bool {
		pid, _ = strconv.Atoi(strings.TrimSpace(rec.output(agentproto.StreamStdout)))
		return pid > 0
	})
	cb, _ := agentproto.Encode(&agentproto.Cancel{Header: agentproto.NewHeader(agentproto.TypeCancel, c.ID)})
	r.handle(context.Background(), cb)
	res := rec.wait(t)
	if res.Code != agentproto.CodeCancelled {
		t.Fatalf("result %+v", res)
	}
	waitFor(t, func() bool { return syscall.Kill(pid, 0) != nil })
}

func TestRunnerTimeoutAndDuplicate(t *testing.T) {
	r, rec := testRunner(t)
	b := command(t, agentproto.Command{Cmd: `sleep 300`, TimeoutMS: 100})
	r.handle(context.Background(), b)
	r.handle(context.Background(), b) // QoS 1 redelivery: ignored
	if res := rec.wait(t); res.Code != agentproto.CodeTimeout {
		t.Fatalf("result %+v", res)
	}
	r.wait()
	if n := len(rec.result); n != 0 {
		t.Fatalf("%d extra results: the duplicate ran", n)
	}
}

func TestRunnerIdleTimeout(t *testing.T) {
	r, rec := testRunner(t)
	r.handle(context.Background(), command(t, agentproto.Command{Cmd: `echo hi; sleep 300`, IdleTimeoutMS: 200}))
	if res := rec.wait(t); res.Code != agentproto.CodeIdle {
		t.Fatalf("result %+v", res)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 30 s")
		}
		time.Sleep(10 * time.Millisecond) // polling cond
	}
}

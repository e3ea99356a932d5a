package runner

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/lcmproject/lcm/internal/bus"
)

// Output chunking. Each bound says why.
const (
	// chunkSize caps one chunk: large enough that 50 MiB of output is only
	// 200 messages and rows, small enough to stay far below NATS's 1 MiB
	// payload limit.
	chunkSize = 256 << 10
	// quickFlush is how long output may wait in the buffer while the
	// output is sporadic: it keeps a live console within the 100 ms
	// budget while batching a burst of lines into one message.
	quickFlush = 20 * time.Millisecond
	// quickChunks are sent after quickFlush whatever their rate: a job's
	// first lines (the banner, the command's first output) arrive at once.
	quickChunks = 4
	// steadyFlush spaces the chunks of output that keeps coming: a
	// console that moves five times a second reads as live, and a command
	// printing a line every few milliseconds sends five chunks a second
	// instead of fifty (each chunk is a message, a stored row and an
	// encryption). Output after a pause of steadyFlush is quick again.
	steadyFlush = 200 * time.Millisecond
	// maxInFlight bounds unacknowledged chunks (memory: 32 × 256 KiB).
	maxInFlight = 32
	// retryDelay spaces re-publishes of a chunk while NATS is away; the
	// chunk is retried until it is stored, so nothing is lost.
	retryDelay = 500 * time.Millisecond
)

// output is the io.Writer an action writes its console output to. It
// cuts the bytes into chunks with gap-free sequence numbers and byte
// offsets and publishes them to the job's output subject with Nats-Msg-Id
// "<job>/<seq>", so a retried publish is stored once.
type output struct {
	ctx   context.Context
	bus   *bus.Bus
	jobID string

	mu       sync.Mutex
	buf      []byte
	seq      int64
	offset   int64 // offset of buf[0]
	timer    *time.Timer
	lastSent time.Time
	inflight []pending
	err      error
}

type pending struct {
	subject, id string
	data        []byte
	ack         <-chan error
}

func newOutput(ctx context.Context, b *bus.Bus, jobID string) *output {
	return &output{ctx: ctx, bus: b, jobID: jobID}
}

// Write buffers p and sends full chunks.
func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		room := chunkSize - len(o.buf)
		take := min(room, len(p))
		o.buf = append(o.buf, p[:take]...)
		p = p[take:]
		if len(o.buf) >= chunkSize {
			o.flushLocked()
		}
	}
	if len(o.buf) > 0 && o.timer == nil {
		delay := quickFlush
		if since := time.Since(o.lastSent); o.seq >= quickChunks && since < steadyFlush {
			delay = max(quickFlush, steadyFlush-since)
		}
		o.timer = time.AfterFunc(delay, func() {
			o.mu.Lock()
			defer o.mu.Unlock()
			o.timer = nil
			o.flushLocked()
		})
	}
	return n, nil
}

// Bytes is the output size so far (sent or buffered).
func (o *output) Bytes() int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.offset + int64(len(o.buf))
}

func (o *output) flushLocked() {
	if len(o.buf) == 0 {
		return
	}
	data := bus.OutputMsg{V: bus.MessageVersion, Type: bus.TypeOutput, JobID: o.jobID,
		Seq: o.seq, Offset: o.offset, Data: o.buf}.Encode()
	p := pending{subject: bus.JobOutputSubject(o.jobID), id: fmt.Sprintf("%s/%d", o.jobID, o.seq), data: data}
	o.seq++
	o.lastSent = time.Now()
	o.offset += int64(len(o.buf))
	// Encode copied the bytes: the buffer is reused. It grows only as far
	// as a job's output needs (most jobs print a few KiB), so a thousand
	// jobs in flight do not each hold a 256 KiB chunk.
	o.buf = o.buf[:0]
	if ack, err := o.bus.PublishAsync(p.subject, p.id, p.data); err == nil {
		p.ack = ack
	}
	o.inflight = append(o.inflight, p)
	for len(o.inflight) > maxInFlight {
		o.settle(o.inflight[0])
		o.inflight = o.inflight[1:]
	}
}

// settle waits for a chunk's ack and re-publishes it until it is stored.
func (o *output) settle(p pending) {
	if p.ack != nil {
		if err := <-p.ack; err == nil {
			return
		}
	}
	for {
		err := o.bus.Publish(o.ctx, p.subject, p.id, p.data)
		if err == nil {
			return
		}
		if o.ctx.Err() != nil {
			o.err = err
			return
		}
		time.Sleep(retryDelay)
	}
}

// Close sends what is buffered and waits until every chunk is stored.
func (o *output) Close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.timer != nil {
		o.timer.Stop()
		o.timer = nil
	}
	o.flushLocked()
	for _, p := range o.inflight {
		o.settle(p)
	}
	o.inflight = nil
	return o.err
}

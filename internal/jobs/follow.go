package jobs

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/lcmproject/lcm/internal/bus"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/safe"
	"github.com/lcmproject/lcm/internal/store"
)

// FollowEvent is one item of a live job stream: an output chunk or the
// job's new state. The last event of a stream is the final state.
type FollowEvent struct {
	Output *domain.OutputChunk
	State  *domain.Job
}

// followPoll is how often a follower re-reads the database: it refills
// chunks the live subscription missed and notices a final state whose
// event it missed. Live chunks arrive without waiting for it.
const followPoll = time.Second

// followGiveUp ends the stream of a final job whose output never became
// complete (a chunk lost for good) instead of following it forever.
const followGiveUp = 10 * time.Second

// followReplay bounds one read of stored output while following.
const followReplay = 4 << 20

// followReadTimeout bounds each database read of a follower: the stream
// itself may stay open for the job's life (it has no request deadline),
// its reads may not hang on a database that stopped answering.
const followReadTimeout = 10 * time.Second

// readJob reads the job with followReadTimeout.
func (s *Service) readJob(ctx context.Context, sc store.Scope, id string) (domain.Job, error) {
	ctx, cancel := context.WithTimeout(ctx, followReadTimeout)
	defer cancel()
	return s.store.GetJob(ctx, sc, id)
}

// Follow streams a visible job's console output from the beginning and
// then live, de-duplicated by offset, ending after the final state. The
// channel closes when the job is final or ctx ends.
func (s *Service) Follow(ctx context.Context, p *domain.Principal, id string) (<-chan FollowEvent, error) {
	job, err := s.readJob(ctx, store.ScopeOf(p), id)
	if err != nil {
		return nil, err
	}
	live := make(chan liveEvent, 4096)
	var stop func()
	if s.bus != nil && s.bus.Healthy() {
		stop, err = s.bus.Subscribe(bus.JobEventsOf(id), func(subject string, data []byte) {
			ev, ok := decodeLive(subject, data)
			if !ok {
				return
			}
			select {
			case live <- ev:
			default: // full: the database refill covers the gap
			}
		})
		if err != nil {
			stop = nil
		}
	}
	out := make(chan FollowEvent, 64)
	f := &follower{s: s, id: id, out: out, live: live}
	go func() {
		defer close(out)
		defer safe.Recover("job follower")
		if stop != nil {
			defer stop()
		}
		f.run(ctx, job)
	}()
	return out, nil
}

type liveEvent struct {
	chunk *domain.OutputChunk
	state *bus.StateMsg
}

func decodeLive(subject string, data []byte) (liveEvent, bool) {
	switch {
	case strings.HasSuffix(subject, ".out"):
		o, err := bus.DecodeOutput(data)
		if err != nil {
			return liveEvent{}, false
		}
		return liveEvent{chunk: &domain.OutputChunk{Seq: o.Seq, Offset: o.Offset, Data: o.Data}}, true
	case strings.HasSuffix(subject, ".state"):
		var st bus.StateMsg
		if json.Unmarshal(data, &st) != nil || st.Type != bus.TypeState {
			return liveEvent{}, false
		}
		return liveEvent{state: &st}, true
	}
	return liveEvent{}, false
}

type follower struct {
	s    *Service
	id   string
	out  chan<- FollowEvent
	live <-chan liveEvent
	sent int64 // bytes of output sent so far
	// held are live chunks that arrived ahead of a gap, by offset.
	held map[int64]domain.OutputChunk
}

func (f *follower) emit(ctx context.Context, ev FollowEvent) bool {
	select {
	case f.out <- ev:
		return true
	case <-ctx.Done():
		return false
	}
}

func (f *follower) emitChunk(ctx context.Context, c domain.OutputChunk) bool {
	end := c.Offset + int64(len(c.Data))
	if end <= f.sent {
		return true
	}
	if c.Offset > f.sent {
		if f.held == nil {
			f.held = map[int64]domain.OutputChunk{}
		}
		f.held[c.Offset] = c
		return true
	}
	c.Data = c.Data[f.sent-c.Offset:]
	c.Offset = f.sent
	f.sent = end
	if !f.emit(ctx, FollowEvent{Output: &c}) {
		return false
	}
	for {
		next, ok := f.heldAt()
		if !ok {
			return true
		}
		if !f.emitChunk(ctx, next) {
			return false
		}
	}
}

// heldAt removes and returns a held chunk that continues the output.
func (f *follower) heldAt() (domain.OutputChunk, bool) {
	for off, c := range f.held {
		if off <= f.sent {
			delete(f.held, off)
			if off+int64(len(c.Data)) > f.sent {
				return c, true
			}
		}
	}
	return domain.OutputChunk{}, false
}

// refill sends stored output from f.sent on.
func (f *follower) refill(ctx context.Context) bool {
	for {
		rctx, cancel := context.WithTimeout(ctx, followReadTimeout)
		chunks, err := f.s.store.OutputFrom(rctx, f.id, f.sent, followReplay)
		cancel()
		if err != nil || len(chunks) == 0 {
			return ctx.Err() == nil
		}
		for _, c := range chunks {
			if !f.emitChunk(ctx, c) {
				return false
			}
		}
	}
}

// finishIfDone ends the stream when the stored job is final and all its
// output was sent, waiting up to wait for the ingest to catch up. A final
// job whose output stays incomplete for followGiveUp ends anyway.
func (f *follower) finishIfDone(ctx context.Context, wait time.Duration) (done bool) {
	deadline := time.Now().Add(wait)
	for {
		job, err := f.s.readJob(ctx, store.SystemScope, f.id)
		if err != nil {
			return true
		}
		if job.Status.Terminal() {
			if !f.refill(ctx) {
				return true
			}
			stuck := job.FinishedAt != nil && time.Since(*job.FinishedAt) > followGiveUp
			if f.sent >= job.OutputBytes || stuck {
				f.emit(ctx, FollowEvent{State: &job})
				return true
			}
		}
		if time.Now().After(deadline) {
			return false
		}
		if !sleepCtx(ctx, 20*time.Millisecond) {
			return true
		}
	}
}

func (f *follower) run(ctx context.Context, job domain.Job) {
	if !f.emit(ctx, FollowEvent{State: &job}) || !f.refill(ctx) {
		return
	}
	if f.finishIfDone(ctx, 0) {
		return
	}
	tick := time.NewTicker(followPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-f.live:
			if ev.chunk != nil {
				if ev.chunk.Offset > f.sent && !f.refill(ctx) {
					return
				}
				if !f.emitChunk(ctx, *ev.chunk) {
					return
				}
				continue
			}
			if domain.JobStatus(ev.state.Status).Terminal() {
				if f.finishIfDone(ctx, 5*time.Second) {
					return
				}
				continue
			}
			if j, err := f.s.readJob(ctx, store.SystemScope, f.id); err == nil {
				j.Status = domain.JobStatus(ev.state.Status)
				if !f.emit(ctx, FollowEvent{State: &j}) {
					return
				}
			}
		case <-tick.C:
			if !f.refill(ctx) || f.finishIfDone(ctx, 0) {
				return
			}
		}
	}
}

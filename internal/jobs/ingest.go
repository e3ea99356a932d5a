package jobs

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/lcmproject/lcm/internal/bus"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/metrics"
	"github.com/lcmproject/lcm/internal/safe"
	"github.com/lcmproject/lcm/internal/store"
)

// Ingest batching: up to ingestBatch events per transaction, waiting at
// most ingestWait for the first one. 512 × 128 KiB chunks is 64 MiB per
// transaction at most, and a lone chunk is stored within milliseconds.
const (
	ingestBatch = 512
	ingestWait  = time.Second
	// ingestAckWait is how long a fetched event may stay unacked before it
	// is delivered again (a replica died mid-batch, or NATS restarted and
	// the acks were lost). A full batch is stored in well under a second;
	// 10 s bounds how long such a gap stays in a job's output.
	ingestAckWait = 10 * time.Second
	// finishChunk bounds the final states whose finish hooks run and
	// whose rows are written together: large enough that the inventory
	// ingest of refresh results commits in groups, small enough that jobs
	// read as final progressively while a full batch of 512 is worked off.
	finishChunk = 100
)

// RunIngest stores job events from JOBEVENTS until ctx ends: output chunks
// encrypted and exactly once (insert-or-ignore by job and seq), state
// changes through the state machine, heartbeats. Every replica runs it on
// the same durable consumer, so each event is processed by one of them;
// the writes are idempotent anyway.
func (s *Service) RunIngest(ctx context.Context) error {
	var cons *bus.Consumer
	for cons == nil {
		c, err := s.bus.EventConsumer(ctx, ingestAckWait)
		if err == nil {
			cons = c
			break
		}
		s.log.Warn("ingest: consumer unavailable, retrying", "err", err)
		if !sleepCtx(ctx, time.Second) {
			return nil
		}
	}
	// Fetching and storing overlap: while one batch is written to the
	// database the next is pulled from NATS.
	batches := make(chan []bus.Msg, 2)
	go func() {
		defer close(batches)
		defer safe.Recover("jobs ingest fetch")
		for ctx.Err() == nil {
			msgs, err := cons.Fetch(ctx, ingestBatch, ingestWait)
			if err != nil {
				if !sleepCtx(ctx, 200*time.Millisecond) {
					return
				}
				continue
			}
			if len(msgs) > 0 {
				select {
				case batches <- msgs:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	for msgs := range batches {
		if err := s.ingest(ctx, msgs); err != nil {
			s.log.Error("ingest: batch failed, will be redelivered", "events", len(msgs), "err", err)
			for _, m := range msgs {
				_ = m.NakWithDelay(time.Second)
			}
			continue
		}
		for _, m := range msgs {
			_ = m.Ack()
		}
	}
	return nil
}

// ingest stores one fetched batch: output chunks, then heartbeats and
// intermediate states (one transaction each), then the final states in
// chunks (completeMany: finish hooks, then the rows). Per job the order of
// its events is kept.
func (s *Service) ingest(ctx context.Context, msgs []bus.Msg) error {
	var chunks []store.ChunkIn
	var states []bus.StateMsg
	for _, m := range msgs {
		switch {
		case strings.HasSuffix(m.Subject(), ".out"):
			o, err := bus.DecodeOutput(m.Data())
			if err != nil || o.V > bus.MessageVersion || o.JobID == "" {
				s.log.Warn("ingest: dropping malformed output event", "subject", m.Subject())
				continue
			}
			chunks = append(chunks, store.ChunkIn{JobID: o.JobID, OutputChunk: domain.OutputChunk{Seq: o.Seq, Offset: o.Offset, Data: o.Data}})
		case strings.HasSuffix(m.Subject(), ".state"):
			var st bus.StateMsg
			if json.Unmarshal(m.Data(), &st) != nil || st.V > bus.MessageVersion || st.JobID == "" {
				s.log.Warn("ingest: dropping malformed state event", "subject", m.Subject())
				continue
			}
			if st.Origin == bus.OriginControl {
				continue // the control plane's announcement: the row has it
			}
			states = append(states, st)
		}
	}
	if err := s.store.AppendOutput(ctx, chunks); err != nil {
		return err
	}
	if len(chunks) > 0 {
		n := 0
		for _, c := range chunks {
			n += len(c.Data)
		}
		metrics.IngestEvents.WithLabelValues("output").Add(float64(len(chunks)))
		metrics.IngestBytes.Add(float64(n))
	}
	var beats []store.Heartbeat
	var moves []store.JobTransition
	var finals []final
	ended := map[string]bool{}
	for _, st := range states {
		if st.Type == bus.TypeHeartbeat {
			beats = append(beats, store.Heartbeat{JobID: st.JobID, WorkerID: st.WorkerID, At: st.At})
			continue
		}
		status := domain.JobStatus(st.Status)
		if !status.Valid() || ended[st.JobID] {
			continue // a job has one final state per worker report
		}
		u := store.JobUpdate{Status: status, WorkerID: st.WorkerID, Seq: st.Seq, At: st.At, ExitCode: st.ExitCode, Error: st.Error,
			Result: st.Result, OutputBytes: st.OutputBytes, Data: st.Data, Unreachable: st.Unreachable}
		if status.Terminal() {
			ended[st.JobID] = true
			finals = append(finals, final{id: st.JobID, u: u})
			continue
		}
		moves = append(moves, store.JobTransition{JobID: st.JobID, Update: u})
	}
	if err := s.store.JobHeartbeats(ctx, beats); err != nil {
		return err
	}
	if _, err := s.store.TransitionJobs(ctx, moves); err != nil {
		return err
	}
	metrics.IngestEvents.WithLabelValues("state").Add(float64(len(moves) + len(finals)))
	metrics.IngestEvents.WithLabelValues("heartbeat").Add(float64(len(beats)))
	// A batch full of refresh results takes seconds: keep NATS from
	// redelivering it meanwhile.
	touched := time.Now()
	for lo := 0; lo < len(finals); lo += finishChunk {
		if time.Since(touched) > ingestAckWait/3 {
			for _, m := range msgs {
				_ = m.InProgress()
			}
			touched = time.Now()
		}
		if _, err := s.completeMany(ctx, finals[lo:min(lo+finishChunk, len(finals))]); err != nil {
			return err
		}
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

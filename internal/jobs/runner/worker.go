// Package runner is the worker half of the job protocol: the consumer
// runtime lcm-worker (and the all-in-one lcm-api, in-process) runs. It pulls
// jobs of its segments from JOBS, claims each by asking for the server's
// credentials (sealed to its own X25519 key, kept in memory for the job
// only), runs the action over SSH, streams the console output in numbered
// chunks, heartbeats, and reports the final state. It has no database and
// no master key.
package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lcmproject/lcm/internal/bus"
	"github.com/lcmproject/lcm/internal/credbox"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/safe"
	"github.com/lcmproject/lcm/internal/sshexec"
)

// Protocol timing. Each bound says why.
const (
	// ackWait: a delivered job not acked or marked in progress for this long
	// goes to another worker. Heartbeats (every 5 s) mark it in progress, so
	// only a dead worker's unclaimed jobs move; claimed ones are refused by
	// the claim and failed by the reaper.
	ackWait = 30 * time.Second
	// claimTimeout bounds the credential request (one DB write on the API).
	claimTimeout = 10 * time.Second
	// shutdownGrace lets running jobs finish when the worker is stopped
	// before they are cancelled and reported as failed.
	shutdownGrace = 10 * time.Second
	// heartbeatInterval matches jobs.HeartbeatInterval (the API's reaper
	// fails a job after six missed beats).
	heartbeatInterval = 5 * time.Second
)

// DefaultConcurrency is how many jobs a worker runs at once. A job mostly
// waits on its server (an upgrade takes seconds to minutes, the worker's
// part of it milliseconds), so a worker keeps a thousand in flight: a
// fleet-wide run of 1,000 servers is one wave, not sixteen. Each job in
// flight holds about 0.1 MiB of the worker's memory (its SSH connection's
// buffers, a session, its output buffer; docs/benchmarks.md, "Fan-out"),
// which is what bounds it: size it as (memory for jobs) / 0.1 MiB.
const DefaultConcurrency = 1024

// Config configures a worker.
type Config struct {
	Bus         *bus.Bus
	ID          string   // unique per process start; generated when empty
	Segments    []string // default: ["default"]
	Concurrency int      // jobs at a time; default DefaultConcurrency
	Pool        *sshexec.Pool
	Timeouts    sshexec.Timeouts
	Log         *slog.Logger
	// HeartbeatInterval spaces the running jobs' heartbeats; 0 means
	// heartbeatInterval (tests shorten it with the reaper's timeout).
	HeartbeatInterval time.Duration
	// OnPoolDrained runs when the worker's own SSH pool closed its last
	// idle connection (sshexec.PoolConfig.OnDrained).
	OnPoolDrained func()
}

// Worker runs jobs.
type Worker struct {
	cfg  Config
	keys *credbox.KeyPair
	log  *slog.Logger
	sem  chan struct{}
	pool *sshexec.Pool
	own  bool // pool created here

	// running maps the id of each job this worker runs to its cancel
	// function: one subscription to every job's control subject serves
	// them all (control), instead of a subscription per job, which costs
	// a goroutine and an interest change on the NATS server each.
	running sync.Map // job id → *runningJob
	// sharedCtl is set while that subscription is up; without it each job
	// subscribes on its own.
	sharedCtl atomic.Bool

	wg sync.WaitGroup
}

// New returns a worker with a fresh key pair.
func New(cfg Config) (*Worker, error) {
	if cfg.Bus == nil {
		return nil, errors.New("runner: no bus")
	}
	if len(cfg.Segments) == 0 {
		cfg.Segments = []string{domain.DefaultSegment}
	}
	for _, s := range cfg.Segments {
		if !domain.ValidSegment(s) {
			return nil, fmt.Errorf("runner: invalid segment %q (letters, digits, - and _)", s)
		}
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = heartbeatInterval
	}
	if cfg.ID == "" {
		cfg.ID = NewID()
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	keys, err := credbox.NewKeyPair()
	if err != nil {
		return nil, err
	}
	w := &Worker{cfg: cfg, keys: keys, log: cfg.Log.With("worker", cfg.ID), sem: make(chan struct{}, cfg.Concurrency), pool: cfg.Pool}
	if w.pool == nil {
		w.pool, w.own = sshexec.NewPool(sshexec.PoolConfig{OnDrained: cfg.OnPoolDrained}), true
	}
	return w, nil
}

// NewID returns "<hostname>-<random>", unique per start.
func NewID() string {
	host, _ := os.Hostname()
	if host == "" {
		host = "worker"
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return host + "-" + hex.EncodeToString(b)
}

// ID is the worker's id.
func (w *Worker) ID() string { return w.cfg.ID }

// Run consumes the segments' jobs until ctx ends, then waits for running
// jobs (up to a grace period, after which they are cancelled).
func (w *Worker) Run(ctx context.Context) error {
	jobCtx, cancelJobs := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelJobs()
	if stop, err := w.cfg.Bus.Serve(bus.JobControlSubject("*"), "", w.control); err == nil {
		w.sharedCtl.Store(true)
		defer func() { w.sharedCtl.Store(false); stop() }()
	} else {
		w.log.Warn("job control subscription unavailable; each job subscribes on its own", "err", err)
	}
	// Heartbeats run as long as jobs do (through the shutdown grace).
	hbCtx, stopHB := context.WithCancel(jobCtx)
	hbDone := make(chan struct{})
	go func() {
		defer close(hbDone)
		safe.Supervise(hbCtx, "worker heartbeats", func(ctx context.Context) error {
			w.heartbeats(ctx)
			return nil
		})
	}()
	defer func() { stopHB(); <-hbDone }()
	var loops sync.WaitGroup
	for _, seg := range w.cfg.Segments {
		loops.Add(1)
		go func() {
			defer loops.Done()
			safe.Supervise(ctx, "worker consumer "+seg, func(ctx context.Context) error {
				w.consume(ctx, jobCtx, seg)
				return nil
			})
		}()
	}
	w.log.Info("worker started", "segments", w.cfg.Segments, "concurrency", w.cfg.Concurrency)
	<-ctx.Done()
	loops.Wait()
	done := make(chan struct{})
	go func() { w.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(shutdownGrace):
		cancelJobs()
		<-done
	}
	if w.own {
		w.pool.Close()
	}
	w.log.Info("worker stopped")
	return nil
}

func (w *Worker) consume(ctx, jobCtx context.Context, seg string) {
	for ctx.Err() == nil {
		cons, err := w.cfg.Bus.JobConsumer(ctx, seg, ackWait, w.cfg.Concurrency*2)
		if err != nil {
			w.log.Warn("job consumer unavailable, retrying", "segment", seg, "err", err)
			sleepCtx(ctx, time.Second)
			continue
		}
		it, err := cons.Messages(w.cfg.Concurrency)
		if err != nil {
			sleepCtx(ctx, time.Second)
			continue
		}
		stopped := make(chan struct{})
		go func() {
			select {
			case <-ctx.Done():
				it.Stop()
			case <-stopped:
			}
		}()
		w.pull(ctx, jobCtx, seg, it)
		close(stopped)
		it.Stop()
	}
}

func (w *Worker) pull(ctx, jobCtx context.Context, seg string, it *bus.MsgIter) {
	for {
		select {
		case w.sem <- struct{}{}:
		case <-ctx.Done():
			return
		}
		msg, err := it.Next()
		if err != nil {
			<-w.sem
			if ctx.Err() == nil {
				w.log.Warn("job consumer interrupted, reopening", "segment", seg, "err", err)
				sleepCtx(ctx, 500*time.Millisecond)
			}
			return
		}
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			defer func() { <-w.sem }()
			defer safe.Recover("worker job")
			w.handle(jobCtx, seg, msg)
		}()
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// control answers a control request for a job this worker runs; requests
// for other jobs get no answer (the worker running them answers).
func (w *Worker) control(data []byte) []byte {
	var cm bus.ControlMsg
	if json.Unmarshal(data, &cm) != nil || cm.JobID == "" {
		return nil
	}
	v, ok := w.running.Load(cm.JobID)
	if !ok {
		return nil
	}
	if cm.Type == bus.TypeAbort {
		w.log.Info("abort requested", "job_id", cm.JobID, "reason", cm.Reason)
		v.(*runningJob).cancel(fmt.Errorf("%w: %s", errAbortRequested, cm.Reason))
	}
	reply, _ := json.Marshal(bus.ControlMsg{V: bus.MessageVersion, Type: cm.Type, JobID: cm.JobID})
	return reply
}

// errRefused is a claim the API refused: the message must not come back.
var errRefused = errors.New("claim refused")

// claim asks for the job's credentials, which claims the job.
func (w *Worker) claim(ctx context.Context, jm bus.JobMsg, seg string) (credbox.Credentials, error) {
	req, _ := json.Marshal(bus.CredsRequest{V: bus.MessageVersion, Type: bus.TypeCredsReq, JobID: jm.JobID,
		ServerID: jm.ServerID, WorkerID: w.cfg.ID, Segment: seg, PublicKey: w.keys.Public[:]})
	raw, err := w.cfg.Bus.Request(ctx, bus.SubjectCredsRequest, req, claimTimeout)
	if err != nil {
		return credbox.Credentials{}, err
	}
	var rep bus.CredsReply
	if err := json.Unmarshal(raw, &rep); err != nil {
		return credbox.Credentials{}, fmt.Errorf("credential reply: %w", err)
	}
	if !rep.OK {
		if rep.Code == "internal" {
			return credbox.Credentials{}, fmt.Errorf("credentials: %s", rep.Error)
		}
		return credbox.Credentials{}, fmt.Errorf("%w: %s (%s)", errRefused, rep.Error, rep.Code)
	}
	c, err := w.keys.Open(rep.Sealed)
	if err != nil {
		return credbox.Credentials{}, err
	}
	if c.JobID != jm.JobID || c.ServerID != jm.ServerID {
		return credbox.Credentials{}, fmt.Errorf("%w: credentials for another job", errRefused)
	}
	return c, nil
}

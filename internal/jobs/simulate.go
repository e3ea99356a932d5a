package jobs

import (
	"context"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/store"
)

// Simulator decides whether a job is simulated (demo servers) and returns
// what the simulated run does. Simulated jobs never reach a worker, so no
// server is contacted.
type Simulator func(ctx context.Context, job domain.Job) (sim Simulation, simulated bool)

// Simulation is a simulated job's run: its console output, the payload its
// final state carries to the finish hooks (a refresh's encoded facts and
// inventory, as a worker sends it, so the inventory, the counters and the
// traffic light follow), and what changes besides, just before the final
// state (BeforeFinish, may be nil; an error is logged and the job still
// succeeds).
type Simulation struct {
	Output       []string
	Data         []byte
	BeforeFinish func(ctx context.Context) error
}

// simulatedWorker is the worker id simulated jobs report.
const simulatedWorker = "demo-simulator"

// SetSimulator installs the simulator; it may be called while jobs run.
func (s *Service) SetSimulator(f Simulator) { s.simulator.Store(&f) }

// simulate runs a simulated job in-process: started, running, the output
// chunks with short delays, success. It goes through the same store and
// finish-hook path as a worker's events.
func (s *Service) simulate(job domain.Job, sim Simulation, delay time.Duration) {
	chunks := sim.Output
	ctx := context.Background()
	step := func(st domain.JobStatus) bool {
		j, changed, err := s.store.TransitionJob(ctx, job.ID, store.JobUpdate{Status: st, WorkerID: simulatedWorker, At: s.now()})
		if err != nil || !changed {
			return false
		}
		s.announce(j)
		return true
	}
	if !step(domain.JobStarted) || !step(domain.JobRunning) {
		return // aborted before it started
	}
	var off int64
	for i, c := range chunks {
		time.Sleep(delay)
		if cur, err := s.store.JobState(ctx, job.ID); err != nil || cur.Status.Terminal() {
			return // aborted meanwhile
		}
		if err := s.store.AppendOutput(ctx, []store.ChunkIn{{JobID: job.ID,
			OutputChunk: domain.OutputChunk{Seq: int64(i + 1), Offset: off, Data: []byte(c)}}}); err != nil {
			s.log.Error("simulated job: output not stored", "job_id", job.ID, "err", err)
		}
		off += int64(len(c))
	}
	if sim.BeforeFinish != nil {
		if err := sim.BeforeFinish(ctx); err != nil {
			s.log.Error("simulated job: side effects not applied", "job_id", job.ID, "err", err)
		}
	}
	zero := 0
	if _, err := s.finish(ctx, job.ID, store.JobUpdate{Status: domain.JobSuccess, WorkerID: simulatedWorker,
		At: s.now(), ExitCode: &zero, OutputBytes: off, Data: sim.Data}); err != nil {
		s.log.Error("simulated job: not finished", "job_id", job.ID, "err", err)
	}
}

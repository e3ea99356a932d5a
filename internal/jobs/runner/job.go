package runner

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strconv"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/agentgw"
	"github.com/lcmproject/lcm/internal/bus"
	"github.com/lcmproject/lcm/internal/credbox"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/remote"
	"github.com/lcmproject/lcm/internal/safe"
	"github.com/lcmproject/lcm/internal/sshexec"
)

// Sequence numbers of a job's state reports (bus.StateMsg.Seq): the
// ingest never applies one over a later one, whatever order they arrive in.
const (
	seqRunning = 1
	seqFinal   = 2
)

// errAbortRequested is the cancel cause of an abort from the API.
var errAbortRequested = errors.New("aborted on request")

// handle runs one job message to its end.
func (w *Worker) handle(ctx context.Context, seg string, msg bus.Msg) {
	var jm bus.JobMsg
	if err := json.Unmarshal(msg.Data(), &jm); err != nil || jm.V > bus.MessageVersion || jm.JobID == "" {
		w.log.Error("dropping malformed job message", "subject", msg.Subject())
		_ = msg.Term()
		return
	}
	log := w.log.With("job_id", jm.JobID, "server_id", jm.ServerID, "job_name", jm.Kind)
	creds, err := w.claim(ctx, jm, seg)
	if err != nil {
		if errors.Is(err, errRefused) {
			log.Info("job not claimed", "reason", err)
			_ = msg.Term()
			return
		}
		log.Warn("claim failed, job goes back to the queue", "err", err)
		_ = msg.NakWithDelay(2 * time.Second)
		return
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	w.running.Store(jm.JobID, &runningJob{jm: jm, msg: msg, cancel: cancel})
	defer w.running.Delete(jm.JobID)
	if !w.sharedCtl.Load() {
		stopCtl, _ := w.cfg.Bus.Serve(bus.JobControlSubject(jm.JobID), "", w.control)
		if stopCtl != nil {
			defer stopCtl()
		}
	}

	out := newOutput(ctx, w.cfg.Bus, jm.JobID)
	w.announceRunning(jm.JobID)
	var (
		res    actions.Result
		data   []byte
		runErr error
	)
	// A panic while running a job (a parser meeting output it did not
	// expect) fails this job with a clear reason instead of leaving it
	// running with heartbeats; it is logged and counted.
	if safe.Do("worker job "+jm.Kind, func() { res, data, runErr = w.execute(runCtx, jm, creds, out) }) {
		runErr = errors.New("internal error in the worker (logged with its stack); what the job changed on the server is unknown: check it and run the job again")
	}
	creds = credbox.Credentials{} // drop the secrets as soon as the job ran
	_ = out.Close()

	final := bus.StateMsg{JobID: jm.JobID, Seq: seqFinal, Status: string(domain.JobSuccess), OutputBytes: out.Bytes(), Data: data}
	code := res.ExitCode
	final.ExitCode = &code
	if r, err := json.Marshal(res); err == nil {
		final.Result = r
	}
	switch {
	case runErr == nil:
	case errors.Is(context.Cause(runCtx), errAbortRequested):
		final.Status, final.Error = string(domain.JobAborted), context.Cause(runCtx).Error()
	case ctx.Err() != nil:
		final.Status, final.Error = string(domain.JobFailed), "the worker shut down before the job finished"
	default:
		final.Status, final.Error = string(domain.JobFailed), describe(runErr)
		final.Unreachable = unreachable(runErr)
	}
	w.publishState(ctx, final)
	w.markLockDone(ctx, jm)
	_ = msg.Ack()
	log.Info("job done", "status", final.Status, "error", final.Error, "output_bytes", final.OutputBytes)
}

// describe turns an action or transport error into the job history text:
// an action's own reason, or the transport failure in plain words with a
// hint (remote.Explain: "connection refused on port 22 of …: is sshd
// running …?"), which the add-server wizard shows for a failed join.
func describe(err error) string {
	var failed *actions.Failed
	if errors.As(err, &failed) {
		return failed.Reason
	}
	return remote.Explain(err)
}

// unreachable reports whether err means the server could not be reached
// (connection refused or lost, dial or handshake deadline), as opposed to a
// command that ran and failed or timed out.
func unreachable(err error) bool {
	if errors.Is(err, remote.ErrUnreachable) {
		return true
	}
	var re *remote.Error
	return errors.As(err, &re) && re.Kind == remote.ErrTimeout && (re.Op == "dial" || re.Op == "handshake")
}

// execute runs the job's action; a DataAction's payload is returned for
// the final state message.
func (w *Worker) execute(ctx context.Context, jm bus.JobMsg, c credbox.Credentials, out *output) (actions.Result, []byte, error) {
	if h := testJobHook.Load(); h != nil {
		(*h)(jm.Kind)
	}
	act, err := actions.For(domain.JobKind(jm.Kind))
	if err != nil {
		return actions.Result{}, nil, err
	}
	if c.SudoMode == domain.SudoRestricted && domain.BlockedInRestrictedMode(domain.JobKind(jm.Kind)) {
		// The API refuses these at submit; this holds for a job submitted
		// just before the switch to restricted mode.
		return actions.Result{}, nil, &actions.Failed{Reason: "refused: the management user's sudo is restricted on this server; " +
			jm.Kind + " needs full mode"}
	}
	if c.AgentID != "" {
		return w.executeOverAgent(ctx, act, jm, c, out)
	}
	target, err := targetOf(c, c.User, c.PrivateKey, c.Password)
	if err != nil {
		return actions.Result{}, nil, err
	}
	target.Timeouts = w.cfg.Timeouts
	var ex remote.Executor
	if domain.JobKind(jm.Kind) == domain.JobJoin {
		// Bootstrap logins are one-off: never pooled with management ones.
		cl, err := sshexec.Dial(ctx, target)
		if err != nil {
			return actions.Result{}, nil, err
		}
		defer cl.Close()
		ex = cl
	} else {
		ex = w.pool.Executor(jm.ServerID, target)
	}
	env := &actions.Env{Exec: ex, Creds: c, Params: jm.Params, Out: out,
		Dial: func(ctx context.Context, user, key string) (remote.Executor, error) {
			t, err := targetOf(c, user, key, "")
			if err != nil {
				return nil, err
			}
			t.Timeouts = w.cfg.Timeouts
			return sshexec.Dial(ctx, t)
		},
		DialPort: func(ctx context.Context, user, key string, port int) (remote.Executor, error) {
			t, err := targetOf(c, user, key, "")
			if err != nil {
				return nil, err
			}
			host, _, err := net.SplitHostPort(c.Addr)
			if err != nil {
				return nil, err
			}
			t.Addr = net.JoinHostPort(host, strconv.Itoa(port))
			t.Timeouts = w.cfg.Timeouts
			return sshexec.Dial(ctx, t)
		}}
	return runAction(ctx, act, env, domain.JobKind(jm.Kind), c.SudoMode)
}

// runAction runs act. On a server whose stored sudo mode is restricted, a
// job that uses lcm-helper first reads the installed helper back and
// upgrades it when it differs from this worker's (actions.EnsureHelper);
// the helper state (and the proof of an upgrade's round trip) goes into
// the result for the server record.
func runAction(ctx context.Context, act actions.Action, env *actions.Env, kind domain.JobKind, sudoMode string) (actions.Result, []byte, error) {
	var (
		hs  *actions.HelperState
		pr  *actions.SudoProof
		err error
	)
	if sudoMode == domain.SudoRestricted && domain.UsesHelper(kind) {
		if hs, pr, err = actions.EnsureHelper(ctx, env); err != nil {
			return actions.Result{Helper: hs, Sudo: pr}, nil, err
		}
	}
	var (
		res  actions.Result
		data []byte
	)
	if da, ok := act.(actions.DataAction); ok {
		res, data, err = da.RunData(ctx, env)
	} else {
		res, err = act.Run(ctx, env)
	}
	if res.Helper == nil {
		res.Helper = hs
	}
	if res.Sudo == nil {
		res.Sudo = pr
	}
	return res, data, err
}

// executeOverAgent runs the action through the server's lcm-agent: the
// same remote.Executor interface, so every action behaves as over SSH
// (live output, abort through ctx). Actions that log in with another
// key (join, key rotation) have no meaning for an agent server.
func (w *Worker) executeOverAgent(ctx context.Context, act actions.Action, jm bus.JobMsg, c credbox.Credentials, out *output) (actions.Result, []byte, error) {
	switch domain.JobKind(jm.Kind) {
	case domain.JobJoin, domain.JobRotateKey:
		return actions.Result{}, nil, &actions.Failed{Reason: "this job logs in over SSH and does not apply to a server managed through lcm-agent"}
	}
	ex := agentgw.NewExecutor(w.cfg.Bus, c.AgentID)
	defer ex.Close()
	env := &actions.Env{Exec: ex, Creds: c, Params: jm.Params, Out: out,
		// A "fresh connection" to an agent server is its agent again (a
		// reboot waits for it to come back through this).
		Dial: func(context.Context, string, string) (remote.Executor, error) {
			return agentgw.NewExecutor(w.cfg.Bus, c.AgentID), nil
		}}
	return runAction(ctx, act, env, domain.JobKind(jm.Kind), c.SudoMode)
}

func targetOf(c credbox.Credentials, user, key, password string) (sshexec.Target, error) {
	t := sshexec.Target{Addr: c.Addr, User: user, Password: password, HostKey: c.HostKey, CredentialVersion: c.CredVersion}
	if key != "" {
		s, err := ssh.ParsePrivateKey([]byte(key))
		if err != nil {
			return t, &actions.Failed{Reason: "stored private key is unusable: " + err.Error()}
		}
		t.Signer = s
	}
	return t, nil
}

// runningJob is a job this worker runs (Worker.running).
type runningJob struct {
	jm     bus.JobMsg
	msg    bus.Msg
	cancel context.CancelCauseFunc
}

// heartbeats keeps every running job alive until ctx ends: every
// heartbeatInterval each job's queue message is marked in progress, a
// heartbeat event goes to the reaper, and the server lock's TTL is renewed.
// One loop for all jobs: a goroutine per job would be a thousand sleeping
// stacks for jobs that mostly end before their first beat.
func (w *Worker) heartbeats(ctx context.Context) {
	t := time.NewTicker(w.cfg.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		var jobs []*runningJob
		w.running.Range(func(_, v any) bool {
			jobs = append(jobs, v.(*runningJob))
			return true
		})
		for _, j := range jobs {
			safe.Do("worker heartbeat", func() { w.beat(ctx, j) })
		}
	}
}

// beat is one job's heartbeat.
func (w *Worker) beat(ctx context.Context, j *runningJob) {
	_ = j.msg.InProgress()
	hb, _ := json.Marshal(bus.StateMsg{V: bus.MessageVersion, Type: bus.TypeHeartbeat, JobID: j.jm.JobID,
		WorkerID: w.cfg.ID, At: time.Now().UTC()})
	if ack, err := w.cfg.Bus.PublishAsync(bus.JobStateSubject(j.jm.JobID), "", hb); err == nil {
		go func() { <-ack }()
	}
	w.refreshLock(ctx, j.jm)
}

type lockValue struct {
	JobID    string    `json:"job_id"`
	WorkerID string    `json:"worker_id,omitempty"`
	At       time.Time `json:"at"`
	// Done: the worker finished the job and its final state is in the
	// stream; the API releases the lock once it has ingested that state.
	Done bool `json:"done,omitempty"`
}

// markLockDone tells the reaper that this job's final state is published:
// a final state that waits behind an ingest backlog must not be mistaken
// for a vanished worker. The lock bucket's TTL still bounds the wait.
func (w *Worker) markLockDone(ctx context.Context, jm bus.JobMsg) {
	locks, err := w.cfg.Bus.Locks(context.WithoutCancel(ctx))
	if err != nil {
		return
	}
	raw, rev, err := locks.Get(context.WithoutCancel(ctx), jm.ServerID)
	if err != nil {
		return
	}
	var v lockValue
	if json.Unmarshal(raw, &v) != nil || v.JobID != jm.JobID {
		return
	}
	v.WorkerID, v.At, v.Done = w.cfg.ID, time.Now().UTC(), true
	val, _ := json.Marshal(v)
	_, _ = locks.Update(context.WithoutCancel(ctx), jm.ServerID, val, rev)
}

// refreshLock renews the server lock this job holds (never another's).
func (w *Worker) refreshLock(ctx context.Context, jm bus.JobMsg) {
	locks, err := w.cfg.Bus.Locks(ctx)
	if err != nil {
		return
	}
	raw, rev, err := locks.Get(ctx, jm.ServerID)
	if err != nil {
		return
	}
	var v lockValue
	if json.Unmarshal(raw, &v) != nil || v.JobID != jm.JobID {
		return
	}
	v.WorkerID, v.At = w.cfg.ID, time.Now().UTC()
	val, _ := json.Marshal(v)
	_, _ = locks.Update(ctx, jm.ServerID, val, rev)
}

// announceRunning reports "running" without waiting for the stream's ack:
// it is off the dispatch path, and losing it loses nothing (the final state
// follows, and started → success is a valid transition).
func (w *Worker) announceRunning(jobID string) {
	st := bus.StateMsg{V: bus.MessageVersion, Type: bus.TypeState, JobID: jobID, WorkerID: w.cfg.ID, Seq: seqRunning,
		Status: string(domain.JobRunning), At: time.Now().UTC()}
	data, _ := json.Marshal(st)
	if ack, err := w.cfg.Bus.PublishAsync(bus.JobStateSubject(jobID), jobID+"/state/running", data); err == nil {
		go func() { <-ack }()
	}
}

// publishState sends a state change, retrying until the stream has it (a
// final state must never be lost; its msg id de-duplicates retries).
func (w *Worker) publishState(ctx context.Context, st bus.StateMsg) {
	st.V, st.Type, st.WorkerID = bus.MessageVersion, bus.TypeState, w.cfg.ID
	if st.At.IsZero() {
		st.At = time.Now().UTC()
	}
	data, _ := json.Marshal(st)
	id := st.JobID + "/state/" + st.Status
	for {
		err := w.cfg.Bus.Publish(ctx, bus.JobStateSubject(st.JobID), id, data)
		if err == nil || ctx.Err() != nil {
			return
		}
		w.log.Warn("state not published, retrying", "job_id", st.JobID, "status", st.Status, "err", err)
		sleepCtx(ctx, retryDelay)
	}
}

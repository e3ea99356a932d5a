package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/lcmproject/lcm/pkg/agentproto"
)

// killGrace is how long a process group gets between SIGTERM and SIGKILL.
// Why 5 s: enough for apt/dpkg to release their locks on SIGTERM, short
// enough to stay within the Executor's cancel grace (10 s).
const killGrace = 5 * time.Second

// drainAfterExit bounds how long output is still read after the command
// exited. A background child that inherited stdout would otherwise hold the
// result back forever (the same hang an SSH session shows).
const drainAfterExit = 5 * time.Second

// seenTTL is how long a command id is remembered to drop QoS 1 redeliveries.
const seenTTL = 10 * time.Minute

// publishFunc delivers one envelope on one of the agent's channels.
type publishFunc func(ctx context.Context, ch agentproto.Channel, m any) error

// errCancelled is the cause of a cancel requested by the control plane.
var errCancelled = errors.New("cancelled")

// runner executes commands: one goroutine per command, each in its own
// process group so cancel and timeouts kill everything it started.
type runner struct {
	publish publishFunc
	log     *slog.Logger
	isRoot  bool
	sudo    string // path of sudo, "" when absent

	mu      sync.Mutex
	running map[string]context.CancelCauseFunc
	seen    map[string]time.Time
	wg      sync.WaitGroup
}

func newRunner(publish publishFunc, log *slog.Logger) *runner {
	r := &runner{publish: publish, log: log, isRoot: os.Geteuid() == 0,
		running: map[string]context.CancelCauseFunc{}, seen: map[string]time.Time{}}
	if p, err := exec.LookPath("sudo"); err == nil {
		r.sudo = p
	}
	return r
}

// handle takes one message from the cmd topic.
func (r *runner) handle(ctx context.Context, data []byte) {
	m, err := agentproto.Decode(data)
	if err != nil {
		r.log.Warn("ignoring invalid command message", "err", err)
		return
	}
	switch m := m.(type) {
	case *agentproto.Command:
		r.start(ctx, m)
	case *agentproto.Cancel:
		r.mu.Lock()
		cancel := r.running[m.ID]
		r.mu.Unlock()
		if cancel != nil {
			r.log.Info("cancel", "id", m.ID)
			cancel(errCancelled)
		}
	default:
		r.log.Warn("ignoring unexpected message on cmd", "type", m)
	}
}

func (r *runner) start(ctx context.Context, c *agentproto.Command) {
	now := time.Now()
	r.mu.Lock()
	for id, t := range r.seen {
		if now.Sub(t) > seenTTL {
			delete(r.seen, id)
		}
	}
	if _, dup := r.seen[c.ID]; dup {
		r.mu.Unlock()
		return
	}
	r.seen[c.ID] = now
	cctx, cancel := context.WithCancelCause(ctx)
	r.running[c.ID] = cancel
	r.wg.Add(1)
	r.mu.Unlock()
	go func() {
		defer r.wg.Done()
		defer func() {
			r.mu.Lock()
			delete(r.running, c.ID)
			r.mu.Unlock()
			cancel(nil)
		}()
		res := r.exec(cctx, c)
		// The result must get out even when the command was cancelled.
		pctx, pcancel := context.WithTimeout(context.WithoutCancel(ctx), agentproto.LostAfter)
		defer pcancel()
		if err := r.publish(pctx, agentproto.ChannelRes, res); err != nil {
			r.log.Error("result not delivered", "id", c.ID, "err", err)
		}
	}()
}

// count returns the number of running commands.
func (r *runner) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.running)
}

// wait blocks until every command goroutine has ended.
func (r *runner) wait() { r.wg.Wait() }

type chunk struct {
	stream string
	data   []byte
}

// exec runs one command and returns its Result; output and progress are
// published on the way.
func (r *runner) exec(ctx context.Context, c *agentproto.Command) *agentproto.Result {
	start := time.Now()
	res := &agentproto.Result{Header: agentproto.NewHeader(agentproto.TypeResult, c.ID)}
	done := func(code, msg string) *agentproto.Result {
		res.Code, res.Error, res.DurationMS = code, msg, time.Since(start).Milliseconds()
		if code != "" {
			res.ExitCode = -1
		}
		return res
	}
	// Every publish for this command is bounded by LostAfter: past that the
	// control plane has given the command up anyway. After one failed
	// delivery the rest of the output is not attempted (the Result's Chunks
	// tells the receiver it is incomplete), so a lost link cannot stall the
	// command or the agent's shutdown.
	lost := false
	deliver := func(what string, m any) {
		if lost {
			return
		}
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), agentproto.LostAfter)
		defer cancel()
		if err := r.publish(pctx, agentproto.ChannelRes, m); err != nil {
			lost = true
			r.log.Warn(what+" not delivered; output of this command is incomplete", "id", c.ID, "err", err)
		}
	}
	deliver("accepted", &agentproto.Accepted{Header: agentproto.NewHeader(agentproto.TypeAccepted, c.ID)})
	argv := []string{"sh", "-c", c.Cmd}
	if c.Sudo && !r.isRoot {
		if r.sudo == "" {
			return done(agentproto.CodeSudoUnavailable, "sudo requested, but the agent does not run as root and sudo is not installed")
		}
		argv = append([]string{r.sudo, "-n", "--"}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if len(c.Stdin) > 0 {
		cmd.Stdin = bytes.NewReader(c.Stdin)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return done(agentproto.CodeStartFailed, err.Error())
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return done(agentproto.CodeStartFailed, err.Error())
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return done(agentproto.CodeStartFailed, err.Error())
	}
	r.log.Info("command started", "id", c.ID, "pid", cmd.Process.Pid, "sudo", c.Sudo)

	chunks := make(chan chunk)
	var readers sync.WaitGroup
	for _, p := range []struct {
		f      *os.File
		stream string
	}{{outR, agentproto.StreamStdout}, {errR, agentproto.StreamStderr}} {
		readers.Add(1)
		go func() {
			defer readers.Done()
			buf := make([]byte, agentproto.MaxChunkBytes)
			for {
				n, err := p.f.Read(buf)
				if n > 0 {
					chunks <- chunk{p.stream, bytes.Clone(buf[:n])}
				}
				if err != nil {
					return
				}
			}
		}()
	}
	readersDone := make(chan struct{})
	go func() { readers.Wait(); close(readersDone) }()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	var deadline, idle <-chan time.Time
	if c.TimeoutMS > 0 {
		t := time.NewTimer(time.Duration(c.TimeoutMS) * time.Millisecond)
		defer t.Stop()
		deadline = t.C
	}
	idleTimer := time.NewTimer(time.Hour)
	idleTimer.Stop()
	defer idleTimer.Stop()
	idleFor := time.Duration(c.IdleTimeoutMS) * time.Millisecond
	if idleFor > 0 {
		idleTimer.Reset(idleFor)
		idle = idleTimer.C
	}
	progress := time.NewTicker(agentproto.HeartbeatInterval)
	defer progress.Stop()

	var (
		sent, seq int
		truncated bool
		waitErr   error
		exitedYet bool
		stopCode  string
		drain     <-chan time.Time
	)
	send := func(stream string, data []byte) {
		seq++
		deliver("output", &agentproto.Output{Header: agentproto.NewHeader(agentproto.TypeOutput, c.ID), Seq: seq, Stream: stream, Data: data})
	}
	stop := func(code string) {
		if stopCode == "" {
			stopCode = code
			killGroup(cmd.Process.Pid)
		}
	}
	ctxDone := ctx.Done()
	finish := func() *agentproto.Result {
		res.Chunks, res.Truncated = seq, truncated
		if stopCode != "" {
			msg := map[string]string{
				agentproto.CodeTimeout:   "command timed out; process group killed",
				agentproto.CodeIdle:      "no output within the idle timeout; process group killed",
				agentproto.CodeCancelled: "cancelled; process group killed",
			}[stopCode]
			if stopCode == agentproto.CodeCancelled && !errors.Is(context.Cause(ctx), errCancelled) {
				msg = "agent shutting down; process group killed"
			}
			return done(stopCode, msg)
		}
		res.ExitCode = exitCode(waitErr)
		r.log.Info("command finished", "id", c.ID, "exit_code", res.ExitCode)
		return done("", "")
	}
	for {
		select {
		case ch := <-chunks:
			if idleFor > 0 {
				idleTimer.Reset(idleFor)
			}
			if truncated {
				continue // keep draining so the command does not block on a full pipe
			}
			if room := agentproto.MaxOutputBytes - sent; len(ch.data) > room {
				if room > 0 {
					send(ch.stream, ch.data[:room])
				}
				sent = agentproto.MaxOutputBytes
				truncated = true
				send(agentproto.StreamStderr, []byte(agentproto.TruncationNotice))
				continue
			}
			sent += len(ch.data)
			send(ch.stream, ch.data)
		case <-readersDone:
			readersDone = nil
			if exitedYet {
				return finish()
			}
		case waitErr = <-exited:
			exitedYet = true
			if readersDone == nil {
				return finish()
			}
			drain = time.After(drainAfterExit)
		case <-drain:
			// A background child holds the pipes open: stop reading.
			outR.Close()
			errR.Close()
			drain = nil
		case <-deadline:
			stop(agentproto.CodeTimeout)
		case <-idle:
			stop(agentproto.CodeIdle)
		case <-ctxDone:
			ctxDone = nil // closed channels stay ready; stop once
			stop(agentproto.CodeCancelled)
		case <-progress.C:
			deliver("progress", &agentproto.Progress{Header: agentproto.NewHeader(agentproto.TypeProgress, c.ID), ElapsedMS: time.Since(start).Milliseconds()})
		}
	}
}

// exitCode maps a Wait error to a shell-style status (128+signal).
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return -1
}

// killGroup sends SIGTERM to the process group, then SIGKILL after
// killGrace unless the leader has exited by then. Under sudo the leader
// (sudo) relays SIGTERM to the root command it runs.
func killGroup(pid int) {
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	go func() {
		t := time.NewTimer(killGrace)
		defer t.Stop()
		<-t.C
		// Whatever is left in the group (children that ignored SIGTERM).
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}()
}

package sshexec

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/lcmproject/lcm/internal/remote"
)

// Causes that tell the run's own deadlines apart from the caller's cancel.
var (
	errCommandTimeout = errors.New("command timeout")
	errIdleTimeout    = errors.New("no output")
)

// Run runs c as one session on the connection; see remote.Executor.
func (c *Client) Run(ctx context.Context, cmd remote.Command) (remote.Result, error) {
	res, _, err := c.run(ctx, cmd)
	return res, err
}

// run also reports whether the command reached the server: an error with
// started == false (no session, exec refused) is safe to retry elsewhere.
func (c *Client) run(ctx context.Context, cmd remote.Command) (res remote.Result, started bool, err error) {
	start := time.Now()
	defer func() { res.Duration = time.Since(start) }()

	if err := ctx.Err(); err != nil {
		return res, false, classifyCancel(ctx, ctx, c.addr)
	}
	sess, err := c.conn.NewSession()
	if err != nil {
		var refused *ssh.OpenChannelError
		if !errors.As(err, &refused) { // not a refusal: the connection is gone
			c.broken.Store(true)
			_ = c.Close()
		}
		return res, false, remote.Errorf(remote.ErrUnreachable, "session", c.addr, err)
	}
	defer sess.Close()

	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if cmd.Timeout > 0 {
		var cancelT context.CancelFunc
		runCtx, cancelT = context.WithTimeoutCause(runCtx, cmd.Timeout, errCommandTimeout)
		defer cancelT()
	}
	var idle *time.Timer
	if cmd.IdleTimeout > 0 {
		idle = time.AfterFunc(cmd.IdleTimeout, func() { cancel(errIdleTimeout) })
		defer idle.Stop()
	}
	// The output is copied with pooled 8 KiB buffers: x/crypto's own
	// copiers (Session.Stdout/Stderr) take 32 KiB each per session, which
	// a thousand jobs in flight hold as 64 MiB.
	outR, err := sess.StdoutPipe()
	if err != nil {
		return res, false, remote.Errorf(remote.ErrUnreachable, "session", c.addr, err)
	}
	errR, err := sess.StderrPipe()
	if err != nil {
		return res, false, remote.Errorf(remote.ErrUnreachable, "session", c.addr, err)
	}
	stdin, err := sess.StdinPipe()
	if err != nil {
		return res, false, remote.Errorf(remote.ErrUnreachable, "session", c.addr, err)
	}
	if err := sess.Start(wrapCommand(cmd.Cmd, cmd.Sudo, cmd.Stdin != nil)); err != nil {
		return res, false, remote.Errorf(remote.ErrUnreachable, "exec", c.addr, err)
	}
	var copies sync.WaitGroup
	for _, p := range []struct {
		w io.Writer
		r io.Reader
	}{{cmd.Stdout, outR}, {cmd.Stderr, errR}} {
		copies.Go(func() {
			pooledCopy(&activityWriter{w: orDiscard(p.w), idle: idle, d: cmd.IdleTimeout}, p.r)
		})
	}
	// x/crypto's channel does not allow CloseWrite concurrently with Write,
	// so stdin writes and the abort's CloseWrite share a mutex.
	in := &guardedStdin{w: stdin}
	if cmd.Stdin != nil {
		go func() { _ = writeFrames(in, cmd.Stdin) }()
	}
	done := make(chan error, 1)
	go func() {
		err := sess.Wait()
		copies.Wait() // the output ends with the channel's EOF
		done <- err
	}()

	select {
	case werr := <-done:
		return exitResult(res, werr, c.addr)
	case <-runCtx.Done():
	}
	// Abort: EOF on the lifeline makes the remote wrapper kill its process
	// group (works under sudo too); KILL reaches non-sudo processes at once.
	// If a stdin write is blocked (window full), closing the whole session
	// below has the same effect on the lifeline.
	eofSent := in.tryClose()
	_ = sess.Signal(ssh.SIGKILL)
	if !eofSent {
		_ = sess.Close()
	}
	grace := time.NewTimer(abortGrace)
	defer grace.Stop()
	select {
	case <-done:
	case <-grace.C:
		_ = sess.Close()
		<-done // the output copiers end once the channel is closed
	}
	return res, true, classifyCancel(ctx, runCtx, c.addr)
}

// classifyCancel maps why runCtx ended to an error category.
func classifyCancel(parent, runCtx context.Context, addr string) error {
	switch cause := context.Cause(runCtx); {
	case errors.Is(cause, errIdleTimeout):
		return remote.Errorf(remote.ErrIdle, "run", addr, cause)
	case errors.Is(cause, errCommandTimeout):
		return remote.Errorf(remote.ErrTimeout, "run", addr, context.DeadlineExceeded)
	case errors.Is(parent.Err(), context.DeadlineExceeded):
		return remote.Errorf(remote.ErrTimeout, "run", addr, context.Cause(parent))
	default:
		return remote.Errorf(remote.ErrAborted, "run", addr, context.Cause(parent))
	}
}

func exitResult(res remote.Result, err error, addr string) (remote.Result, bool, error) {
	var exitErr *ssh.ExitError
	switch {
	case err == nil:
		return res, true, nil
	case errors.As(err, &exitErr):
		if sig := exitErr.Signal(); sig != "" {
			res.ExitCode = 128 + signalNumbers[sig]
		} else {
			res.ExitCode = exitErr.ExitStatus()
		}
		return res, true, nil
	default: // *ssh.ExitMissingError, io.EOF: the connection went away
		return res, true, remote.Errorf(remote.ErrUnreachable, "run", addr, err)
	}
}

// signalNumbers maps SSH signal names to Linux numbers for 128+n exit codes.
var signalNumbers = map[string]int{
	"HUP": 1, "INT": 2, "QUIT": 3, "ILL": 4, "ABRT": 6, "FPE": 8, "KILL": 9,
	"USR1": 10, "SEGV": 11, "USR2": 12, "PIPE": 13, "ALRM": 14, "TERM": 15,
}

// copyBuffers are the output copy buffers (pooledCopy).
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 8<<10); return &b }}

// pooledCopy copies r to w until EOF with a pooled buffer. A write error
// (a writer that gave up) drains the rest, so the channel never stalls.
func pooledCopy(w io.Writer, r io.Reader) {
	buf := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(buf)
	if _, err := io.CopyBuffer(writerOnly{w}, readerOnly{r}, *buf); err != nil {
		_, _ = io.CopyBuffer(io.Discard, readerOnly{r}, *buf)
	}
}

// writerOnly and readerOnly hide ReadFrom and WriteTo, so io.CopyBuffer
// uses the pooled buffer instead of allocating its own.
type (
	writerOnly struct{ io.Writer }
	readerOnly struct{ io.Reader }
)

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// activityWriter pushes the idle deadline back on every output byte.
type activityWriter struct {
	w    io.Writer
	idle *time.Timer
	d    time.Duration
}

func (a *activityWriter) Write(p []byte) (int, error) {
	if a.idle != nil && len(p) > 0 {
		a.idle.Reset(a.d)
	}
	return a.w.Write(p)
}

// guardedStdin serialises writes to the channel's stdin with its close.
type guardedStdin struct {
	mu     sync.Mutex
	w      io.WriteCloser
	closed bool
}

func (g *guardedStdin) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return 0, io.ErrClosedPipe
	}
	return g.w.Write(p)
}

// tryClose sends EOF unless a Write is in progress; it reports success.
func (g *guardedStdin) tryClose() bool {
	if !g.mu.TryLock() {
		return false
	}
	defer g.mu.Unlock()
	g.closed = true
	return g.w.Close() == nil
}

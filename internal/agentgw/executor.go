package agentgw

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/lcmproject/lcm/internal/remote"
	"github.com/lcmproject/lcm/pkg/agentproto"
)

// Defaults of an Executor.
const (
	// DefaultDispatchTimeout is how long Run waits for the agent's Accepted.
	// Why 15 s: the agent acknowledges before it starts the command, so
	// this is one round trip through two brokers; an agent that is not
	// connected never answers (commands are not queued for offline agents),
	// and a job should say so quickly.
	DefaultDispatchTimeout = 15 * time.Second
	// DefaultCancelGrace is how long Run waits, after sending Cancel, for the
	// agent's Result that confirms the process group is gone. Why 10 s: the
	// agent sends SIGTERM, then SIGKILL after 5 s.
	DefaultCancelGrace = 10 * time.Second
)

// Executor runs commands on one server through its agent: it implements
// remote.Executor over NATS (lcm.agent.<id>.cmd out, lcm.agent.<id>.res
// in), so it works wherever the gateway runs.
type Executor struct {
	bus     Messenger
	agentID string
	// DispatchTimeout, LostAfter and CancelGrace default to
	// DefaultDispatchTimeout, agentproto.LostAfter and DefaultCancelGrace.
	DispatchTimeout time.Duration
	LostAfter       time.Duration
	CancelGrace     time.Duration

	mu     sync.Mutex
	closed bool
}

// NewExecutor returns an Executor for the agent with agentID.
func NewExecutor(b Messenger, agentID string) *Executor {
	return &Executor{bus: b, agentID: agentID, DispatchTimeout: DefaultDispatchTimeout,
		LostAfter: agentproto.LostAfter, CancelGrace: DefaultCancelGrace}
}

// Close makes further Runs fail; an agent connection holds nothing to
// release on this side.
func (e *Executor) Close() error {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	return nil
}

// inbox is an unbounded FIFO filled by the NATS callback, so a slow writer
// on the Run side never makes the bus drop messages.
type inbox struct {
	mu     sync.Mutex
	items  [][]byte
	notify chan struct{}
}

func (q *inbox) push(b []byte) {
	q.mu.Lock()
	q.items = append(q.items, b)
	q.mu.Unlock()
	select {
	case q.notify <- struct{}{}:
	default:
	}
}

func (q *inbox) pop() ([]byte, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) == 0 {
		return nil, false
	}
	b := q.items[0]
	q.items = q.items[1:]
	return b, true
}

// run is the state of one Run.
type run struct {
	e       *Executor
	id      string
	c       remote.Command
	start   time.Time
	q       *inbox
	next    int                        // next Output seq to write
	pending map[int]*agentproto.Output // chunks that arrived early
}

// Run sends the command to the agent and streams its output until the
// Result arrives, ctx ends, a timeout passes or the agent is lost.
func (e *Executor) Run(ctx context.Context, c remote.Command) (remote.Result, error) {
	start := time.Now()
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if closed {
		return remote.Result{}, remote.Errorf(remote.ErrUnreachable, "run", e.agentID, errors.New("executor closed"))
	}
	if !agentproto.ValidAgentID(e.agentID) {
		return remote.Result{}, remote.Errorf(remote.ErrUnreachable, "run", e.agentID, errors.New("invalid agent id"))
	}
	var stdin []byte
	if c.Stdin != nil {
		b, err := io.ReadAll(io.LimitReader(c.Stdin, agentproto.MaxStdinBytes+1))
		if err != nil {
			return remote.Result{}, fmt.Errorf("agentgw: read stdin: %w", err)
		}
		if len(b) > agentproto.MaxStdinBytes {
			return remote.Result{}, fmt.Errorf("agentgw: stdin larger than %d bytes is not supported over the agent", agentproto.MaxStdinBytes)
		}
		stdin = b
	}
	r := &run{e: e, id: agentproto.NewID(), c: c, start: start, next: 1,
		q: &inbox{notify: make(chan struct{}, 1)}, pending: map[int]*agentproto.Output{}}
	unsub, err := e.bus.SubscribeAgent(e.agentID, string(agentproto.ChannelRes), r.q.push)
	if err != nil {
		return remote.Result{}, remote.Errorf(remote.ErrUnreachable, "subscribe", e.agentID, err)
	}
	defer func() { _ = unsub() }()
	cmd := agentproto.Command{Header: agentproto.NewHeader(agentproto.TypeCommand, r.id), Cmd: c.Cmd, Stdin: stdin,
		Sudo: c.Sudo, TimeoutMS: c.Timeout.Milliseconds(), IdleTimeoutMS: c.IdleTimeout.Milliseconds()}
	if err := e.send(&cmd); err != nil {
		return remote.Result{}, remote.Errorf(remote.ErrUnreachable, "dispatch", e.agentID, err)
	}
	return r.wait(ctx)
}

func (e *Executor) send(m any) error {
	b, err := agentproto.Encode(m)
	if err != nil {
		return err
	}
	return e.bus.PublishAgent(e.agentID, string(agentproto.ChannelCmd), b)
}

// wait is Run's event loop:
//
//	sent ──Accepted──► running ──Result──► done
//	  │ DispatchTimeout    │ ctx / Timeout / IdleTimeout / LostAfter
//	  ▼                    ▼
//	unreachable         cancel sent ──Result or CancelGrace──► error
func (r *run) wait(ctx context.Context) (remote.Result, error) {
	e := r.e
	timer := func(d time.Duration) (<-chan time.Time, func()) {
		if d <= 0 {
			return nil, func() {}
		}
		t := time.NewTimer(d)
		return t.C, func() { t.Stop() }
	}
	deadlineC, stopDeadline := timer(r.c.Timeout)
	defer stopDeadline()
	idle := time.NewTimer(time.Hour)
	idle.Stop()
	defer idle.Stop()
	// live is the dispatch timer until Accepted, then the lost-agent timer.
	live := time.NewTimer(e.DispatchTimeout)
	defer live.Stop()
	accepted := false
	for {
		select {
		case <-ctx.Done():
			return r.abort(remote.ErrAborted, "run", ctx.Err())
		case <-deadlineC:
			return r.abort(remote.ErrTimeout, "run", context.DeadlineExceeded)
		case <-idle.C:
			return r.abort(remote.ErrIdle, "run", fmt.Errorf("no output for %s", r.c.IdleTimeout))
		case <-live.C:
			if !accepted {
				return r.abort(remote.ErrUnreachable, "dispatch",
					fmt.Errorf("agent did not accept the command within %s (not connected?)", e.DispatchTimeout))
			}
			return r.abort(remote.ErrUnreachable, "run", fmt.Errorf("no word from the agent for %s", e.LostAfter))
		case <-r.q.notify:
		}
		for {
			b, ok := r.q.pop()
			if !ok {
				break
			}
			m, err := agentproto.Decode(b)
			if err != nil || messageID(m) != r.id {
				continue // another Run's message, or junk
			}
			switch m := m.(type) {
			case *agentproto.Accepted:
				if !accepted && r.c.IdleTimeout > 0 {
					idle.Reset(r.c.IdleTimeout)
				}
			case *agentproto.Output:
				if r.c.IdleTimeout > 0 {
					idle.Reset(r.c.IdleTimeout)
				}
				r.output(m)
			case *agentproto.Result:
				return r.finish(m)
			}
			// Any message about this command proves the agent alive.
			accepted = true
			live.Reset(e.LostAfter)
		}
	}
}

func messageID(m any) string {
	switch m := m.(type) {
	case *agentproto.Accepted:
		return m.ID
	case *agentproto.Output:
		return m.ID
	case *agentproto.Progress:
		return m.ID
	case *agentproto.Result:
		return m.ID
	}
	return ""
}

// output writes chunks in Seq order; early ones wait in pending,
// duplicates (QoS 1 may redeliver) are dropped.
func (r *run) output(m *agentproto.Output) {
	if m.Seq < r.next {
		return
	}
	r.pending[m.Seq] = m
	for {
		o, ok := r.pending[r.next]
		if !ok {
			return
		}
		delete(r.pending, r.next)
		r.next++
		r.write(o)
	}
}

func (r *run) write(o *agentproto.Output) {
	w := r.c.Stdout
	if o.Stream == agentproto.StreamStderr {
		w = r.c.Stderr
	}
	if w != nil {
		_, _ = w.Write(o.Data)
	}
}

// finish maps the agent's Result onto remote's contract. Output chunks
// lost on the way make the run an error: the caller must not parse an
// incomplete output as if it were whole.
func (r *run) finish(m *agentproto.Result) (remote.Result, error) {
	complete := r.next-1 >= m.Chunks
	if !complete {
		for seq := r.next; seq <= m.Chunks; seq++ {
			if o, ok := r.pending[seq]; ok {
				r.write(o)
			}
		}
	}
	res := remote.Result{ExitCode: m.ExitCode, Duration: time.Since(r.start)}
	var kind error
	switch m.Code {
	case "":
		if complete {
			return res, nil
		}
		return remote.Result{}, remote.Errorf(remote.ErrUnreachable, "output", r.e.agentID,
			fmt.Errorf("received %d of %d output chunks", r.next-1, m.Chunks))
	case agentproto.CodeCancelled:
		kind = remote.ErrAborted
	case agentproto.CodeTimeout:
		kind = remote.ErrTimeout
	case agentproto.CodeIdle:
		kind = remote.ErrIdle
	case agentproto.CodeSudoUnavailable:
		kind = remote.ErrAuth
	default:
		kind = remote.ErrUnreachable
	}
	return remote.Result{}, remote.Errorf(kind, "run", r.e.agentID, fmt.Errorf("agent: %s: %s", m.Code, m.Error))
}

// abort sends Cancel and, when the agent was reachable, waits up to
// CancelGrace for its Result, which confirms the process group is gone.
func (r *run) abort(kind error, op string, cause error) (remote.Result, error) {
	err := remote.Errorf(kind, op, r.e.agentID, cause)
	if serr := r.e.send(&agentproto.Cancel{Header: agentproto.NewHeader(agentproto.TypeCancel, r.id)}); serr != nil {
		return remote.Result{}, err
	}
	if errors.Is(kind, remote.ErrUnreachable) {
		return remote.Result{}, err
	}
	grace := time.NewTimer(r.e.CancelGrace)
	defer grace.Stop()
	for {
		select {
		case <-grace.C:
			return remote.Result{}, err
		case <-r.q.notify:
		}
		for {
			b, ok := r.q.pop()
			if !ok {
				break
			}
			if m, derr := agentproto.Decode(b); derr == nil {
				if res, isRes := m.(*agentproto.Result); isRes && res.ID == r.id {
					return remote.Result{}, err
				}
			}
		}
	}
}

var _ remote.Executor = (*Executor)(nil)

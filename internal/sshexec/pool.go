package sshexec

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/lcmproject/lcm/internal/remote"
	"github.com/lcmproject/lcm/internal/safe"
)

// Pool defaults.
const (
	// DefaultMaxConns bounds open connections overall: each costs a file
	// descriptor and ~40 KiB here and a process on the server; 2,048 covers a
	// large fleet's concurrent jobs within a default 4,096-fd limit.
	DefaultMaxConns = 2048
	// DefaultMaxConnsPerServer: one connection carries many sessions, a
	// second absorbs bursts; more only multiplies sshd's ~25 ms of CPU per
	// connection on the managed host.
	DefaultMaxConnsPerServer = 2
	// DefaultMaxSessionsPerConn stays below sshd's MaxSessions default (10):
	// the server frees a slot only after the close round trip, so reusing it
	// at once could otherwise hit "administratively prohibited".
	DefaultMaxSessionsPerConn = 8
	// DefaultIdleTimeout closes a connection unused this long: long enough
	// for the follow-up commands of one job and the next scan to reuse it,
	// short enough not to hold sshd processes on a thousand hosts for hours.
	DefaultIdleTimeout = 90 * time.Second
	// DefaultMaxDials bounds dials and handshakes in flight, apart from the
	// running sessions: a fleet-wide run starting a thousand jobs on a cold
	// pool would otherwise start a thousand key exchanges at once, each
	// slower for the crowd (and nearer its handshake deadline), while
	// sessions on open connections wait behind them for the CPU.
	DefaultMaxDials = 64
)

// PoolConfig bounds a Pool; zero fields take the defaults.
type PoolConfig struct {
	MaxConns           int
	MaxConnsPerServer  int
	MaxSessionsPerConn int
	IdleTimeout        time.Duration
	MaxDials           int
	// OnDrained, when set, runs (in the sweeper) each time the idle
	// sweep closes the last open connection: a process can return the
	// memory a fleet-wide run used to the system then.
	OnDrained func()
}

// Pool keeps SSH connections per server and credential version and
// multiplexes sessions on them. It is safe for concurrent use.
//
// Locking: Pool.mu is the only mutex. It is never held while dialing,
// running a command or waiting; Client uses atomics only, so there is no
// lock order to violate.
type Pool struct {
	cfg PoolConfig

	mu      sync.Mutex
	servers map[string]*serverConns
	total   int           // open + dialing connections
	wake    chan struct{} // closed and replaced when capacity frees
	closed  bool

	stop  chan struct{}
	done  chan struct{}
	dial  func(context.Context, Target) (*Client, error)
	dials chan struct{} // MaxDials slots for dials and handshakes
}

type serverConns struct {
	conns   []*pooledConn
	dialing int // dials in flight, counted in Pool.total
}

type pooledConn struct {
	c        *Client
	version  int64
	active   int
	lastUsed time.Time
	draining bool // Evict: close when idle, never pick
}

// NewPool returns a pool and starts its idle sweeper; Close stops it.
func NewPool(cfg PoolConfig) *Pool {
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	if cfg.MaxConnsPerServer <= 0 {
		cfg.MaxConnsPerServer = DefaultMaxConnsPerServer
	}
	if cfg.MaxSessionsPerConn <= 0 {
		cfg.MaxSessionsPerConn = DefaultMaxSessionsPerConn
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.MaxDials <= 0 {
		cfg.MaxDials = DefaultMaxDials
	}
	p := &Pool{
		cfg:     cfg,
		servers: make(map[string]*serverConns),
		wake:    make(chan struct{}),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
		dial:    Dial,
		dials:   make(chan struct{}, cfg.MaxDials),
	}
	safe.Go("ssh pool sweep", p.sweep)
	return p
}

// Executor returns an executor for one server. It is cheap; connections
// are dialed on first Run and shared by every executor of the same server
// ID and credential version. Its Close does nothing: the pool owns the
// connections.
func (p *Pool) Executor(serverID string, t Target) remote.Executor {
	return &pooledExecutor{p: p, id: serverID, t: t}
}

// Stats is a snapshot of the pool.
type Stats struct {
	Conns    int // open connections
	Sessions int // running sessions
}

// Stats returns current counts, for metrics and tests.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	var s Stats
	for _, sc := range p.servers {
		s.Conns += len(sc.conns)
		for _, pc := range sc.conns {
			s.Sessions += pc.active
		}
	}
	return s
}

// Evict closes the idle connections of a server and marks busy ones to
// close when their sessions end (server deleted, host key re-pinned).
func (p *Pool) Evict(serverID string) {
	var toClose []*Client
	p.mu.Lock()
	if sc := p.servers[serverID]; sc != nil {
		for _, pc := range sc.conns {
			pc.draining = true
		}
		toClose = p.pruneLocked(sc, time.Now())
	}
	p.mu.Unlock()
	closeAll(toClose)
}

// Close closes every connection and stops the sweeper. Runs in flight fail.
func (p *Pool) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	var toClose []*Client
	for id, sc := range p.servers {
		for _, pc := range sc.conns {
			toClose = append(toClose, pc.c)
		}
		delete(p.servers, id)
	}
	p.total = 0
	p.broadcastLocked()
	p.mu.Unlock()
	close(p.stop)
	<-p.done
	closeAll(toClose)
	return nil
}

var errPoolClosed = errors.New("sshexec: pool closed")

// acquire returns a connection with a free session slot, reserving the slot.
func (p *Pool) acquire(ctx context.Context, id string, t Target) (*pooledConn, error) {
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, remote.Errorf(remote.ErrUnreachable, "pool", t.Addr, errPoolClosed)
		}
		sc := p.servers[id]
		if sc == nil {
			sc = &serverConns{}
			p.servers[id] = sc
		}
		toClose := p.pruneLocked(sc, time.Now())
		var pick *pooledConn
		for _, pc := range sc.conns {
			if pc.version == t.CredentialVersion && !pc.draining && !pc.c.Broken() && pc.active < p.cfg.MaxSessionsPerConn {
				pick = pc
				break
			}
		}
		if pick != nil {
			pick.active++
			p.mu.Unlock()
			closeAll(toClose)
			return pick, nil
		}
		// Dial only if no dial for this server is in flight (its sessions
		// will serve the waiters) and the limits allow.
		if sc.dialing == 0 && len(sc.conns) < p.cfg.MaxConnsPerServer {
			if p.total >= p.cfg.MaxConns {
				toClose = append(toClose, p.evictIdleLocked()...)
			}
			if p.total < p.cfg.MaxConns {
				sc.dialing++
				p.total++
				p.mu.Unlock()
				closeAll(toClose)
				return p.dialNew(ctx, id, sc, t)
			}
		}
		wake := p.wake
		p.mu.Unlock()
		closeAll(toClose)
		select {
		case <-wake:
		case <-ctx.Done():
			return nil, classifyCancel(ctx, ctx, t.Addr)
		}
	}
}

func (p *Pool) dialNew(ctx context.Context, id string, sc *serverConns, t Target) (*pooledConn, error) {
	var c *Client
	var err error
	select {
	case p.dials <- struct{}{}:
		c, err = p.dial(ctx, t)
		<-p.dials
	case <-ctx.Done():
		err = classifyCancel(ctx, ctx, t.Addr)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	sc.dialing--
	defer p.broadcastLocked()
	if err != nil {
		p.total--
		return nil, err
	}
	if p.closed {
		p.total--
		go c.Close()
		return nil, remote.Errorf(remote.ErrUnreachable, "pool", t.Addr, errPoolClosed)
	}
	pc := &pooledConn{c: c, version: t.CredentialVersion, active: 1, lastUsed: time.Now()}
	sc.conns = append(sc.conns, pc)
	return pc, nil
}

// release returns a session slot; a broken connection leaves the pool.
func (p *Pool) release(id string, pc *pooledConn) {
	p.mu.Lock()
	pc.active--
	pc.lastUsed = time.Now()
	var toClose []*Client
	if sc := p.servers[id]; sc != nil {
		toClose = p.pruneLocked(sc, pc.lastUsed)
	}
	p.broadcastLocked()
	p.mu.Unlock()
	closeAll(toClose)
}

// pruneLocked removes broken connections, idle ones of an old credential
// version, and idle ones past IdleTimeout; it returns them for closing
// outside the lock.
func (p *Pool) pruneLocked(sc *serverConns, now time.Time) []*Client {
	var out []*Client
	keep := sc.conns[:0]
	newest := int64(-1 << 63)
	for _, pc := range sc.conns {
		newest = max(newest, pc.version)
	}
	for _, pc := range sc.conns {
		stale := pc.active == 0 && (pc.draining || pc.version != newest || now.Sub(pc.lastUsed) > p.cfg.IdleTimeout)
		if pc.c.Broken() || stale {
			out = append(out, pc.c)
			p.total--
			continue
		}
		keep = append(keep, pc)
	}
	clear(sc.conns[len(keep):])
	sc.conns = keep
	if len(out) > 0 {
		p.broadcastLocked()
	}
	return out
}

// evictIdleLocked frees one slot under MaxConns by closing the least
// recently used idle connection of any server.
func (p *Pool) evictIdleLocked() []*Client {
	var lruID string
	var lru *pooledConn
	for id, sc := range p.servers {
		for _, pc := range sc.conns {
			if pc.active == 0 && (lru == nil || pc.lastUsed.Before(lru.lastUsed)) {
				lruID, lru = id, pc
			}
		}
	}
	if lru == nil {
		return nil
	}
	sc := p.servers[lruID]
	for i, pc := range sc.conns {
		if pc == lru {
			sc.conns = append(sc.conns[:i], sc.conns[i+1:]...)
			break
		}
	}
	p.total--
	return []*Client{lru.c}
}

func (p *Pool) broadcastLocked() {
	close(p.wake)
	p.wake = make(chan struct{})
}

// sweep closes idle and broken connections periodically; owned by the Pool.
func (p *Pool) sweep() {
	defer close(p.done)
	// A sixth of the idle timeout: an idle connection lives at most
	// 7/6 × IdleTimeout, and a drained pool is noticed soon after.
	tick := time.NewTicker(p.cfg.IdleTimeout / 6)
	defer tick.Stop()
	for {
		select {
		case <-p.stop:
			return
		case now := <-tick.C:
			var toClose []*Client
			p.mu.Lock()
			for id, sc := range p.servers {
				toClose = append(toClose, p.pruneLocked(sc, now)...)
				if len(sc.conns) == 0 && sc.dialing == 0 {
					delete(p.servers, id) // acquire re-creates it
				}
			}
			drained := len(toClose) > 0 && p.total == 0
			p.mu.Unlock()
			closeAll(toClose)
			if drained && p.cfg.OnDrained != nil {
				p.cfg.OnDrained()
			}
		}
	}
}

func closeAll(cs []*Client) {
	for _, c := range cs {
		_ = c.Close()
	}
}

type pooledExecutor struct {
	p  *Pool
	id string
	t  Target
}

// Run runs c on a pooled connection. If the connection turns out to be
// broken before the command reached the server, it is evicted and the run
// is retried once on a fresh connection.
func (e *pooledExecutor) Run(ctx context.Context, c remote.Command) (remote.Result, error) {
	start := time.Now()
	for attempt := 0; ; attempt++ {
		pc, err := e.p.acquire(ctx, e.id, e.t)
		if err != nil {
			return remote.Result{Duration: time.Since(start)}, err
		}
		res, started, err := pc.c.run(ctx, c)
		e.p.release(e.id, pc)
		if err != nil && !started && attempt == 0 && ctx.Err() == nil {
			continue
		}
		res.Duration = time.Since(start)
		return res, err
	}
}

// Close does nothing; the pool owns the connections.
func (e *pooledExecutor) Close() error { return nil }

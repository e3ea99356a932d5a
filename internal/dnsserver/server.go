package dnsserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"

	"github.com/lcmproject/lcm/internal/safe"
)

// Timeouts and sizes of the listener.
const (
	// ednsUDPSize is the UDP payload size advertised and used as the cap for
	// UDP answers: 1232 bytes avoids IP fragmentation on every common path
	// (DNS Flag Day 2020).
	ednsUDPSize = 1232
	// tcpReadTimeout bounds how long a TCP client may take to send a query,
	// so idle connections cannot pin goroutines.
	tcpReadTimeout = 2 * time.Second
	// tcpIdleTimeout is how long a TCP connection may wait between queries
	// (RFC 7766 recommends seconds, not minutes).
	tcpIdleTimeout = 10 * time.Second
	// tcpWriteTimeout bounds writes, including every message of an AXFR,
	// against clients that stop reading.
	tcpWriteTimeout = 10 * time.Second
	// bindAttempts is how often Start retries when the TCP port picked for
	// an ephemeral UDP port is already taken.
	bindAttempts = 10
)

// Config configures the listener.
type Config struct {
	// Addr is the UDP and TCP listen address, "host:port"; port 0 picks a
	// free port shared by both.
	Addr string
	// AXFRAllow lists the client networks allowed to transfer zones.
	// Empty means nobody.
	AXFRAllow []netip.Prefix
	// Logger receives listener errors; nil uses slog.Default().
	Logger *slog.Logger
}

// Server is the authoritative DNS listener. Its goroutines run between
// Start and Shutdown; the served data is swapped with Swap.
type Server struct {
	cfg  Config
	log  *slog.Logger
	snap atomic.Pointer[Snapshot]

	mu   sync.Mutex
	udp  *dns.Server
	tcp  *dns.Server
	addr string
	done chan struct{} // closed by Shutdown, stops the ctx watcher
}

// New returns a stopped server serving an empty snapshot (every query
// REFUSED) until Swap is called.
func New(cfg Config) *Server {
	s := &Server{cfg: cfg, log: cfg.Logger}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.snap.Store(&Snapshot{zones: map[string]*zone{}})
	return s
}

// Swap makes snap the served data; queries that start afterwards see it.
func (s *Server) Swap(snap *Snapshot) {
	if snap == nil {
		snap = &Snapshot{zones: map[string]*zone{}}
	}
	s.snap.Store(snap)
}

// Addr returns the bound "host:port" (the same port for UDP and TCP), or
// "" before Start.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// Start binds UDP and TCP and serves until Shutdown or until ctx ends. It
// returns once both listeners accept queries.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.udp != nil {
		return errors.New("dnsserver: already started")
	}
	pc, ln, err := listen(s.cfg.Addr)
	if err != nil {
		return err
	}
	// miekg/dns runs every query in its own goroutine and recovers
	// nothing: serveRecovered does.
	h := dns.HandlerFunc(s.serveRecovered)
	s.udp = &dns.Server{PacketConn: pc, Handler: h}
	s.tcp = &dns.Server{Listener: ln, Handler: h, ReadTimeout: tcpReadTimeout, WriteTimeout: tcpWriteTimeout,
		IdleTimeout: func() time.Duration { return tcpIdleTimeout }}
	s.addr = pc.LocalAddr().String()
	s.done = make(chan struct{})

	started := make(chan error, 2)
	for _, srv := range []*dns.Server{s.udp, s.tcp} {
		srv.NotifyStartedFunc = func() { started <- nil }
		go func() {
			defer safe.Recover("dns listener")
			if err := srv.ActivateAndServe(); err != nil {
				s.log.Error("dns listener stopped", "err", err)
				started <- err
			}
		}()
	}
	for range 2 {
		if err := <-started; err != nil {
			_ = pc.Close()
			_ = ln.Close()
			return fmt.Errorf("dnsserver: start: %w", err)
		}
	}
	go func(done chan struct{}) {
		select {
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = s.Shutdown(sctx)
		case <-done:
		}
	}(s.done)
	return nil
}

// listen binds UDP on addr and TCP on the same port; with port 0 it
// retries when the UDP port happens to be taken for TCP.
func listen(addr string) (net.PacketConn, net.Listener, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, nil, fmt.Errorf("dnsserver: address %q: %w", addr, err)
	}
	var lastErr error
	for range bindAttempts {
		pc, err := net.ListenPacket("udp", addr)
		if err != nil {
			return nil, nil, fmt.Errorf("dnsserver: listen udp: %w", err)
		}
		p := strconv.Itoa(pc.LocalAddr().(*net.UDPAddr).Port)
		ln, err := net.Listen("tcp", net.JoinHostPort(host, p))
		if err == nil {
			return pc, ln, nil
		}
		_ = pc.Close()
		lastErr = err
		if port != "0" {
			break
		}
	}
	return nil, nil, fmt.Errorf("dnsserver: listen tcp: %w", lastErr)
}

// Shutdown stops both listeners and waits for in-flight queries until ctx
// ends.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	udp, tcp, done := s.udp, s.tcp, s.done
	s.udp, s.tcp, s.done = nil, nil, nil
	s.mu.Unlock()
	if udp == nil {
		return nil
	}
	close(done)
	return errors.Join(udp.ShutdownContext(ctx), tcp.ShutdownContext(ctx))
}

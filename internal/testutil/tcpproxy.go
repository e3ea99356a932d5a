package testutil

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// ProxyMode is what a TCPProxy does with traffic.
type ProxyMode int

// Proxy modes.
const (
	// ProxyPass forwards both ways.
	ProxyPass ProxyMode = iota
	// ProxyBlackHole accepts connections and forwards nothing in either
	// direction, on new and open connections alike: a server that
	// accepts connections and never answers (a hung database).
	ProxyBlackHole
	// ProxyRefuse closes every open connection and refuses new ones: a
	// server that is down.
	ProxyRefuse
)

// TCPProxy sits between a client and a server (PostgreSQL in the fault
// tests) and can switch between passing, black-holing and refusing.
type TCPProxy struct {
	t      testing.TB
	target string
	addr   string

	mu    sync.Mutex
	mode  ProxyMode
	ln    net.Listener
	conns map[net.Conn]bool
	// wake is closed (and replaced) when the mode changes, so stalled
	// copies look again.
	wake   chan struct{}
	closed bool
}

// StartTCPProxy listens on a free loopback port and forwards to target.
func StartTCPProxy(t testing.TB, target string) *TCPProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &TCPProxy{t: t, target: target, addr: ln.Addr().String(), conns: map[net.Conn]bool{}, wake: make(chan struct{})}
	p.ln = ln
	go p.accept(ln)
	t.Cleanup(p.Close)
	return p
}

// Addr is the proxy's host:port.
func (p *TCPProxy) Addr() string { return p.addr }

// Mode returns the current mode.
func (p *TCPProxy) Mode() ProxyMode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode
}

// SetMode switches the mode. Refuse closes the listener and every open
// connection; leaving Refuse listens again on the same address.
func (p *TCPProxy) SetMode(m ProxyMode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || m == p.mode {
		return
	}
	prev := p.mode
	p.mode = m
	close(p.wake)
	p.wake = make(chan struct{})
	switch {
	case m == ProxyRefuse:
		if p.ln != nil {
			p.ln.Close()
			p.ln = nil
		}
		p.closeConnsLocked()
	case prev == ProxyRefuse:
		var ln net.Listener
		var err error
		for i := 0; i < 50; i++ { // the port may linger for a moment
			if ln, err = net.Listen("tcp", p.addr); err == nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err != nil {
			p.t.Errorf("proxy: listen again on %s: %v", p.addr, err)
			return
		}
		p.ln = ln
		go p.accept(ln)
	}
}

// Close stops the proxy and closes every connection.
func (p *TCPProxy) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	if p.ln != nil {
		p.ln.Close()
	}
	p.closeConnsLocked()
	close(p.wake)
}

func (p *TCPProxy) closeConnsLocked() {
	for c := range p.conns {
		c.Close()
	}
	p.conns = map[net.Conn]bool{}
}

func (p *TCPProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.mode == ProxyRefuse {
		c.Close()
		return false
	}
	p.conns[c] = true
	return true
}

func (p *TCPProxy) accept(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			continue
		}
		go p.serve(c)
	}
}

// serve dials the target once the mode lets traffic through (a
// black-holed connection never reaches the server, like a SYN the network
// swallowed after the accept) and copies both ways.
func (p *TCPProxy) serve(c net.Conn) {
	if !p.waitPass() {
		c.Close()
		return
	}
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	if !p.track(s) {
		c.Close()
		return
	}
	done := make(chan struct{}, 2)
	go func() { p.copy(s, c); done <- struct{}{} }()
	go func() { p.copy(c, s); done <- struct{}{} }()
	<-done
	c.Close()
	s.Close()
	<-done
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, s)
	p.mu.Unlock()
}

// waitPass blocks while the proxy black-holes; false when it refuses or
// is closed.
func (p *TCPProxy) waitPass() bool {
	for {
		p.mu.Lock()
		mode, wake, closed := p.mode, p.wake, p.closed
		p.mu.Unlock()
		switch {
		case closed || mode == ProxyRefuse:
			return false
		case mode == ProxyPass:
			return true
		}
		<-wake
	}
}

// copy forwards src to dst, holding every chunk while the proxy
// black-holes (the bytes are delivered if it passes again).
func (p *TCPProxy) copy(dst io.Writer, src io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.waitPass() {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

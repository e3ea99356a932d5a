// Package fleetsim simulates a fleet of Debian hosts as in-process SSH
// servers (x/crypto/ssh), one loopback listener per instance, for
// benchmarks, load tests and demos. It is never a substitute for the real
// test hosts: it answers the command shapes LCM sends from a pluggable
// responder table (see Table), with configurable latency, output volume and
// failure rate, and a deterministic host key per instance so LCM can pin it.
package fleetsim

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"
)

// handshakeTimeout drops clients that connect but never finish the SSH
// handshake, so a misbehaving load generator cannot pin goroutines forever.
const handshakeTimeout = 30 * time.Second

// Config describes a simulated fleet.
type Config struct {
	N        int    // number of instances
	Listen   string // IP to listen on; default 127.0.0.1
	BasePort int    // instance i listens on BasePort+i; 0 picks free ports
	// Latency is how long each command takes (apt-like output is spread
	// over it); `sleep N` takes N instead.
	Latency time.Duration
	// OutputBytes is the size of apt-like console output per apt command.
	OutputBytes int
	// FailRate in [0,1] is the chance that an apt command fails with exit
	// code 100 and an apt-like error.
	FailRate float64
	// Packages is how many packages dpkg-query lists; default 400.
	Packages int
	// Seed derives the host keys and the failure dice; the same seed gives
	// the same keys.
	Seed int64
	// AuthorizedKey, when set, is the only client key accepted; otherwise
	// any key, password or none is.
	AuthorizedKey ssh.PublicKey
	// Responders answers commands; nil uses DefaultTable().
	Responders *Table
	// OnExec, when set, is called as each exec request arrives, before the
	// responder runs (benchmarks time dispatch with it).
	OnExec func(inst *Instance, cmd string)
	// Pristine hosts start like a fresh Debian install: the management
	// user (ManagementUser) does not exist and has no sudo rule until LCM's
	// join script creates them, and it then logs in only with the key the
	// join installed. Other users (the bootstrap login) are accepted with
	// any key or password unless AuthorizedKey is set. Without Pristine
	// every host looks already joined (the default for load tests that
	// add servers straight to the store).
	Pristine bool
	// RebootDowntime is how long a host refuses SSH after a reboot takes
	// effect (default 2 s).
	RebootDowntime time.Duration
}

// Instance is one simulated host.
type Instance struct {
	Index       int
	Hostname    string
	Addr        string // ip:port
	HostKey     ssh.PublicKey
	Fingerprint string // SHA256:…

	fleet  *Fleet
	ln     net.Listener
	config *ssh.ServerConfig
	execs  atomic.Int64

	mu    sync.Mutex
	state hostState
}

// AuthorizedHostKey is the instance's host key as an authorized_keys line,
// the form sshexec.Target.HostKey pins.
func (i *Instance) AuthorizedHostKey() string {
	return string(ssh.MarshalAuthorizedKey(i.HostKey)[:len(ssh.MarshalAuthorizedKey(i.HostKey))-1])
}

// Execs is how many exec requests the instance received.
func (i *Instance) Execs() int64 { return i.execs.Load() }

// Fleet is a running set of instances.
type Fleet struct {
	Instances []*Instance
	cfg       Config
	table     *Table

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]*Instance
	dials  atomic.Int64
}

// HostSigner returns the deterministic host key of instance idx for seed.
func HostSigner(seed int64, idx int) ssh.Signer {
	sum := sha256.Sum256([]byte(fmt.Sprintf("fleetsim/%d/%d", seed, idx)))
	signer, err := ssh.NewSignerFromSigner(ed25519.NewKeyFromSeed(sum[:]))
	if err != nil {
		panic(err) // ed25519 keys always convert
	}
	return signer
}

// Start listens for all instances and serves them until Close.
func Start(cfg Config) (*Fleet, error) {
	if cfg.N <= 0 {
		return nil, errors.New("fleetsim: N must be positive")
	}
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1"
	}
	if cfg.Packages <= 0 {
		cfg.Packages = 400
	}
	f := &Fleet{cfg: cfg, table: cfg.Responders, conns: make(map[net.Conn]*Instance)}
	if f.table == nil {
		f.table = DefaultTable()
	}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	for i := 0; i < cfg.N; i++ {
		port := 0
		if cfg.BasePort > 0 {
			port = cfg.BasePort + i
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(cfg.Listen, strconv.Itoa(port)))
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("fleetsim: instance %d: %w", i, err)
		}
		signer := HostSigner(cfg.Seed, i)
		inst := &Instance{
			Index: i, Hostname: fmt.Sprintf("sim-%04d", i), Addr: ln.Addr().String(),
			HostKey: signer.PublicKey(), Fingerprint: ssh.FingerprintSHA256(signer.PublicKey()),
			fleet: f, ln: ln,
		}
		inst.state = newHostState(cfg.Pristine)
		inst.config = f.serverConfig(inst, signer)
		f.Instances = append(f.Instances, inst)
		f.wg.Add(1)
		go inst.accept()
	}
	return f, nil
}

// Dials is the number of TCP connections accepted across the fleet.
func (f *Fleet) Dials() int64 { return f.dials.Load() }

// DropConnections closes every open client connection (to simulate a dead
// link or a restarted sshd) without stopping the listeners.
func (f *Fleet) DropConnections() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for c := range f.conns {
		c.Close()
	}
}

// dropInstance closes the open connections of one instance (a reboot).
func (f *Fleet) dropInstance(inst *Instance) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for c, owner := range f.conns {
		if owner == inst {
			c.Close()
		}
	}
}

// Close stops all instances and waits for their goroutines.
func (f *Fleet) Close() error {
	f.cancel()
	for _, inst := range f.Instances {
		if inst.ln != nil { // nil for Hosts
			inst.ln.Close()
		}
	}
	f.DropConnections()
	f.wg.Wait()
	return nil
}

func (f *Fleet) serverConfig(inst *Instance, signer ssh.Signer) *ssh.ServerConfig {
	c := &ssh.ServerConfig{}
	if f.cfg.Pristine {
		want := f.cfg.AuthorizedKey
		c.PublicKeyCallback = func(m ssh.ConnMetadata, k ssh.PublicKey) (*ssh.Permissions, error) {
			if inst.managedUser(m.User()) {
				if inst.keyAuthorized(m.User(), k) {
					return nil, nil
				}
				return nil, errors.New("fleetsim: key not in the user's authorized_keys")
			}
			if want == nil || string(k.Marshal()) == string(want.Marshal()) {
				return nil, nil
			}
			return nil, errors.New("fleetsim: key not authorized")
		}
		if want == nil {
			// Bootstrap logins need no credential at all ("none"), as on the
			// non-pristine hosts; the management user always needs its key.
			c.NoClientAuth = true
			c.NoClientAuthCallback = func(m ssh.ConnMetadata) (*ssh.Permissions, error) {
				if inst.managedUser(m.User()) {
					return nil, errors.New("fleetsim: the management user needs its key")
				}
				return nil, nil
			}
			c.PasswordCallback = func(m ssh.ConnMetadata, _ []byte) (*ssh.Permissions, error) {
				if inst.managedUser(m.User()) {
					return nil, errors.New("fleetsim: the management user has no password")
				}
				return nil, nil
			}
		}
	} else if f.cfg.AuthorizedKey != nil {
		want := f.cfg.AuthorizedKey.Marshal()
		c.PublicKeyCallback = func(_ ssh.ConnMetadata, k ssh.PublicKey) (*ssh.Permissions, error) {
			if string(k.Marshal()) == string(want) {
				return nil, nil
			}
			return nil, errors.New("fleetsim: key not authorized")
		}
	} else {
		c.NoClientAuth = true
		c.PublicKeyCallback = func(ssh.ConnMetadata, ssh.PublicKey) (*ssh.Permissions, error) { return nil, nil }
		c.PasswordCallback = func(ssh.ConnMetadata, []byte) (*ssh.Permissions, error) { return nil, nil }
	}
	c.AddHostKey(signer)
	return c
}

func (i *Instance) accept() {
	defer i.fleet.wg.Done()
	for {
		conn, err := i.ln.Accept()
		if err != nil {
			return
		}
		f := i.fleet
		if i.down() {
			conn.Close() // rebooting: the port refuses
			continue
		}
		f.mu.Lock()
		f.conns[conn] = i
		f.mu.Unlock()
		f.dials.Add(1)
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			i.serveConn(conn)
			f.mu.Lock()
			delete(f.conns, conn)
			f.mu.Unlock()
		}()
	}
}

func (i *Instance) serveConn(conn net.Conn) {
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(handshakeTimeout))
	sc, chans, reqs, err := ssh.NewServerConn(conn, i.config)
	if err != nil {
		return
	}
	_ = conn.SetDeadline(time.Time{})
	defer sc.Close()
	go ssh.DiscardRequests(reqs) // replies false: keepalive@openssh.com works
	var wg sync.WaitGroup
	defer wg.Wait()
	for nc := range chans {
		if nc.ChannelType() != "session" {
			_ = nc.Reject(ssh.UnknownChannelType, "only sessions")
			continue
		}
		ch, creqs, err := nc.Accept()
		if err != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			i.serveSession(ch, creqs, sc.User())
		}()
	}
}

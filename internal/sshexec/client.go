package sshexec

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/lcmproject/lcm/internal/metrics"
	"github.com/lcmproject/lcm/internal/remote"
	"github.com/lcmproject/lcm/internal/safe"
)

// Client is one authenticated SSH connection to one server. It implements
// remote.Executor; concurrent Runs share the connection as separate
// sessions. Use Pool to bound and reuse connections.
type Client struct {
	addr      string
	conn      *ssh.Client
	broken    atomic.Bool
	closeOnce sync.Once
	closed    chan struct{}
}

var _ remote.Executor = (*Client)(nil)

// Dial connects to t.Addr, checks the host key against the pin and
// authenticates. Errors unwrap to remote.ErrUnreachable (TCP dial),
// remote.ErrTimeout (handshake deadline), remote.ErrHostKeyMismatch,
// remote.ErrAuth or remote.ErrAborted (ctx cancelled).
func Dial(ctx context.Context, t Target) (*Client, error) {
	pin, err := parsePin(t.HostKey)
	if err != nil {
		return nil, err
	}
	to := t.Timeouts.withDefaults()
	var auth []ssh.AuthMethod
	if t.Signer != nil {
		auth = append(auth, ssh.PublicKeys(t.Signer))
	}
	if t.Password != "" {
		pw := t.Password
		auth = append(auth, ssh.Password(pw), ssh.KeyboardInteractive(
			func(_, _ string, questions []string, _ []bool) ([]string, error) {
				answers := make([]string, len(questions))
				for i := range answers {
					answers[i] = pw
				}
				return answers, nil
			}))
	}
	var mismatch *remote.HostKeyMismatchError
	cfg := &ssh.ClientConfig{
		User: t.User,
		Auth: auth,
		HostKeyCallback: func(_ string, _ net.Addr, key ssh.PublicKey) error {
			if pin.matches(key) {
				return nil
			}
			mismatch = &remote.HostKeyMismatchError{Addr: t.Addr, Expected: pin.fingerprint, Got: ssh.FingerprintSHA256(key)}
			return mismatch
		},
		HostKeyAlgorithms: pin.hostKeyAlgorithms(),
		Config:            ssh.Config{KeyExchanges: kexAlgorithms},
		Timeout:           to.Dial,
	}
	conn, err := dialTCP(ctx, t.Addr, to.Dial)
	if err != nil {
		metrics.SSHErrors.WithLabelValues("dial").Inc()
		return nil, err
	}
	sc, chans, reqs, err := handshake(ctx, conn, t.Addr, cfg, to.Handshake)
	if err != nil {
		metrics.SSHErrors.WithLabelValues("handshake").Inc()
		conn.Close()
		if mismatch != nil {
			return nil, mismatch
		}
		return nil, err
	}
	c := &Client{addr: t.Addr, conn: ssh.NewClient(sc, chans, reqs), closed: make(chan struct{})}
	safe.Go("ssh connection watch", c.watch)
	if to.KeepaliveInterval > 0 {
		safe.Go("ssh keepalive", func() { c.keepalive(to.KeepaliveInterval, to.KeepaliveTimeout) })
	}
	return c, nil
}

func dialTCP(ctx context.Context, addr string, timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		if ctxErr := ctx.Err(); errors.Is(ctxErr, context.Canceled) {
			return nil, remote.Errorf(remote.ErrAborted, "dial", addr, context.Cause(ctx))
		}
		return nil, remote.Errorf(remote.ErrUnreachable, "dial", addr, err)
	}
	return conn, nil
}

// handshake runs the SSH handshake under a deadline on the raw connection
// (ClientConfig.Timeout covers only the TCP dial) and under ctx.
func handshake(ctx context.Context, conn net.Conn, addr string, cfg *ssh.ClientConfig, timeout time.Duration) (ssh.Conn, <-chan ssh.NewChannel, <-chan *ssh.Request, error) {
	_ = conn.SetDeadline(time.Now().Add(timeout))
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	sc, chans, reqs, err := ssh.NewClientConn(conn, addr, cfg)
	stopped := stop()
	if err != nil {
		switch {
		case !stopped && errors.Is(ctx.Err(), context.Canceled):
			return nil, nil, nil, remote.Errorf(remote.ErrAborted, "handshake", addr, context.Cause(ctx))
		case !stopped:
			return nil, nil, nil, remote.Errorf(remote.ErrTimeout, "handshake", addr, ctx.Err())
		case isTimeout(err):
			return nil, nil, nil, remote.Errorf(remote.ErrTimeout, "handshake", addr, err)
		case strings.Contains(err.Error(), "unable to authenticate"):
			// x/crypto/ssh has no typed client auth error; this message is
			// its documented-by-tests wording.
			return nil, nil, nil, remote.Errorf(remote.ErrAuth, "handshake", addr, err)
		default:
			return nil, nil, nil, remote.Errorf(remote.ErrUnreachable, "handshake", addr, err)
		}
	}
	_ = conn.SetDeadline(time.Time{})
	return sc, chans, reqs, nil
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// watch marks the client broken as soon as the connection ends.
func (c *Client) watch() {
	_ = c.conn.Wait()
	c.broken.Store(true)
	c.Close()
}

// keepalive probes the connection; a failed or late reply closes it so that
// its sessions fail fast and the pool redials.
func (c *Client) keepalive(interval, timeout time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-c.closed:
			return
		case <-tick.C:
		}
		replied := make(chan error, 1)
		go func() {
			_, _, err := c.conn.SendRequest("keepalive@openssh.com", true, nil)
			replied <- err
		}()
		timer := time.NewTimer(timeout)
		select {
		case err := <-replied:
			timer.Stop()
			if err != nil {
				c.broken.Store(true)
				c.Close()
				return
			}
		case <-timer.C:
			c.broken.Store(true)
			c.Close()
			return
		case <-c.closed:
			timer.Stop()
			return
		}
	}
}

// Broken reports whether the connection has died or failed a keepalive.
func (c *Client) Broken() bool { return c.broken.Load() }

// Close closes the connection; running sessions fail.
func (c *Client) Close() error {
	var err error
	c.closeOnce.Do(func() {
		close(c.closed)
		err = c.conn.Close()
	})
	return err
}

// errProbed aborts the handshake once Probe has the host key.
var errProbed = errors.New("sshexec: probe done")

// Probe connects to addr, captures the host key the server presents and
// aborts the handshake before authenticating, for the join wizard where the
// operator confirms the fingerprint. It returns the key and its SHA256
// fingerprint ("SHA256:…"); pin the key with AuthorizedKey(key).
func Probe(ctx context.Context, addr string) (ssh.PublicKey, string, error) {
	return probe(ctx, addr, nil)
}

// ProbeAll returns every host key addr offers among the common types
// (ed25519, ECDSA, RSA), one handshake per type; types the server lacks are
// skipped. Keys come in that order.
func ProbeAll(ctx context.Context, addr string) ([]ssh.PublicKey, error) {
	var keys []ssh.PublicKey
	for _, algos := range [][]string{
		{ssh.KeyAlgoED25519},
		{ssh.KeyAlgoECDSA256, ssh.KeyAlgoECDSA384, ssh.KeyAlgoECDSA521},
		{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256},
	} {
		k, _, err := probe(ctx, addr, algos)
		if err != nil {
			if errors.Is(err, remote.ErrUnreachable) {
				continue // no common algorithm: the host lacks this key type
			}
			return keys, err
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, remote.Errorf(remote.ErrUnreachable, "probe", addr, errors.New("no host key offered"))
	}
	return keys, nil
}

func probe(ctx context.Context, addr string, algos []string) (ssh.PublicKey, string, error) {
	var got ssh.PublicKey
	cfg := &ssh.ClientConfig{
		User: "lcm-probe",
		HostKeyCallback: func(_ string, _ net.Addr, key ssh.PublicKey) error {
			got = key
			return errProbed
		},
		HostKeyAlgorithms: algos,
		Config:            ssh.Config{KeyExchanges: kexAlgorithms},
	}
	conn, err := dialTCP(ctx, addr, DefaultDialTimeout)
	if err != nil {
		return nil, "", err
	}
	defer conn.Close()
	sc, _, _, err := handshake(ctx, conn, addr, cfg, DefaultHandshakeTimeout)
	if got != nil {
		return got, ssh.FingerprintSHA256(got), nil
	}
	if err == nil {
		sc.Close()
		return nil, "", remote.Errorf(remote.ErrUnreachable, "probe", addr, errors.New("handshake finished without a host key"))
	}
	return nil, "", err
}

package sshexec

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
)

// Default deadlines. Each bounds one step, so a stuck host is reported by
// the step that stuck.
const (
	// DefaultDialTimeout bounds the TCP connect. A reachable host on a LAN or
	// WAN answers a SYN in well under a second; 10 s tolerates slow links and
	// SYN retransmits (the first one is at 1 s) without holding a worker long.
	DefaultDialTimeout = 10 * time.Second
	// DefaultHandshakeTimeout bounds version exchange, key exchange and user
	// authentication. sshd spends ~20–30 ms of CPU per connection; 15 s
	// covers a loaded host and slow PAM/DNS lookups (UseDNS) while catching a
	// listener that accepts but never speaks, which the dial timeout cannot.
	DefaultHandshakeTimeout = 15 * time.Second
	// DefaultKeepaliveInterval is how often an open connection is probed
	// with keepalive@openssh.com. 15 s finds a dead pooled connection before
	// the next job usually needs it and costs one tiny packet.
	DefaultKeepaliveInterval = 15 * time.Second
	// DefaultKeepaliveTimeout is how long a keepalive reply may take before
	// the connection is declared dead and closed, failing its sessions
	// instead of letting them hang on a vanished peer.
	DefaultKeepaliveTimeout = 10 * time.Second
)

// abortGrace is how long Run waits, after closing stdin and signalling KILL,
// for sshd to report the command's end before it closes the session anyway:
// long enough for the remote wrapper to kill its process group (a few ms),
// short enough that an abort returns promptly on a dead link.
const abortGrace = 2 * time.Second

// Timeouts are the per-connection deadlines; zero fields take the defaults.
type Timeouts struct {
	Dial              time.Duration
	Handshake         time.Duration
	KeepaliveInterval time.Duration // negative disables keepalives
	KeepaliveTimeout  time.Duration
}

func (t Timeouts) withDefaults() Timeouts {
	if t.Dial <= 0 {
		t.Dial = DefaultDialTimeout
	}
	if t.Handshake <= 0 {
		t.Handshake = DefaultHandshakeTimeout
	}
	if t.KeepaliveInterval == 0 {
		t.KeepaliveInterval = DefaultKeepaliveInterval
	}
	if t.KeepaliveTimeout <= 0 {
		t.KeepaliveTimeout = DefaultKeepaliveTimeout
	}
	return t
}

// Target says how to reach and authenticate to one server.
type Target struct {
	Addr     string // host:port
	User     string
	Signer   ssh.Signer // public-key auth; used first when set
	Password string     // password auth; used when set
	// HostKey is the pinned host key: an authorized_keys line
	// ("ssh-ed25519 AAAA… comment") or a fingerprint ("SHA256:…"). Required:
	// Dial never connects without a pin. A full key also restricts the host
	// key algorithms to its type, so a host with several keys shows the
	// pinned one.
	HostKey string
	// CredentialVersion changes when the server's credentials change; Pool
	// never reuses a connection made with another version.
	CredentialVersion int64
	Timeouts          Timeouts
}

// kexAlgorithms prefers curve25519: the post-quantum default
// (mlkem768x25519) costs ~90 ms of client CPU per connection on our hosts,
// curve25519 0–10 ms. All entries are considered secure; the hybrid PQ kex
// stays available, listed after the classic ones.
var kexAlgorithms = []string{
	ssh.KeyExchangeCurve25519,
	ssh.KeyExchangeECDHP256,
	ssh.KeyExchangeECDHP384,
	ssh.KeyExchangeECDHP521,
	ssh.KeyExchangeMLKEM768X25519,
	ssh.KeyExchangeDH16SHA512,
	ssh.KeyExchangeDH14SHA256,
}

// hostKeyPin is a parsed Target.HostKey.
type hostKeyPin struct {
	key         ssh.PublicKey // nil when only a fingerprint is pinned
	fingerprint string
}

func parsePin(s string) (hostKeyPin, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return hostKeyPin{}, errors.New("sshexec: no pinned host key")
	}
	if strings.HasPrefix(s, "SHA256:") {
		return hostKeyPin{fingerprint: s}, nil
	}
	key, _, _, _, err := ssh.ParseAuthorizedKey([]byte(s))
	if err != nil {
		return hostKeyPin{}, fmt.Errorf("sshexec: parse pinned host key: %w", err)
	}
	return hostKeyPin{key: key, fingerprint: ssh.FingerprintSHA256(key)}, nil
}

func (p hostKeyPin) matches(k ssh.PublicKey) bool {
	if p.key != nil {
		return bytes.Equal(p.key.Marshal(), k.Marshal())
	}
	return ssh.FingerprintSHA256(k) == p.fingerprint
}

// hostKeyAlgorithms returns the signature algorithms for the pinned key's
// type, or nil (x/crypto defaults) for a fingerprint pin.
func (p hostKeyPin) hostKeyAlgorithms() []string {
	if p.key == nil {
		return nil
	}
	switch t := p.key.Type(); t {
	case ssh.KeyAlgoRSA:
		return []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}
	default:
		return []string{t}
	}
}

// AuthorizedKey formats a public key as a one-line authorized_keys entry,
// the form Target.HostKey pins.
func AuthorizedKey(k ssh.PublicKey) string {
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k)))
}

package auth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/lcmproject/lcm/internal/bus"
)

// epochKey is the key of the cluster auth epoch in bus.BucketAuth.
const epochKey = "epoch"

// EpochRefresh is how often a replica renews the epoch. Why 30 s: the
// bucket's TTL is 2 minutes, so three refreshes may fail before the epoch
// lapses, and a lapsed epoch (every replica gone) ends all sessions within
// 2 minutes, as the spec's "every start ends all sessions" asks.
const EpochRefresh = 30 * time.Second

// keys are the keys derived from jwt_secret and one epoch nonce.
type keys struct {
	nonce   string
	session []byte // HS256 key of session tokens
	twoFA   []byte // HS256 key of 2FA login challenges
	csrf    []byte // HMAC key of CSRF tokens
}

func deriveKeys(secret []byte, nonce string) *keys {
	d := func(purpose string) []byte {
		m := hmac.New(sha256.New, secret)
		m.Write([]byte(purpose))
		m.Write([]byte{0})
		m.Write([]byte(nonce))
		return m.Sum(nil)
	}
	return &keys{nonce: nonce, session: d("lcm-session-v1"), twoFA: d("lcm-2fa-challenge-v1"), csrf: d("lcm-csrf-v1")}
}

// Epoch holds the signing keys: HMAC(jwt_secret, epoch nonce). In the
// all-in-one mode (embedded NATS) every start draws a fresh nonce, so every
// restart ends all sessions. With an external NATS the nonce is a cluster
// epoch in bus.BucketAuth: the first replica creates it, every replica
// renews it every EpochRefresh, and it lapses with the bucket TTL when all
// replicas are gone. Only the nonce is in NATS; it is useless without
// jwt_secret.
type Epoch struct {
	secret []byte
	kv     *bus.CAS
	cur    atomic.Pointer[keys]
	log    *slog.Logger
}

// NewEpoch joins (or, with fresh, replaces) the cluster epoch.
func NewEpoch(ctx context.Context, jwtSecret string, kv *bus.CAS, fresh bool, log *slog.Logger) (*Epoch, error) {
	if log == nil {
		log = slog.Default()
	}
	e := &Epoch{secret: []byte(jwtSecret), kv: kv, log: log}
	if fresh {
		n, err := newNonce()
		if err != nil {
			return nil, err
		}
		if err := kv.Put(ctx, epochKey, []byte(n)); err != nil {
			return nil, err
		}
		e.cur.Store(deriveKeys(e.secret, n))
		return e, nil
	}
	if err := e.join(ctx); err != nil {
		return nil, err
	}
	return e, nil
}

// join adopts the existing epoch or creates one.
func (e *Epoch) join(ctx context.Context) error {
	for i := 0; i < 5; i++ {
		v, err := e.kv.Get(ctx, epochKey)
		if err != nil {
			return err
		}
		if v != nil {
			e.adopt(string(v))
			return nil
		}
		n, err := newNonce()
		if err != nil {
			return err
		}
		created, err := e.kv.Create(ctx, epochKey, []byte(n))
		if err != nil {
			return err
		}
		if created {
			e.adopt(n)
			return nil
		}
	}
	return fmt.Errorf("auth: could not join the auth epoch")
}

func (e *Epoch) adopt(n string) {
	if k := e.cur.Load(); k != nil && k.nonce == n {
		return
	}
	if e.cur.Load() != nil {
		e.log.Warn("auth epoch changed: sessions signed with the previous epoch end")
	}
	e.cur.Store(deriveKeys(e.secret, n))
}

// Run renews the epoch until ctx ends and follows a rotation by another
// replica.
func (e *Epoch) Run(ctx context.Context) {
	t := time.NewTicker(EpochRefresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := e.refresh(ctx); err != nil && ctx.Err() == nil {
				e.log.Warn("auth epoch refresh failed", "err", err)
			}
		}
	}
}

func (e *Epoch) refresh(ctx context.Context) error {
	v, err := e.kv.Get(ctx, epochKey)
	if err != nil {
		return err
	}
	mine := e.cur.Load().nonce
	switch {
	case v == nil:
		// Lapsed (e.g. NATS was unreachable too long): re-create ours, or
		// adopt whichever replica won.
		if ok, err := e.kv.Create(ctx, epochKey, []byte(mine)); err != nil || ok {
			return err
		}
		return e.join(ctx)
	case string(v) == mine:
		return e.kv.Put(ctx, epochKey, []byte(mine))
	default:
		e.adopt(string(v))
		return nil
	}
}

// Rotate draws a new epoch: every session of every replica ends.
func (e *Epoch) Rotate(ctx context.Context) error {
	n, err := newNonce()
	if err != nil {
		return err
	}
	if err := e.kv.Put(ctx, epochKey, []byte(n)); err != nil {
		return err
	}
	e.adopt(n)
	return nil
}

func (e *Epoch) keys() *keys { return e.cur.Load() }

func newNonce() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("auth: epoch nonce: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

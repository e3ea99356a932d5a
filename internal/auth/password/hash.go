package password

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"golang.org/x/crypto/argon2"
)

// Params are argon2id cost parameters.
type Params struct {
	Memory  uint32 // KiB
	Time    uint32 // passes over memory
	Threads uint8  // lanes
	SaltLen uint32 // bytes
	KeyLen  uint32 // bytes
}

// DefaultParams are the parameters new hashes get. Why these values:
// 64 MiB and 4 threads are fixed by the spec; t=3 is RFC 9106's second
// recommended setting for 64 MiB and took about 190 ms per hash on the
// 2-core reference machine (t=1: 105 ms, t=2: 125 ms, t=4: 235 ms), which is
// slow for an attacker and still unnoticeable at login. A 16-byte salt and
// 32-byte key are the RFC's recommendations.
var DefaultParams = Params{Memory: 64 * 1024, Time: 3, Threads: 4, SaltLen: 16, KeyLen: 32}

// DefaultMaxConcurrent is how many hashes run at once by default. Why 4:
// 4 × 64 MiB = 256 MiB of argon2 memory at most (up to about twice that in
// RSS before the garbage collector returns it), and with 2-4 cores more
// parallel hashes only queue on the CPU anyway.
const DefaultMaxConcurrent = 4

// Bounds accepted when decoding a stored hash. Why: the parameters come from
// the database; a corrupted or planted row must not make one login allocate
// gigabytes or run for minutes.
const (
	maxMemoryKiB = 1 << 20 // 1 GiB
	maxTime      = 32
	minSaltLen   = 8
	maxSaltLen   = 64
	minKeyLen    = 16
	maxKeyLen    = 128
)

// ErrMalformedHash is returned for a stored hash that is not a PHC argon2id
// string this package can verify.
var ErrMalformedHash = errors.New("password: malformed argon2id hash")

// Hasher hashes and verifies passwords with argon2id. At most maxConcurrent
// hashes run at once; callers beyond that wait, and the wait honours ctx.
// It is safe for concurrent use.
type Hasher struct {
	params Params
	sem    chan struct{}
	dummy  string // an encoded hash no password matches, for VerifyDummy

	active, peak atomic.Int32 // running hashes, and the most seen at once
}

// NewHasher returns a Hasher producing hashes with p (DefaultParams when p
// is the zero value) and running at most maxConcurrent hashes at once
// (DefaultMaxConcurrent when ≤ 0).
func NewHasher(p Params, maxConcurrent int) (*Hasher, error) {
	if p == (Params{}) {
		p = DefaultParams
	}
	if err := p.validate(); err != nil {
		return nil, err
	}
	if maxConcurrent <= 0 {
		maxConcurrent = DefaultMaxConcurrent
	}
	h := &Hasher{params: p, sem: make(chan struct{}, maxConcurrent)}
	// The dummy has the current parameters and random salt and key, so
	// VerifyDummy costs exactly what a real Verify costs and never matches.
	salt, key := make([]byte, p.SaltLen), make([]byte, p.KeyLen)
	if _, err := rand.Read(salt); err != nil {
		return nil, fmt.Errorf("password: salt: %w", err)
	}
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("password: dummy key: %w", err)
	}
	h.dummy = encode(p, salt, key)
	return h, nil
}

// Hash returns the PHC encoding of pw:
// $argon2id$v=19$m=65536,t=3,p=4$<salt>$<key> (unpadded standard base64).
func (h *Hasher) Hash(ctx context.Context, pw string) (string, error) {
	salt := make([]byte, h.params.SaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("password: salt: %w", err)
	}
	key, err := h.derive(ctx, h.params, pw, salt)
	if err != nil {
		return "", err
	}
	return encode(h.params, salt, key), nil
}

// Verify reports whether pw matches encoded, using the parameters stored in
// encoded (so hashes made with older parameters still verify). The key
// comparison is constant-time. It returns ErrMalformedHash for a broken
// encoding and ctx's error if ctx ends while waiting for a slot.
func (h *Hasher) Verify(ctx context.Context, encoded, pw string) (bool, error) {
	p, salt, want, err := decode(encoded)
	if err != nil {
		return false, err
	}
	got, err := h.derive(ctx, p, pw, salt)
	if err != nil {
		return false, err
	}
	return subtle.ConstantTimeCompare(got, want) == 1, nil
}

// VerifyDummy does the work of a Verify against a hash no password matches.
// Call it for unknown users and users without a password so that the
// response takes as long as for a wrong password. It returns only ctx's
// error.
func (h *Hasher) VerifyDummy(ctx context.Context, pw string) error {
	_, err := h.Verify(ctx, h.dummy, pw)
	return err
}

// NeedsRehash reports whether encoded was made with other parameters than
// the Hasher's (or cannot be decoded); re-hash the password after a
// successful login then.
func (h *Hasher) NeedsRehash(encoded string) bool {
	p, _, _, err := decode(encoded)
	if err != nil {
		return true
	}
	return p != h.params
}

// derive runs argon2id once a concurrency slot is free.
func (h *Hasher) derive(ctx context.Context, p Params, pw string, salt []byte) ([]byte, error) {
	select {
	case h.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("password: waiting for a hash slot: %w", ctx.Err())
	}
	defer func() { <-h.sem }()
	n := h.active.Add(1)
	for {
		old := h.peak.Load()
		if n <= old || h.peak.CompareAndSwap(old, n) {
			break
		}
	}
	defer h.active.Add(-1)
	return argon2.IDKey([]byte(pw), salt, p.Time, p.Memory, p.Threads, p.KeyLen), nil
}

func (p Params) validate() error {
	switch {
	case p.Threads == 0:
		return fmt.Errorf("password: argon2 threads must be ≥ 1")
	case p.Memory < 8*uint32(p.Threads) || p.Memory > maxMemoryKiB:
		return fmt.Errorf("password: argon2 memory %d KiB out of range", p.Memory)
	case p.Time == 0 || p.Time > maxTime:
		return fmt.Errorf("password: argon2 time %d out of range", p.Time)
	case p.SaltLen < minSaltLen || p.SaltLen > maxSaltLen:
		return fmt.Errorf("password: salt length %d out of range", p.SaltLen)
	case p.KeyLen < minKeyLen || p.KeyLen > maxKeyLen:
		return fmt.Errorf("password: key length %d out of range", p.KeyLen)
	}
	return nil
}

var b64 = base64.RawStdEncoding.Strict()

func encode(p Params, salt, key []byte) string {
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s",
		argon2.Version, p.Memory, p.Time, p.Threads, b64.EncodeToString(salt), b64.EncodeToString(key))
}

// decode parses a PHC argon2id string strictly: fixed field order, decimal
// numbers without signs, unpadded base64, parameters within bounds.
func decode(s string) (Params, []byte, []byte, error) {
	var p Params
	f := strings.Split(s, "$")
	if len(f) != 6 || f[0] != "" || f[1] != "argon2id" || f[2] != "v="+strconv.Itoa(argon2.Version) {
		return p, nil, nil, ErrMalformedHash
	}
	kv := strings.Split(f[3], ",")
	if len(kv) != 3 {
		return p, nil, nil, ErrMalformedHash
	}
	var vals [3]uint64
	for i, name := range []string{"m=", "t=", "p="} {
		num, ok := strings.CutPrefix(kv[i], name)
		if !ok || num == "" || num[0] < '0' || num[0] > '9' {
			return p, nil, nil, ErrMalformedHash
		}
		v, err := strconv.ParseUint(num, 10, 32)
		if err != nil {
			return p, nil, nil, ErrMalformedHash
		}
		vals[i] = v
	}
	if vals[2] > 255 {
		return p, nil, nil, ErrMalformedHash
	}
	salt, err1 := b64.DecodeString(f[4])
	key, err2 := b64.DecodeString(f[5])
	if err1 != nil || err2 != nil {
		return p, nil, nil, ErrMalformedHash
	}
	p = Params{Memory: uint32(vals[0]), Time: uint32(vals[1]), Threads: uint8(vals[2]),
		SaltLen: uint32(len(salt)), KeyLen: uint32(len(key))}
	if err := p.validate(); err != nil {
		return p, nil, nil, fmt.Errorf("%w: %v", ErrMalformedHash, err)
	}
	return p, salt, key, nil
}

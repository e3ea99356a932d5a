package bus

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// casMaxRounds bounds the compare-and-swap loop. Why 1000: in-process
// updates are serialised per key (see keyLocks), so conflicts only come
// from other replicas; even a few busy replicas resolve in a handful of
// rounds. The bound turns a livelock into an error instead of a hang.
const casMaxRounds = 1000

// keyLocks serialises updates of the same key within this process, so
// concurrent requests in one replica queue on a mutex instead of retrying
// each other's conflicts over NATS. Across replicas the KV revision check
// is what makes an update atomic.
type keyLocks [64]sync.Mutex

func (l *keyLocks) of(key string) *sync.Mutex {
	h := fnv.New32a()
	h.Write([]byte(key))
	return &l[h.Sum32()%uint32(len(l))]
}

// CAS is an atomic read-modify-write store over one KV bucket: the
// cluster-wide state of lockouts, rate-limit windows and similar counters.
type CAS struct {
	kv    jetstream.KeyValue
	locks keyLocks
}

// NewCAS returns a CAS over bucket (one of the Bucket* constants).
func (b *Bus) NewCAS(ctx context.Context, bucket string) (*CAS, error) {
	kv, err := b.KV(ctx, bucket)
	if err != nil {
		return nil, fmt.Errorf("bus: bucket %s: %w", bucket, err)
	}
	return &CAS{kv: kv}, nil
}

// ErrCASContention means an update kept losing the revision race.
var ErrCASContention = errors.New("bus: kv update contention")

// Update loads key (nil when absent), calls fn and stores its result only
// if the key did not change in between, retrying otherwise. fn may run
// more than once. A nil result deletes the key. An error from fn aborts
// without writing and is returned unchanged.
func (c *CAS) Update(ctx context.Context, key string, fn func(old []byte) ([]byte, error)) error {
	mu := c.locks.of(key)
	mu.Lock()
	defer mu.Unlock()
	for round := 0; round < casMaxRounds; round++ {
		var (
			old []byte
			rev uint64
		)
		e, err := c.kv.Get(ctx, key)
		switch {
		case err == nil:
			old, rev = e.Value(), e.Revision()
		case errors.Is(err, jetstream.ErrKeyNotFound):
		default:
			return fmt.Errorf("bus: kv get %s: %w", key, err)
		}
		nv, err := fn(old)
		if err != nil {
			return err
		}
		switch {
		case nv == nil && rev == 0:
			return nil
		case nv == nil:
			err = c.kv.Delete(ctx, key, jetstream.LastRevision(rev))
		case rev == 0:
			_, err = c.kv.Create(ctx, key, nv)
		default:
			_, err = c.kv.Update(ctx, key, nv, rev)
		}
		if err == nil {
			return nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) && !isWrongSeq(err) {
			return fmt.Errorf("bus: kv write %s: %w", key, err)
		}
		if round > 3 {
			// Back off a little when another replica keeps winning.
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Duration(round) * time.Millisecond):
			}
		}
	}
	return ErrCASContention
}

func isWrongSeq(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

// Get returns the value of key, nil when absent.
func (c *CAS) Get(ctx context.Context, key string) ([]byte, error) {
	e, err := c.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("bus: kv get %s: %w", key, err)
	}
	return e.Value(), nil
}

// Put stores value under key unconditionally (and renews its TTL).
func (c *CAS) Put(ctx context.Context, key string, value []byte) error {
	if _, err := c.kv.Put(ctx, key, value); err != nil {
		return fmt.Errorf("bus: kv put %s: %w", key, err)
	}
	return nil
}

// Create stores value only when key does not exist; it reports false (and
// no error) when it did.
func (c *CAS) Create(ctx context.Context, key string, value []byte) (bool, error) {
	_, err := c.kv.Create(ctx, key, value)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, jetstream.ErrKeyExists) || isWrongSeq(err) {
		return false, nil
	}
	return false, fmt.Errorf("bus: kv create %s: %w", key, err)
}

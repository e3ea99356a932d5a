package bus

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go/jetstream"
)

// Lock errors.
var (
	// ErrLockHeld: Create found the key present.
	ErrLockHeld = errors.New("bus: lock held")
	// ErrLockGone: the key does not exist (released or expired).
	ErrLockGone = errors.New("bus: lock not held")
	// ErrLockRevision: someone else wrote the key since the given revision.
	ErrLockRevision = errors.New("bus: lock changed concurrently")
)

// Locks is the cluster-wide server lock table (bucket LCM_LOCKS). Keys
// expire with the bucket TTL unless refreshed, so a lock of a vanished
// process does not outlive it by more than the TTL.
type Locks struct{ kv jetstream.KeyValue }

// Locks opens the lock bucket.
func (b *Bus) Locks(ctx context.Context) (*Locks, error) {
	if err := b.ready(); err != nil {
		return nil, err
	}
	if l := b.locks.Load(); l != nil {
		return l, nil
	}
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	kv, err := b.JS.KeyValue(ctx, BucketLocks)
	if err != nil {
		return nil, unavailable(err)
	}
	l := &Locks{kv: kv}
	b.locks.Store(l)
	return l, nil
}

func lockErr(err error) error {
	var apiErr *jetstream.APIError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, jetstream.ErrKeyExists):
		return ErrLockHeld
	case errors.Is(err, jetstream.ErrKeyNotFound), errors.Is(err, jetstream.ErrKeyDeleted):
		return ErrLockGone
	case errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant): // the latter on replicated (R3) buckets
		return ErrLockRevision
	}
	return unavailable(err)
}

// Create takes the lock; ErrLockHeld when it is already taken.
func (l *Locks) Create(ctx context.Context, key string, value []byte) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	rev, err := l.kv.Create(ctx, key, value)
	return rev, lockErr(err)
}

// Get returns the lock's value and revision; ErrLockGone when free.
func (l *Locks) Get(ctx context.Context, key string) ([]byte, uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	e, err := l.kv.Get(ctx, key)
	if err != nil {
		return nil, 0, lockErr(err)
	}
	return e.Value(), e.Revision(), nil
}

// Update rewrites the lock if it is still at revision rev (refreshing its
// TTL); ErrLockRevision or ErrLockGone otherwise.
func (l *Locks) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	n, err := l.kv.Update(ctx, key, value, rev)
	if err != nil {
		if e := lockErr(err); errors.Is(e, ErrLockHeld) {
			return 0, ErrLockRevision
		}
		return 0, lockErr(err)
	}
	return n, nil
}

// Delete releases the lock if it is still at revision rev.
func (l *Locks) Delete(ctx context.Context, key string, rev uint64) error {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	return lockErr(l.kv.Delete(ctx, key, jetstream.LastRevision(rev)))
}

package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Lease is a leader lease on one key of a KV bucket (BucketLeader for the
// scheduler): whoever created or last renewed the key with the right
// revision holds it. The value carries the owner and an expiry, so a
// contender takes over a lease whose holder stopped renewing after ttl;
// the bucket TTL (30 s for BucketLeader) additionally deletes a dead
// holder's key. Expiry compares wall clocks, so replicas need NTP.
type Lease struct {
	kv    jetstream.KeyValue
	key   string
	owner string
	ttl   time.Duration
	rev   uint64 // revision of our last write; 0 when not holding
	now   func() time.Time
}

type leaseValue struct {
	Owner   string    `json:"owner"`
	Expires time.Time `json:"expires"`
}

// NewLease returns a lease on key in bucket for owner (a replica id).
func (b *Bus) NewLease(ctx context.Context, bucket, key, owner string, ttl time.Duration) (*Lease, error) {
	kv, err := b.KV(ctx, bucket)
	if err != nil {
		return nil, fmt.Errorf("bus: bucket %s: %w", bucket, err)
	}
	return &Lease{kv: kv, key: key, owner: owner, ttl: ttl, now: time.Now}, nil
}

// Owner is the replica id the lease is taken for.
func (l *Lease) Owner() string { return l.owner }

func (l *Lease) value() []byte {
	b, _ := json.Marshal(leaseValue{Owner: l.owner, Expires: l.now().Add(l.ttl)})
	return b
}

// Acquire takes the lease when it is free, expired or already ours, and
// reports whether we hold it now.
func (l *Lease) Acquire(ctx context.Context) (bool, error) {
	rev, err := l.kv.Create(ctx, l.key, l.value())
	if err == nil {
		l.rev = rev
		return true, nil
	}
	if !errors.Is(err, jetstream.ErrKeyExists) {
		return false, fmt.Errorf("bus: lease %s: %w", l.key, err)
	}
	e, err := l.kv.Get(ctx, l.key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, nil // deleted in between: next round
	}
	if err != nil {
		return false, fmt.Errorf("bus: lease %s: %w", l.key, err)
	}
	var cur leaseValue
	if json.Unmarshal(e.Value(), &cur) == nil && cur.Owner != l.owner && l.now().Before(cur.Expires) {
		l.rev = 0
		return false, nil
	}
	return l.update(ctx, e.Revision())
}

// Renew extends a held lease; false means it was lost (someone else took
// it after expiry, or the bucket TTL deleted it).
func (l *Lease) Renew(ctx context.Context) (bool, error) {
	if l.rev == 0 {
		return false, nil
	}
	return l.update(ctx, l.rev)
}

func (l *Lease) update(ctx context.Context, rev uint64) (bool, error) {
	nrev, err := l.kv.Update(ctx, l.key, l.value(), rev)
	if err != nil {
		l.rev = 0
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
			apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant) { // the latter on replicated (R3) buckets
			return false, nil
		}
		return false, fmt.Errorf("bus: lease %s: %w", l.key, err)
	}
	l.rev = nrev
	return true, nil
}

// Release gives a held lease up so another replica takes over at once.
func (l *Lease) Release(ctx context.Context) error {
	if l.rev == 0 {
		return nil
	}
	rev := l.rev
	l.rev = 0
	if err := l.kv.Delete(ctx, l.key, jetstream.LastRevision(rev)); err != nil {
		return fmt.Errorf("bus: lease %s release: %w", l.key, err)
	}
	return nil
}

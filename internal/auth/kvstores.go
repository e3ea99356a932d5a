package auth

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/lcmproject/lcm/internal/auth/lockout"
	"github.com/lcmproject/lcm/internal/bus"
)

// lockoutStore is lockout.Store over a NATS KV bucket: the state of a key
// is JSON, updated with the bucket's revision check, so check-and-count is
// atomic across every replica.
type lockoutStore struct{ cas *bus.CAS }

func (l lockoutStore) Update(ctx context.Context, key string, fn func(lockout.State) (lockout.State, error)) error {
	return l.cas.Update(ctx, key, func(old []byte) ([]byte, error) {
		var st lockout.State
		if len(old) > 0 {
			if err := json.Unmarshal(old, &st); err != nil {
				return nil, fmt.Errorf("auth: lockout state %s: %w", key, err)
			}
		}
		ns, err := fn(st)
		if err != nil {
			return nil, err
		}
		if ns.IsZero() {
			return nil, nil
		}
		return json.Marshal(ns)
	})
}

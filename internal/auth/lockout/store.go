package lockout

import (
	"context"
	"sync"
	"time"
)

// Store keeps one State per key and updates it atomically across replicas.
//
// Update loads the state of key (the zero State when there is none), calls
// fn and stores fn's result only if the key has not changed in between —
// otherwise it reloads and calls fn again (compare-and-swap loop; a NATS KV
// store uses the entry revision, a database row a version column). fn may
// therefore run more than once and must have no side effects beyond
// assigning to variables it owns. When fn returns an error nothing is
// stored and Update returns that error unchanged. A store may delete a key
// whose new state IsZero.
type Store interface {
	Update(ctx context.Context, key string, fn func(State) (State, error)) error
}

// MemoryStore is a Store for a single process, guarded by one mutex.
type MemoryStore struct {
	mu     sync.Mutex
	states map[string]State
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore { return &MemoryStore{states: map[string]State{}} }

// Update implements Store. fn runs under the store's mutex, so it runs
// exactly once per call.
func (m *MemoryStore) Update(ctx context.Context, key string, fn func(State) (State, error)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s, err := fn(m.states[key])
	if err != nil {
		return err
	}
	if s.IsZero() {
		delete(m.states, key)
	} else {
		m.states[key] = s
	}
	return nil
}

// Get returns the stored state of key (for diagnostics and tests).
func (m *MemoryStore) Get(key string) State {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.states[key]
}

// Prune deletes states whose last failure, lockout and reservation all ended
// before cutoff, and returns how many it deleted. Its owner calls it
// periodically with now minus the longest Decay, so keys of addresses that
// tried once do not accumulate.
func (m *MemoryStore) Prune(cutoff time.Time) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for k, s := range m.states {
		if s.LastFailure.Before(cutoff) && s.LockedUntil.Before(cutoff) && s.PendingUntil.Before(cutoff) {
			delete(m.states, k)
			n++
		}
	}
	return n
}

// Len returns the number of stored keys.
func (m *MemoryStore) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.states)
}

package lockout

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/testutil"
)

func newTestLimiter() (*Limiter, *MemoryStore, *time.Time) {
	store := NewMemoryStore()
	l := NewLimiter(store)
	now := t0
	l.Now = func() time.Time { return now }
	return l, store, &now
}

type result struct {
	ok    bool
	retry time.Duration
	err   error
}

// burst runs n parallel attempts with wrong passwords. When block is set,
// every verify waits until all n attempts have either returned or reached
// verify, so all of them really overlap.
func burst(t *testing.T, l *Limiter, n int, block bool, ipOf func(i int) string, account string) (int64, []result) {
	t.Helper()
	var verifies, settled atomic.Int64
	release := make(chan struct{})
	results := make([]result, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			ok, retry, err := l.Attempt(context.Background(), ipOf(i), account, func() (bool, error) {
				verifies.Add(1)
				settled.Add(1)
				if block {
					<-release
				}
				return false, nil
			})
			if retry > 0 {
				settled.Add(1)
			}
			results[i] = result{ok, retry, err}
		})
	}
	close(start)
	if block {
		testutil.WaitFor(t, 10*time.Second, "all attempts settled", func() bool { return settled.Load() == int64(n) })
		close(release)
	}
	wg.Wait()
	return verifies.Load(), results
}

func countRefused(t *testing.T, rs []result) int {
	n := 0
	for _, r := range rs {
		assert.False(t, r.ok)
		if r.retry > 0 {
			n++
			assert.ErrorIs(t, r.err, domain.ErrRateLimited)
			var de *domain.Error
			require.True(t, errors.As(r.err, &de))
			assert.Equal(t, CodeLockedOut, de.Code)
		} else {
			assert.NoError(t, r.err)
		}
	}
	return n
}

func TestLimiterOneIPExactlyThreshold(t *testing.T) {
	for _, block := range []bool{true, false} {
		t.Run(fmt.Sprintf("overlapping=%v", block), func(t *testing.T) {
			l, store, now := newTestLimiter()
			v, rs := burst(t, l, 200, block, func(int) string { return "203.0.113.7" }, "alice")
			assert.Equal(t, int64(5), v, "exactly the IP threshold reaches verify")
			assert.Equal(t, 195, countRefused(t, rs))

			ip := store.Get(IPKey("203.0.113.7"))
			assert.Equal(t, 1, ip.Lockouts)
			assert.Equal(t, 0, ip.Pending)
			acct := store.Get(AccountKey("alice"))
			assert.Equal(t, 5, acct.Failures, "the account saw the 5 real failures only")
			assert.Equal(t, 0, acct.Pending)

			ok, retry, err := l.Attempt(context.Background(), "203.0.113.7", "alice", func() (bool, error) {
				t.Fatal("verify must not run while locked")
				return false, nil
			})
			assert.False(t, ok)
			assert.Equal(t, 30*time.Second, retry)
			assert.ErrorIs(t, err, domain.ErrRateLimited)

			// Another address is not affected by this IP's lockout.
			ok, _, err = l.Attempt(context.Background(), "203.0.113.8", "alice", func() (bool, error) { return true, nil })
			assert.True(t, ok)
			assert.NoError(t, err)
			_ = now
		})
	}
}

func TestLimiterOneAccountManyIPsExactlyThreshold(t *testing.T) {
	for _, block := range []bool{true, false} {
		t.Run(fmt.Sprintf("overlapping=%v", block), func(t *testing.T) {
			l, store, _ := newTestLimiter()
			ipOf := func(i int) string { return fmt.Sprintf("198.51.100.%d", i%250) }
			v, rs := burst(t, l, 200, block, ipOf, "Alice")
			assert.Equal(t, int64(15), v, "exactly the account threshold reaches verify")
			assert.Equal(t, 185, countRefused(t, rs))
			assert.Equal(t, 1, store.Get(AccountKey("alice")).Lockouts, "account key is case-folded")
			for i := range 200 {
				assert.Equal(t, 0, store.Get(IPKey(ipOf(i))).Pending, "refused attempts released their IP reservation")
			}
		})
	}
}

func TestLimiterSuccessAndErrors(t *testing.T) {
	ctx := context.Background()
	l, store, now := newTestLimiter()
	wrong := func() (bool, error) { return false, nil }
	right := func() (bool, error) { return true, nil }

	for range 4 {
		ok, retry, err := l.Attempt(ctx, "192.0.2.1", "bob", wrong)
		require.NoError(t, err)
		assert.False(t, ok)
		assert.Zero(t, retry)
	}
	ok, _, err := l.Attempt(ctx, "192.0.2.1", "bob", right)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.True(t, store.Get(AccountKey("bob")).IsZero(), "success resets the account")
	assert.Equal(t, 4, store.Get(IPKey("192.0.2.1")).Failures, "success does not reset the IP")

	// A verify error counts nothing and is returned.
	boom := errors.New("db down")
	ok, _, err = l.Attempt(ctx, "192.0.2.1", "bob", func() (bool, error) { return false, boom })
	assert.False(t, ok)
	assert.ErrorIs(t, err, boom)
	assert.Equal(t, 4, store.Get(IPKey("192.0.2.1")).Failures)
	assert.Equal(t, 0, store.Get(IPKey("192.0.2.1")).Pending)

	// The IP decays 15 minutes after its last failure.
	*now = now.Add(IPPolicy.Decay)
	for range 4 {
		_, _, err = l.Attempt(ctx, "192.0.2.1", "bob", wrong)
		require.NoError(t, err)
	}
	ok, _, err = l.Attempt(ctx, "192.0.2.1", "bob", right)
	assert.True(t, ok)
	assert.NoError(t, err)
}

func TestLimiterCountsEvenIfClientCancels(t *testing.T) {
	l, store, _ := newTestLimiter()
	ctx, cancel := context.WithCancel(context.Background())
	_, _, err := l.Attempt(ctx, "192.0.2.9", "carol", func() (bool, error) { cancel(); return false, nil })
	require.NoError(t, err)
	assert.Equal(t, 1, store.Get(IPKey("192.0.2.9")).Failures)
	assert.Equal(t, 0, store.Get(IPKey("192.0.2.9")).Pending)
}

func TestLimiterTOTPSharesOneCounter(t *testing.T) {
	ctx := context.Background()
	l, store, _ := newTestLimiter()
	wrong := func() (bool, error) { return false, nil }
	// Three "places" (login, disable 2FA, change password) from many IPs.
	for i := range 15 {
		_, _, err := l.AttemptTOTP(ctx, fmt.Sprintf("192.0.2.%d", i), "user-1", wrong)
		require.NoError(t, err)
	}
	ok, retry, err := l.AttemptTOTP(ctx, "192.0.2.200", "user-1", wrong)
	assert.False(t, ok)
	assert.Equal(t, 30*time.Second, retry)
	assert.ErrorIs(t, err, domain.ErrRateLimited)
	assert.Equal(t, 1, store.Get(TOTPKey("user-1")).Lockouts)
	assert.True(t, store.Get(AccountKey("user-1")).IsZero(), "TOTP and password counters are separate keys")
}

// failingStore refuses every update.
type failingStore struct{ err error }

func (f failingStore) Update(context.Context, string, func(State) (State, error)) error { return f.err }

func TestLimiterFailsClosedOnStoreError(t *testing.T) {
	boom := errors.New("kv unavailable")
	l := NewLimiter(failingStore{boom})
	ok, _, err := l.Attempt(context.Background(), "192.0.2.1", "bob", func() (bool, error) {
		t.Fatal("verify must not run without a reservation")
		return true, nil
	})
	assert.False(t, ok)
	assert.ErrorIs(t, err, boom)
}

func TestKeys(t *testing.T) {
	for _, k := range []string{IPKey("2001:db8::1"), AccountKey("Ädmin@example.com"), TOTPKey("u-1/x y")} {
		assert.Regexp(t, `^[-/_=.a-zA-Z0-9]+$`, k, "NATS KV safe")
	}
	assert.Equal(t, AccountKey("ALICE"), AccountKey("alice"))
	assert.NotEqual(t, AccountKey("alice"), TOTPKey("alice"))
	assert.NotEqual(t, IPKey("alice"), AccountKey("alice"))
}

func TestMemoryStore(t *testing.T) {
	ctx := context.Background()
	m := NewMemoryStore()
	boom := errors.New("no")
	require.ErrorIs(t, m.Update(ctx, "k", func(State) (State, error) { return State{Failures: 1}, boom }), boom)
	assert.Equal(t, 0, m.Len(), "error: nothing stored")

	require.NoError(t, m.Update(ctx, "k", func(s State) (State, error) { s.Failures++; s.LastFailure = t0; return s, nil }))
	assert.Equal(t, 1, m.Get("k").Failures)
	require.NoError(t, m.Update(ctx, "k", func(State) (State, error) { return State{}, nil }))
	assert.Equal(t, 0, m.Len(), "zero state deleted")

	require.NoError(t, m.Update(ctx, "old", func(State) (State, error) { return State{Failures: 1, LastFailure: t0}, nil }))
	require.NoError(t, m.Update(ctx, "new", func(State) (State, error) { return State{Failures: 1, LastFailure: t0.Add(time.Hour)}, nil }))
	assert.Equal(t, 1, m.Prune(t0.Add(time.Minute)))
	assert.Equal(t, 1, m.Len())

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	assert.ErrorIs(t, m.Update(cctx, "k", func(s State) (State, error) { return s, nil }), context.Canceled)
}

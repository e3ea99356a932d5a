package lockout

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestLockDurationCurve(t *testing.T) {
	want := []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 15 * time.Minute, 15 * time.Minute}
	for i, w := range want {
		assert.Equal(t, w, IPPolicy.LockDuration(i+1), "lockout %d", i+1)
		assert.Equal(t, w, AccountPolicy.LockDuration(i+1), "lockout %d", i+1)
	}
	assert.Equal(t, 15*time.Minute, IPPolicy.LockDuration(1000), "no overflow")
}

// failN records n failures one second apart, checking each is allowed.
func failN(t *testing.T, p Policy, s State, now time.Time, n int) (State, time.Time) {
	t.Helper()
	for i := range n {
		ok, _ := p.Check(s, now)
		require.True(t, ok, "attempt %d should be allowed", i+1)
		s = p.Fail(s, now)
		now = now.Add(time.Second)
	}
	return s, now
}

func TestPolicyThresholdAndGrowth(t *testing.T) {
	p := IPPolicy
	s, now := failN(t, p, State{}, t0, 4)
	ok, _ := p.Check(s, now)
	assert.True(t, ok, "4 failures: still open")

	s = p.Fail(s, now) // 5th failure at now
	ok, retry := p.Check(s, now)
	assert.False(t, ok)
	assert.Equal(t, 30*time.Second, retry)
	ok, retry = p.Check(s, now.Add(29*time.Second))
	assert.False(t, ok)
	assert.Equal(t, time.Second, retry)

	// After the lockout, a single failure starts the next, doubled one.
	now = now.Add(30 * time.Second)
	for _, want := range []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 15 * time.Minute, 15 * time.Minute} {
		ok, _ = p.Check(s, now)
		require.True(t, ok)
		s = p.Fail(s, now)
		ok, retry = p.Check(s, now)
		require.False(t, ok)
		assert.Equal(t, want, retry)
		now = now.Add(retry)
	}
}

func TestPolicyDecay(t *testing.T) {
	p := IPPolicy
	s, _ := failN(t, p, State{}, t0, 5) // locked, Lockouts=1
	last := s.LockedUntil               // quiet time counts from the end of the lockout

	// Just before the decay: open (lockout over) but budget 1.
	almost := last.Add(p.Decay - time.Second)
	s2 := p.Fail(s, almost)
	ok, retry := p.Check(s2, almost)
	assert.False(t, ok)
	assert.Equal(t, time.Minute, retry, "second lockout")

	// 15 minutes after the last failure the state is fresh: 5 more tries.
	fresh := last.Add(p.Decay)
	s3, _ := failN(t, p, s, fresh, 4)
	ok, _ = p.Check(s3, fresh.Add(time.Minute))
	assert.True(t, ok)
	assert.Equal(t, 0, s3.Lockouts)
}

func TestPolicyRefusedAttemptsDoNotExtend(t *testing.T) {
	p := IPPolicy
	s, now := failN(t, p, State{}, t0, 5)
	before := s
	for range 100 {
		ok, _ := p.Check(s, now)
		assert.False(t, ok)
	}
	assert.Equal(t, before, s, "Check is pure")
}

func TestPolicySucceed(t *testing.T) {
	p := AccountPolicy
	s, now := failN(t, p, State{}, t0, 14)
	s, _, _ = p.Reserve(s, now)
	s = p.Succeed(p.Release(s, now))
	assert.True(t, s.IsZero())

	// Other in-flight reservations survive a success.
	s, _, _ = p.Reserve(State{}, now)
	s, _, _ = p.Reserve(s, now)
	s = p.Succeed(p.Release(s, now))
	assert.Equal(t, 1, s.Pending)
}

func TestPolicyReserve(t *testing.T) {
	p := IPPolicy
	s := State{}
	for i := range 5 {
		var ok bool
		s, ok, _ = p.Reserve(s, t0)
		require.True(t, ok, "reservation %d", i+1)
	}
	s2, ok, retry := p.Reserve(s, t0)
	assert.False(t, ok)
	assert.Equal(t, PendingRetry, retry)
	assert.Equal(t, s, s2, "refusal leaves the state unchanged")

	// Releasing one frees a slot; failing all five locks.
	s = p.Release(s, t0)
	_, ok, _ = p.Reserve(s, t0)
	assert.True(t, ok)

	// Reservations lapse after PendingLease.
	_, ok, _ = p.Reserve(s2, t0.Add(PendingLease))
	assert.True(t, ok)
	assert.Equal(t, 0, p.Release(State{}, t0).Pending, "release never goes negative")
}

func TestStateJSON(t *testing.T) {
	s, _ := failN(t, IPPolicy, State{}, t0, 5)
	s, _, _ = IPPolicy.Reserve(s, t0.Add(time.Hour))
	b, err := json.Marshal(s)
	require.NoError(t, err)
	var back State
	require.NoError(t, json.Unmarshal(b, &back))
	assert.True(t, s.LockedUntil.Equal(back.LockedUntil))
	assert.Equal(t, s.Failures, back.Failures)
	assert.Equal(t, s.Lockouts, back.Lockouts)
	assert.Equal(t, s.Pending, back.Pending)

	b, err = json.Marshal(State{})
	require.NoError(t, err)
	assert.Equal(t, "{}", string(b))
}

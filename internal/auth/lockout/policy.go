package lockout

import "time"

// PendingLease is how long a reservation counts when it is never resolved.
// Why 30 s: far longer than a credential check (one argon2id hash, ~0.2 s,
// plus queueing for a hash slot), so it only lapses for a crashed process;
// short enough that a crash does not lock anyone out for long. Login
// handlers must time out well before it.
const PendingLease = 30 * time.Second

// PendingRetry is the Retry-After for an attempt refused only because other
// attempts on the same key are still in flight. Why 1 s: they resolve within
// a hash time, and Retry-After has one-second granularity.
const PendingRetry = time.Second

// Policy is a brute-force policy for one kind of key.
type Policy struct {
	Threshold int           // failures that start the first lockout
	Base      time.Duration // first lockout; doubles per consecutive lockout
	Max       time.Duration // longest lockout
	Decay     time.Duration // quiet time that resets the state, counted from the later of the last failure and the end of the lockout
}

// IPPolicy applies to client addresses. Why 5: the spec's per-IP threshold;
// 30 s base so a user who mistyped a few times is back quickly; 15 min cap
// and decay per the spec.
var IPPolicy = Policy{Threshold: 5, Base: 30 * time.Second, Max: 15 * time.Minute, Decay: 15 * time.Minute}

// AccountPolicy applies to accounts and to the shared TOTP counter. Why 15:
// the spec's per-account threshold, higher than per IP so that one attacker
// address cannot lock a user out as easily as it locks itself out.
var AccountPolicy = Policy{Threshold: 15, Base: 30 * time.Second, Max: 15 * time.Minute, Decay: 15 * time.Minute}

// State is the counter for one key. It is plain data so it can be stored as
// JSON in NATS KV or a database row.
type State struct {
	Failures     int       `json:"failures,omitempty"`     // failures since the last lockout (or reset)
	LockedUntil  time.Time `json:"locked_until,omitzero"`  // attempts are refused before this
	LastFailure  time.Time `json:"last_failure,omitzero"`  // decay is measured from here
	Lockouts     int       `json:"lockouts,omitempty"`     // consecutive lockouts since the last reset
	Pending      int       `json:"pending,omitempty"`      // reserved attempts still running
	PendingUntil time.Time `json:"pending_until,omitzero"` // when Pending lapses if never resolved
}

// IsZero reports whether s carries no information, so a store may delete it.
func (s State) IsZero() bool {
	return s.Failures == 0 && s.Lockouts == 0 && s.Pending == 0 &&
		s.LockedUntil.IsZero() && s.LastFailure.IsZero() && s.PendingUntil.IsZero()
}

// LockDuration returns the length of lockout n (1-based):
// min(Base·2^(n-1), Max).
func (p Policy) LockDuration(n int) time.Duration {
	d := p.Base
	for i := 1; i < n && d < p.Max; i++ {
		d *= 2
	}
	return min(d, p.Max)
}

// quietSince is when the key last became able to fail again without having
// failed: the later of the last failure and the end of the last lockout.
func (s State) quietSince() time.Time {
	if s.LockedUntil.After(s.LastFailure) {
		return s.LockedUntil
	}
	return s.LastFailure
}

// normalize applies decay and lapses stale reservations.
func (p Policy) normalize(s State, now time.Time) State {
	if q := s.quietSince(); !q.IsZero() && now.Sub(q) >= p.Decay {
		s.Failures, s.Lockouts = 0, 0
		s.LastFailure, s.LockedUntil = time.Time{}, time.Time{}
	}
	if s.Pending <= 0 || !now.Before(s.PendingUntil) {
		s.Pending, s.PendingUntil = 0, time.Time{}
	}
	return s
}

// budget is how many failures may happen before the next lockout: the
// threshold at first, one after a lockout until the state decays.
func (p Policy) budget(s State) int {
	if s.Lockouts > 0 {
		return 1
	}
	return max(p.Threshold, 1)
}

// Check reports whether an attempt may proceed now and, if not, how long to
// wait. It refuses during a lockout and while in-flight attempts (Pending)
// would use up the remaining budget.
func (p Policy) Check(s State, now time.Time) (allowed bool, retryAfter time.Duration) {
	s = p.normalize(s, now)
	if now.Before(s.LockedUntil) {
		return false, s.LockedUntil.Sub(now)
	}
	if s.Failures+s.Pending >= p.budget(s) {
		return false, PendingRetry
	}
	return true, 0
}

// Reserve is Check plus counting the attempt as pending, for use inside one
// atomic store update. The returned state is s unchanged when refused.
func (p Policy) Reserve(s State, now time.Time) (State, bool, time.Duration) {
	ok, retry := p.Check(s, now)
	if !ok {
		return s, false, retry
	}
	s = p.normalize(s, now)
	s.Pending++
	s.PendingUntil = now.Add(PendingLease)
	return s, true, 0
}

// Release ends one reservation without counting anything (the check could
// not run, or the outcome is recorded separately with Fail or Succeed).
func (p Policy) Release(s State, now time.Time) State {
	s = p.normalize(s, now)
	if s.Pending > 0 {
		s.Pending--
	}
	if s.Pending == 0 {
		s.PendingUntil = time.Time{}
	}
	return s
}

// Fail records a failed attempt and starts the next lockout when the budget
// is used up.
func (p Policy) Fail(s State, now time.Time) State {
	s = p.normalize(s, now)
	s.Failures++
	s.LastFailure = now
	if s.Failures >= p.budget(s) {
		s.Lockouts++
		s.LockedUntil = now.Add(p.LockDuration(s.Lockouts))
		s.Failures = 0
	}
	return s
}

// Succeed records a successful attempt: failures and lockouts are forgotten;
// other attempts still in flight stay reserved.
func (p Policy) Succeed(s State) State {
	return State{Pending: s.Pending, PendingUntil: s.PendingUntil}
}

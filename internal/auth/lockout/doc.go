// Package lockout is LCM's brute-force protection as a pure state machine
// plus a small check-and-count driver.
//
// Failed logins and TOTP checks are counted per client IP (threshold 5) and
// per account (threshold 15) at the same time. [Policy] holds the rules and
// works on a [State] value without I/O; a [Store] keeps states per key with
// compare-and-swap semantics (in memory here, NATS KV or a database row
// elsewhere); [Limiter] checks both keys, reserves the attempt, runs the
// credential check and records the outcome.
//
// # The curve
//
// For both policies (Base 30 s, Max 15 min, Decay 15 min):
//
//	failures 1 … Threshold-1   no lockout
//	failure  Threshold         lockout 1:  30 s
//	next failure after it      lockout 2:   1 min
//	                           lockout 3:   2 min
//	                           lockout 4:   4 min
//	                           lockout 5:   8 min
//	                           lockout 6+: 15 min (16 min capped to Max)
//
// Lockout n lasts min(Base·2^(n-1), Max). After the first lockout every
// further failure starts the next, longer lockout (the budget drops from
// Threshold to 1) until the key decays: after 15 minutes without a failure
// the state is reset entirely. The quiet time is counted from the later of
// the last failure and the end of the current lockout — time spent locked
// out is not "without a failure", it is time in which failing was
// impossible. So in the worst case an attacker gets one guess per 15-minute
// lockout per key, and a user who stops mistyping is fresh 15 minutes after
// the lockout ended. Attempts refused during a lockout are not counted, so
// they neither extend the lockout nor delay the decay. A successful login
// resets the account key; the IP key is not reset on success (otherwise an
// attacker could reset it by logging into an account of their own between
// guesses) and decays instead.
//
// # State diagram (one key; F failures, P pending, b budget, T threshold)
//
//	               reserve: P+1 (refused while F+P ≥ b)
//	               resolve: P-1, then fail F+1 or succeed (reset)
//	              ┌──────┐
//	              ▼      │
//	      ┌──────────────────┐  fail with F+1 = b  ┌──────────┐
//	┌────▶│ open, b = T      │────────────────────▶│  locked  │◀──────┐
//	│     └──────────────────┘  Lockouts+1, F = 0  └──────────┘       │
//	│                                                   │             │
//	│                                                   │ LockedUntil │ fail
//	│                                                   ▼ passes      │
//	│    quiet for Decay                         ┌──────────────┐     │
//	└────────────────────────────────────────────│ open, b = 1  │─────┘
//	                                             └──────────────┘
//
// "Quiet for Decay" means Decay has passed since the later of LastFailure and
// LockedUntil; it resets the key from any state. Lockout length follows the
// curve above.
//
// # Atomic check and count
//
// A check that only reads the counter lets 200 parallel guesses all pass the
// check before the first failure is recorded. [Policy.Reserve] therefore
// counts the attempt as Pending in the same update that checks it, and an
// attempt is refused while Failures + Pending reaches the budget. Exactly
// Threshold attempts per key get to run their credential check, however many
// run in parallel. A reservation that is never resolved (crashed process)
// lapses after [PendingLease].
package lockout

package lockout

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
)

// CodeLockedOut is the domain error code of a refused attempt.
const CodeLockedOut = "locked_out"

// errRefused aborts a store update without writing.
var errRefused = errors.New("lockout: refused")

// Limiter applies IPPolicy and AccountPolicy to one attempt at a time, with
// the check, the reservation and the recording each one atomic store update.
type Limiter struct {
	Store   Store
	IP      Policy           // policy for IPKey counters
	Account Policy           // policy for AccountKey and TOTPKey counters
	Now     func() time.Time // clock; nil means time.Now
}

// NewLimiter returns a Limiter over store with the default policies.
func NewLimiter(store Store) *Limiter {
	return &Limiter{Store: store, IP: IPPolicy, Account: AccountPolicy}
}

// Attempt runs one password login attempt for the client address ip and
// the login name account (see AccountKey).
//
//  1. It reserves the attempt on the IP key, then on the account key, each in
//     one atomic update that also checks the lockout. If either refuses, the
//     other reservation is released, verify does not run, and Attempt
//     returns ok=false, the wait, and a *domain.Error of kind
//     domain.ErrRateLimited with code locked_out.
//  2. It runs verify.
//  3. It records the outcome on both keys: on failure a failure each; on
//     success the account key is reset and the IP key only released; on a
//     verify error both are released and the error is returned as is.
//
// A wrong password returns ok=false, retryAfter=0 and a nil error. The
// recording step ignores cancellation of ctx, so a client that hangs up
// after the check still gets its failure counted. If recording fails,
// Attempt fails closed (ok=false with the store error).
func (l *Limiter) Attempt(ctx context.Context, ip, account string, verify func() (bool, error)) (ok bool, retryAfter time.Duration, err error) {
	return l.attempt(ctx, IPKey(ip), AccountKey(account), verify)
}

// AttemptTOTP is Attempt for a TOTP check of userID: it uses the same IP key
// and the shared TOTPKey counter with the account policy.
func (l *Limiter) AttemptTOTP(ctx context.Context, ip, userID string, verify func() (bool, error)) (ok bool, retryAfter time.Duration, err error) {
	return l.attempt(ctx, IPKey(ip), TOTPKey(userID), verify)
}

// TOTPLocked reports whether userID's TOTP checks are locked out (the
// wait and a locked_out error), without counting anything. The password
// step asks it first: a TOTP lockout locks the account's whole sign-in
// (spec: failed attempts per account count login and TOTP checks), while
// the counters stay apart, so a known password cannot reset the TOTP
// failures between guesses.
func (l *Limiter) TOTPLocked(ctx context.Context, userID string) (time.Duration, error) {
	var retry time.Duration
	err := l.Store.Update(ctx, TOTPKey(userID), func(s State) (State, error) {
		if ok, ra := l.Account.Check(s, l.now()); !ok {
			retry = ra
		}
		return s, errRefused // read only: never write
	})
	switch {
	case err != nil && !errors.Is(err, errRefused):
		return 0, fmt.Errorf("lockout: check: %w", err)
	case retry > 0:
		return retry, lockedOut(retry)
	}
	return 0, nil
}

func (l *Limiter) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

func (l *Limiter) attempt(ctx context.Context, ipKey, acctKey string, verify func() (bool, error)) (bool, time.Duration, error) {
	now := l.now()
	// The IP key first: requests from a locked-out address never touch the
	// account key, so an attacker cannot make the victim's account look busy.
	if retry, err := l.reserve(ctx, ipKey, l.IP, now); err != nil || retry > 0 {
		return false, retry, err
	}
	if retry, err := l.reserve(ctx, acctKey, l.Account, now); err != nil || retry > 0 {
		if rerr := l.record(ctx, ipKey, l.IP.Release); rerr != nil {
			return false, retry, errors.Join(err, rerr)
		}
		return false, retry, err
	}

	ok, verr := verify()

	var ipFn, acctFn func(State, time.Time) State
	switch {
	case verr != nil:
		ipFn = l.IP.Release
		acctFn = l.Account.Release
	case ok:
		ipFn = l.IP.Release
		acctFn = func(s State, t time.Time) State { return l.Account.Succeed(l.Account.Release(s, t)) }
	default:
		ipFn = func(s State, t time.Time) State { return l.IP.Fail(l.IP.Release(s, t), t) }
		acctFn = func(s State, t time.Time) State { return l.Account.Fail(l.Account.Release(s, t), t) }
	}
	rerr := errors.Join(l.record(ctx, ipKey, ipFn), l.record(ctx, acctKey, acctFn))
	if verr != nil {
		if rerr != nil {
			return false, 0, errors.Join(verr, rerr)
		}
		return false, 0, verr
	}
	if rerr != nil {
		return false, 0, rerr
	}
	return ok, 0, nil
}

// reserve reserves an attempt on key. It returns a positive wait and a
// locked_out error when refused.
func (l *Limiter) reserve(ctx context.Context, key string, p Policy, now time.Time) (time.Duration, error) {
	var retry time.Duration
	err := l.Store.Update(ctx, key, func(s State) (State, error) {
		ns, ok, ra := p.Reserve(s, now)
		retry = ra
		if !ok {
			return s, errRefused
		}
		return ns, nil
	})
	switch {
	case errors.Is(err, errRefused):
		return retry, lockedOut(retry)
	case err != nil:
		return 0, fmt.Errorf("lockout: reserve: %w", err)
	}
	return 0, nil
}

// record applies fn to key at the current time, ignoring cancellation of
// ctx (the outcome must be counted even if the client went away).
func (l *Limiter) record(ctx context.Context, key string, fn func(State, time.Time) State) error {
	ctx = context.WithoutCancel(ctx)
	err := l.Store.Update(ctx, key, func(s State) (State, error) { return fn(s, l.now()), nil })
	if err != nil {
		return fmt.Errorf("lockout: record: %w", err)
	}
	return nil
}

// lockedOut is the error of a refused attempt; Details carries the wait in
// whole seconds, rounded up, for a Retry-After header.
func lockedOut(retry time.Duration) error {
	return &domain.Error{
		Kind:    domain.ErrRateLimited,
		Code:    CodeLockedOut,
		Message: "too many failed attempts; try again later",
		Details: map[string]int{"retry_after_seconds": int(math.Ceil(retry.Seconds()))},
	}
}

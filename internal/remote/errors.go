package remote

import (
	"errors"
	"fmt"
)

// Error categories of a remote run. Every error an Executor returns unwraps
// to exactly one of them, so callers test with errors.Is and never match
// strings.
var (
	// ErrHostKeyMismatch: the host presented a key other than the pinned
	// one; nothing was sent to it. The concrete error is *HostKeyMismatchError.
	ErrHostKeyMismatch = errors.New("remote: host key mismatch")
	// ErrUnreachable: the host could not be reached, the handshake failed,
	// or the connection died mid-run.
	ErrUnreachable = errors.New("remote: host unreachable")
	// ErrAuth: the host refused the credentials.
	ErrAuth = errors.New("remote: authentication failed")
	// ErrTimeout: a dial, handshake or Command.Timeout deadline passed.
	ErrTimeout = errors.New("remote: timeout")
	// ErrIdle: the command produced no output for Command.IdleTimeout.
	ErrIdle = errors.New("remote: idle timeout")
	// ErrAborted: the caller cancelled the run (context cancelled).
	ErrAborted = errors.New("remote: aborted")
)

// HostKeyMismatchError reports a host key that differs from the pinned one,
// naming both SHA256 fingerprints so an operator can compare them with the
// host's console.
type HostKeyMismatchError struct {
	Addr     string
	Expected string // pinned fingerprint, "SHA256:…"
	Got      string // presented fingerprint, "SHA256:…"
}

func (e *HostKeyMismatchError) Error() string {
	return fmt.Sprintf("remote: host key mismatch for %s: expected %s, got %s", e.Addr, e.Expected, e.Got)
}

// Is makes errors.Is(err, ErrHostKeyMismatch) true.
func (e *HostKeyMismatchError) Is(target error) bool { return target == ErrHostKeyMismatch }

// Error is a categorised transport error: Kind is one of the categories
// above, Op names the step that failed ("dial", "handshake", "run", …) and
// Err is the underlying cause (kept for errors.Is/As, e.g.
// context.DeadlineExceeded).
type Error struct {
	Kind error
	Op   string
	Addr string
	Err  error
}

func (e *Error) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("%s: %s %s", e.Kind, e.Op, e.Addr)
	}
	return fmt.Sprintf("%s: %s %s: %v", e.Kind, e.Op, e.Addr, e.Err)
}

// Unwrap exposes both the category and the cause.
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

// Errorf builds an *Error of the given category.
func Errorf(kind error, op, addr string, cause error) error {
	return &Error{Kind: kind, Op: op, Addr: addr, Err: cause}
}

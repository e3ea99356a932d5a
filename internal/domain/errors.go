// Package domain holds LCM's shared vocabulary: entities, enums, allowed
// state transitions and error categories. It imports only the standard
// library so every layer can depend on it.
package domain

import (
	"errors"
	"fmt"
)

// Error categories. Every error that crosses a layer boundary unwraps to one
// of these; exactly one place (httpapi) maps a category to a status code.
var (
	ErrNotFound        = errors.New("not found")
	ErrInvalid         = errors.New("invalid input")
	ErrConflict        = errors.New("conflict")
	ErrForbidden       = errors.New("forbidden")
	ErrUnauthenticated = errors.New("unauthenticated")
	ErrRateLimited     = errors.New("rate limited")
	ErrUnavailable     = errors.New("unavailable")
	ErrTooLarge        = errors.New("too large")
)

// Error is a categorised error with a machine-readable code and a message
// that is safe to show to the client.
type Error struct {
	Kind    error  // one of the sentinels above
	Code    string // machine-readable code, e.g. "too_short"; may be empty
	Message string // human-readable, safe for clients
	Details any    // optional extra data for the client (e.g. all policy codes)
}

func (e *Error) Error() string {
	if e.Code != "" {
		return fmt.Sprintf("%s: %s (%s)", e.Kind, e.Message, e.Code)
	}
	return fmt.Sprintf("%s: %s", e.Kind, e.Message)
}

// Unwrap lets errors.Is match the category.
func (e *Error) Unwrap() error { return e.Kind }

// Invalid returns an ErrInvalid error with a code and message.
func Invalid(code, msg string) error { return &Error{Kind: ErrInvalid, Code: code, Message: msg} }

// NotFound returns an ErrNotFound error naming what was not found.
func NotFound(what string) error {
	return &Error{Kind: ErrNotFound, Code: "not_found", Message: what + " not found"}
}

// Conflict returns an ErrConflict error with a code and message.
func Conflict(code, msg string) error { return &Error{Kind: ErrConflict, Code: code, Message: msg} }

// Forbidden returns an ErrForbidden error with a message.
func Forbidden(msg string) error { return &Error{Kind: ErrForbidden, Code: "forbidden", Message: msg} }

// Unavailable returns an ErrUnavailable error with a code and message.
func Unavailable(code, msg string) error {
	return &Error{Kind: ErrUnavailable, Code: code, Message: msg}
}

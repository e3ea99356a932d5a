package store

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/lcmproject/lcm/internal/domain"
)

// TestTxErr: what a transaction's begin or commit reports is mapped like a
// statement's error (SQLite reports a full disk at the commit, which was a
// 500 for a job submit); fn's own errors pass unchanged.
func TestTxErr(t *testing.T) {
	own := domain.Conflict("duplicate", "job already exists")
	plain := errors.New("something else")
	for _, tc := range []struct {
		name string
		in   error
		code string // "" = passed unchanged
	}{
		{"nil", nil, ""},
		{"sqlite full at commit", errors.New("database or disk is full (13)"), "storage_full"},
		{"ENOSPC", fmt.Errorf("commit: %w", syscall.ENOSPC), "storage_full"},
		{"deadline", fmt.Errorf("begin: %w", context.DeadlineExceeded), "request_timeout"},
		{"fn's domain error", own, ""},
		{"other", plain, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := txErr(tc.in)
			if tc.code == "" {
				if got != tc.in {
					t.Fatalf("txErr(%v) = %v, want it unchanged", tc.in, got)
				}
				return
			}
			var de *domain.Error
			if !errors.As(got, &de) || de.Code != tc.code || !errors.Is(got, domain.ErrUnavailable) {
				t.Fatalf("txErr(%v) = %v, want unavailable %s", tc.in, got, tc.code)
			}
		})
	}
}

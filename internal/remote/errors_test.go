package remote

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

func TestErrorCategories(t *testing.T) {
	tests := []struct {
		name string
		err  error
		is   []error
		not  []error
	}{
		{"mismatch", fmt.Errorf("dial: %w", &HostKeyMismatchError{Addr: "h:22", Expected: "SHA256:a", Got: "SHA256:b"}),
			[]error{ErrHostKeyMismatch}, []error{ErrUnreachable, ErrAuth}},
		{"timeout with cause", Errorf(ErrTimeout, "run", "h:22", context.DeadlineExceeded),
			[]error{ErrTimeout, context.DeadlineExceeded}, []error{ErrIdle, ErrAborted}},
		{"no cause", Errorf(ErrAuth, "handshake", "h:22", nil), []error{ErrAuth}, []error{ErrTimeout}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, e := range tt.is {
				if !errors.Is(tt.err, e) {
					t.Errorf("%v: want errors.Is %v", tt.err, e)
				}
			}
			for _, e := range tt.not {
				if errors.Is(tt.err, e) {
					t.Errorf("%v: want not errors.Is %v", tt.err, e)
				}
			}
		})
	}
	var m *HostKeyMismatchError
	if !errors.As(tests[0].err, &m) || m.Got != "SHA256:b" {
		t.Fatalf("errors.As mismatch: %v", m)
	}
}

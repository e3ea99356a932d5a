package testutil

import (
	"io"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/lcmproject/lcm/internal/safe"
)

type panicCounter struct{ n atomic.Int64 }

func (c *panicCounter) RecordPanic() { c.n.Add(1) }

// CountPanics installs a recorder of recovered panics for the rest of the
// test (safe.SetRecorder, as lcm-api installs its health monitor; removed
// at cleanup) and returns its count. The recorder is process-wide: not for
// tests that run in parallel with others of their package.
func CountPanics(t testing.TB) func() int64 {
	t.Helper()
	c := &panicCounter{}
	safe.SetRecorder(c, slog.New(slog.NewTextHandler(io.Discard, nil)))
	t.Cleanup(func() { safe.SetRecorder(nil, nil) })
	return c.n.Load
}

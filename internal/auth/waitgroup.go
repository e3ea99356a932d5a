package auth

import (
	"context"
	"sync"
)

// waitGroup is a sync.WaitGroup whose Wait honours a context.
type waitGroup struct{ wg sync.WaitGroup }

func (w *waitGroup) goFn(fn func()) {
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		fn()
	}()
}

func (w *waitGroup) wait(ctx context.Context) {
	done := make(chan struct{})
	go func() { w.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

package sshexec

import (
	"context"
	"time"
)

// SlowDials makes every dial of p wait d first and report how many dials
// are in flight to seen (tests of the dial limit).
func SlowDials(p *Pool, d time.Duration, seen func(inFlight int)) {
	real := p.dial
	var n = make(chan struct{}, 1<<16)
	p.dial = func(ctx context.Context, t Target) (*Client, error) {
		n <- struct{}{}
		seen(len(n))
		defer func() { <-n }()
		time.Sleep(d)
		return real(ctx, t)
	}
}

package runner

import "sync/atomic"

// testJobHook runs at the start of every job's action, inside the job's
// panic recovery. It is nil in every normal build: only a binary built with
// the lcmtest tag sets it (testhook_lcmtest.go), so the end-to-end tests can
// make the real lcm-worker and lcm-api panic in real job goroutines.
var testJobHook atomic.Pointer[func(kind string)]

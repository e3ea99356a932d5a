package rollout

import (
	"testing"
)

// FuzzPlan: any request either validates into batches that hold every
// server exactly once (each batch non-empty, the canary first and no
// larger than asked, at most MaxBatches when accepted), or is refused with
// a domain error — never a panic or a lost server.
func FuzzPlan(f *testing.F) {
	f.Add(1000, 0, 100, 0, 0, 0)
	f.Add(7, 1, 2, 0, 2, 0)
	f.Add(8, 0, 0, 50, 0, 50)
	f.Add(1, 5, 0, 100, 0, 0)
	f.Fuzz(func(t *testing.T, n, canary, size, pct, thr, thrPct int) {
		if n <= 0 || n > 20000 {
			return
		}
		r := Request{Action: ActionSecurityUpdates, All: true, CanarySize: canary, BatchSize: size, BatchPercent: pct,
			FailureThreshold: thr, FailureThresholdPercent: thrPct}
		if _, err := r.validate(builtinActions()[0]); err != nil {
			return
		}
		bs := cut(n, canary, size, pct)
		total := 0
		for i, b := range bs {
			if b <= 0 {
				t.Fatalf("batch %d of %v is empty", i, bs)
			}
			total += b
		}
		if total != n {
			t.Fatalf("cut(%d, %d, %d, %d) = %v holds %d servers", n, canary, size, pct, bs, total)
		}
		if canary > 0 && bs[0] != min(canary, n) {
			t.Fatalf("canary %d, first batch %d", canary, bs[0])
		}
	})
}

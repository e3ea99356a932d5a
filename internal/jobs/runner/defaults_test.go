package runner

import (
	"testing"

	"github.com/lcmproject/lcm/internal/config"
)

// TestConfigDefaultIsTheWorkersDefault: all-in-one's worker.concurrency
// default and lcm-worker's are the same figure (config cannot import this
// package, so the number is written twice).
func TestConfigDefaultIsTheWorkersDefault(t *testing.T) {
	if got := config.Defaults().Worker.Concurrency; got != DefaultConcurrency {
		t.Fatalf("config default %d, runner default %d", got, DefaultConcurrency)
	}
}

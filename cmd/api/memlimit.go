package main

import (
	"log/slog"
	"os"
	"runtime/debug"
)

// applyMemoryLimit sets the Go runtime's soft memory limit from
// memory_limit_mb (docs/configuration.md): the garbage collector then
// keeps the process near what it really holds instead of letting the heap
// double between collections during a fleet-wide run. GOMEMLIMIT in the
// environment wins (the runtime read it already); 0 means no limit. The
// limit covers Go's own memory (heap, stacks, runtime); the pure-Go SQLite
// lives in it too.
func applyMemoryLimit(mb int, log *slog.Logger) {
	if os.Getenv("GOMEMLIMIT") != "" {
		log.Info("memory limit from GOMEMLIMIT", "bytes", debug.SetMemoryLimit(-1))
		return
	}
	if mb <= 0 {
		return
	}
	debug.SetMemoryLimit(int64(mb) << 20)
	log.Info("memory limit", "mb", mb)
}

// returnMemory gives the memory a fleet-wide run used back to the system
// once the worker's SSH pool has drained: the Go runtime would otherwise
// return it slowly, over minutes, and an idle lcm-api would keep the
// run's peak. It costs one full collection.
func returnMemory(log *slog.Logger) {
	debug.FreeOSMemory()
	log.Debug("SSH pool drained; freed memory returned to the system")
}

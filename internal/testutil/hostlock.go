package testutil

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// LockTestHost serialises the tests that use one test host across test
// binaries (go test runs packages in parallel): it holds an exclusive
// flock until the test ends. Call it before registering the host's reset,
// so the reset runs before the lock is released.
func LockTestHost(t testing.TB, h TestHost) {
	t.Helper()
	path := filepath.Join(os.TempDir(), fmt.Sprintf("lcm-testhost-%d.lock", h.Index))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatalf("test host lock: %v", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		t.Fatalf("test host lock: %v", err)
	}
	t.Cleanup(func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	})
}

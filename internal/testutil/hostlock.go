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
//
// Every package that uses a host another package resets holds its lock
// (docs/testing.md, "Test-host allocation").
func LockTestHost(t testing.TB, h TestHost) {
	t.Helper()
	LockTestHostAt(t, h.Index)
}

// LockTestHostAt is LockTestHost by host number, for a test that must hold
// the lock before it looks at the host (TestHostAt waits only a few
// seconds for a host that is being reset).
func LockTestHostAt(t testing.TB, i int) {
	t.Helper()
	path := filepath.Join(os.TempDir(), fmt.Sprintf("lcm-testhost-%d.lock", i))
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

// Package testutil holds helpers for tests only: starting real binaries,
// databases, NATS and test hosts, and waiting for conditions. Import it only
// from _test.go files.
package testutil

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// InCI reports whether the tests run in CI, where a missing dependency is a
// failure rather than a reason to skip.
func InCI() bool { return os.Getenv("CI") == "true" }

// Unavailable marks the test as unable to run because a dependency is
// missing: it fails in CI and skips elsewhere.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	if InCI() {
		t.Fatalf("missing test dependency (CI never skips): "+format, args...)
	}
	t.Skipf("missing test dependency: "+format, args...)
}

// RequireTool returns the path of an executable or marks the test unavailable.
func RequireTool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Unavailable(t, "%s not in PATH", name)
	}
	return p
}

// RequireRoot marks the test unavailable unless it runs as root.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		Unavailable(t, "needs root")
	}
}

// WaitFor polls cond every 10 ms until it returns true or the timeout
// passes, then fails the test with msg. Use it instead of sleeps.
func WaitFor(t testing.TB, timeout time.Duration, msg string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for: %s", timeout, msg)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

//go:build lcmtest

package runner

import "os"

// Test builds only (go build -tags lcmtest): with LCM_TEST_PANIC_JOBS=1 in
// the environment every job panics where its action would run, so the
// self-healing tests prove that the panic is recovered, the job fails with
// a clear reason, and 10 panics in 15 minutes end the process with exit
// code 70. Production builds do not contain this file; the build tag, not
// only the variable, keeps the trigger out of them.
func init() {
	if os.Getenv("LCM_TEST_PANIC_JOBS") == "1" {
		f := func(kind string) { panic("lcmtest: injected panic in a " + kind + " job") }
		testJobHook.Store(&f)
	}
}

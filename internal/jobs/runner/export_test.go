package runner

// SetTestJobHook sets the job hook for the tests of runner_test (the
// lcmtest build tag sets it in test binaries of the real programs).
func SetTestJobHook(f func(kind string)) {
	if f == nil {
		testJobHook.Store(nil)
		return
	}
	testJobHook.Store(&f)
}

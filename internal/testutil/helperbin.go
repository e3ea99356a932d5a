package testutil

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// EnvHelperBin names the lcm-helper binary the restrict-sudo action
// uploads (actions.HelperBinary reads it for the worker's architecture).
const EnvHelperBin = "LCM_HELPER_BIN"

var (
	helperOnce sync.Once
	helperBin  string
	helperErr  error
)

// BuildHelper builds cmd/helper once per test binary (static, as make
// does) and points $LCM_HELPER_BIN at it for the calling test, so the
// real restrict-sudo action can install it on a test host.
func BuildHelper(t testing.TB) string {
	t.Helper()
	helperOnce.Do(func() {
		dir, err := os.MkdirTemp("", "lcm-helper-")
		if err != nil {
			helperErr = err
			return
		}
		helperBin = filepath.Join(dir, "lcm-helper")
		cmd := exec.Command("go", "build", "-trimpath", "-o", helperBin, "github.com/lcmproject/lcm/cmd/helper")
		cmd.Env = append(cmd.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			helperErr = errors.New(string(out))
		}
	})
	if helperErr != nil {
		t.Fatalf("build helper: %v", helperErr)
	}
	t.Setenv(EnvHelperBin, helperBin)
	return helperBin
}

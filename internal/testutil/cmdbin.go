package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	cmdBinMu   sync.Mutex
	cmdBinPath = map[string]string{}
)

// CmdBinary returns the path of the lcm-<name> binary of ./cmd/<name>:
// the one next to $LCM_API_BIN when `make build` put it there, otherwise
// one built from this checkout (static, as make builds it) once per test
// process.
func CmdBinary(t testing.TB, name string) string {
	t.Helper()
	if api := os.Getenv("LCM_API_BIN"); api != "" {
		p := filepath.Join(filepath.Dir(api), "lcm-"+name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p
		}
	}
	cmdBinMu.Lock()
	defer cmdBinMu.Unlock()
	if p, ok := cmdBinPath[name]; ok {
		return p
	}
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "lcm-"+name+"-bin-")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "lcm-"+name)
	cmd := exec.Command("go", "build", "-trimpath", "-o", p, "./cmd/"+name)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatal(fmt.Errorf("go build ./cmd/%s: %v\n%s", name, err, out))
	}
	cmdBinPath[name] = p
	return p
}

package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps: lcm-helper links the standard library and LCM's stdlib-only
// helper and version packages, nothing else (it runs as root on every
// restricted server: small, auditable, static).
func TestDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{"github.com/lcmproject/lcm/cmd/helper": true, "github.com/lcmproject/lcm/internal/helper": true,
		"github.com/lcmproject/lcm/internal/version": true}
	for _, dep := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.Contains(strings.Split(dep, "/")[0], ".") && !allowed[dep] {
			t.Errorf("lcm-helper links %s (only the standard library is allowed)", dep)
		}
	}
}

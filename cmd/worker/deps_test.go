package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps: lcm-worker holds no database and no HTTP stack.
func TestDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, forbidden := range []string{"gorm.io/gorm", "github.com/gin-gonic/gin", "github.com/lcmproject/lcm/internal/store",
		"github.com/lcmproject/lcm/internal/secret"} {
		for _, dep := range strings.Split(string(out), "\n") {
			if dep == forbidden {
				t.Errorf("lcm-worker links %s", forbidden)
			}
		}
	}
}

package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps keeps server code out of the agent binary (tailscale's deptest):
// the agent runs on every managed server, so its size and attack surface
// matter, and it must never carry a web framework, an ORM, NATS or the
// MQTT broker.
func TestDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	forbidden := []string{
		"github.com/gin-gonic/gin",
		"gorm.io/",
		"github.com/nats-io/nats-server",
		"github.com/nats-io/nats.go",
		"github.com/mochi-mqtt/",
		"github.com/lcmproject/lcm/internal/bus",
		"github.com/lcmproject/lcm/internal/store",
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps printed too little to trust:\n%s", out)
	}
	for _, dep := range deps {
		for _, bad := range forbidden {
			if strings.HasPrefix(dep, bad) {
				t.Errorf("lcm-agent links %s (forbidden prefix %s)", dep, bad)
			}
		}
	}
}

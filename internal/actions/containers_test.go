package actions

import (
	"strings"
	"testing"

	"github.com/lcmproject/lcm/internal/containers"
)

// TestStaleContainers: after a compose pull, a container whose image
// reference now names another image runs a stale image; podman-compose
// is the tool that needs to be told to recreate it.
func TestStaleContainers(t *testing.T) {
	proj := &containers.ComposeProject{Engine: containers.Podman, Name: "shop"}
	inv := containers.Inventory{
		Containers: []containers.Container{
			{Engine: containers.Podman, Name: "shop_web_1", Image: "reg:5000/app:v1", ImageID: "old", ComposeProject: "shop"},
			{Engine: containers.Podman, Name: "shop_db_1", Image: "reg:5000/db", ImageID: "db1", ComposeProject: "shop"},
			{Engine: containers.Podman, Name: "other", Image: "reg:5000/app:v1", ImageID: "old"},
		},
		Images: []containers.Image{
			{Engine: containers.Podman, ID: "new", Repository: "reg:5000/app", Tag: "v1"},
			{Engine: containers.Podman, ID: "old", Repository: "<none>", Tag: "<none>", Dangling: true},
			{Engine: containers.Podman, ID: "db1", Repository: "reg:5000/db", Tag: "latest"},
		},
	}
	if got := strings.Join(staleContainers(inv, proj), ","); got != "shop_web_1" {
		t.Fatalf("stale %q, want shop_web_1", got)
	}
	for tool, want := range map[string]bool{"docker compose": true, "docker-compose": true, "podman-compose": false, "podman compose": false} {
		if recreatesChanged(tool) != want {
			t.Errorf("recreatesChanged(%q) = %v", tool, !want)
		}
	}
}

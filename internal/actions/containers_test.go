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

// TestComposeCommand: the command line of every compose front end LCM
// drives. Compose v2 (`docker compose`) takes the project directory as a
// flag; docker-compose v1, `podman compose` and podman-compose run in it.
// Names and paths are shell-quoted.
func TestComposeCommand(t *testing.T) {
	p := ContainerParams{Project: "shop", WorkingDir: "/srv/my shop", ConfigFiles: []string{"/srv/my shop/compose.yml", "/srv/my shop/override.yml"}}
	bare := ContainerParams{Project: "shop"}
	tests := []struct {
		tool string
		p    ContainerParams
		verb string
		want string
	}{
		{"docker compose", p, "pull", `cd '/srv/my shop' && sudo -n docker compose --project-directory '/srv/my shop' -p 'shop' -f '/srv/my shop/compose.yml' -f '/srv/my shop/override.yml' pull`},
		{"docker compose", p, "up -d", `cd '/srv/my shop' && sudo -n docker compose --project-directory '/srv/my shop' -p 'shop' -f '/srv/my shop/compose.yml' -f '/srv/my shop/override.yml' up -d`},
		{"docker-compose", p, "pull", `cd '/srv/my shop' && sudo -n docker-compose -p 'shop' -f '/srv/my shop/compose.yml' -f '/srv/my shop/override.yml' pull`},
		{"docker-compose", p, "up -d", `cd '/srv/my shop' && sudo -n docker-compose -p 'shop' -f '/srv/my shop/compose.yml' -f '/srv/my shop/override.yml' up -d`},
		{"podman compose", p, "up -d", `cd '/srv/my shop' && sudo -n podman compose -p 'shop' -f '/srv/my shop/compose.yml' -f '/srv/my shop/override.yml' up -d`},
		{"podman-compose", p, "pull", `cd '/srv/my shop' && sudo -n podman-compose -p 'shop' -f '/srv/my shop/compose.yml' -f '/srv/my shop/override.yml' pull`},
		{"docker compose", bare, "pull", `sudo -n docker compose -p 'shop' pull`},
		{"docker-compose", bare, "up -d", `sudo -n docker-compose -p 'shop' up -d`},
		{"podman-compose", ContainerParams{Project: "it's"}, "pull", `sudo -n podman-compose -p 'it'\''s' pull`},
	}
	for _, tc := range tests {
		if got := composeCommand(tc.tool, tc.p, tc.verb); got != tc.want {
			t.Errorf("%s %s:\n got %s\nwant %s", tc.tool, tc.verb, got, tc.want)
		}
	}
}

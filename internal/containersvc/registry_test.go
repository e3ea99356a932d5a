package containersvc

import (
	"context"
	"testing"

	"github.com/lcmproject/lcm/internal/containers"
	"github.com/lcmproject/lcm/internal/registry"
	"github.com/lcmproject/lcm/internal/testutil"
)

// TestRegistryCheckerOnRealRegistry runs the containers' newer-image check
// through the registry client against Debian's docker-registry: the image a
// container runs is current, then the tag is pushed again with other
// content and the container's image has an update; an unknown tag is a
// check error, never "up to date".
func TestRegistryCheckerOnRealRegistry(t *testing.T) {
	reg := testutil.StartRegistry(t, testutil.RegistryOptions{})
	d1 := reg.PushImage(t, "shop/web", "1", testutil.TestImage{Files: map[string]string{"v": "1"}}, "")
	plain := func(context.Context, string) (registry.Endpoint, bool, error) {
		return registry.Endpoint{PlainHTTP: true}, true, nil
	}
	check := func() []containers.ImageUpdate {
		c := RegistryChecker(registry.New(registry.Options{Endpoints: plain}))
		ups, err := c.Check(context.Background(), []containers.ImageRef{
			{Engine: containers.Podman, Image: reg.Host + "/shop/web:1", Digest: d1},
			{Engine: containers.Podman, Image: reg.Host + "/shop/web:9", Digest: d1},
		})
		if err != nil || len(ups) != 2 {
			t.Fatalf("check: %v %+v", err, ups)
		}
		return ups
	}
	inv := containers.Inventory{Containers: []containers.Container{{Engine: containers.Podman, Name: "web", Image: reg.Host + "/shop/web:1"}}}

	ups := check()
	if ups[0].UpdateAvailable || ups[0].Error != "" || ups[0].RemoteDigest != d1 {
		t.Fatalf("current image: %+v", ups[0])
	}
	if ups[1].Error == "" {
		t.Fatalf("unknown tag not reported as an error: %+v", ups[1])
	}
	inv.ApplyUpdates(ups)
	if got := inv.Containers[0].Update; got != containers.UpdateUpToDate {
		t.Fatalf("container update state %q, want up_to_date", got)
	}

	d2 := reg.PushImage(t, "shop/web", "1", testutil.TestImage{Files: map[string]string{"v": "2"}}, "")
	ups = check()
	if !ups[0].UpdateAvailable || ups[0].RemoteDigest != d2 {
		t.Fatalf("after a new push: %+v (want remote %s)", ups[0], d2)
	}
	inv.ApplyUpdates(ups)
	if got := inv.Containers[0].Update; got != containers.UpdateAvailable {
		t.Fatalf("container update state %q, want update_available", got)
	}
}

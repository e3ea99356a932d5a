package containersvc

import (
	"context"
	"strings"

	"github.com/lcmproject/lcm/internal/containers"
	"github.com/lcmproject/lcm/internal/registry"
)

// RegistryCheck is what the registry service offers
// (registrysvc.Service.Check): one result per reference, in order.
type RegistryCheck interface {
	Check(ctx context.Context, refs []registry.ImageRef) []registry.Result
}

// RegistryChecker adapts the registry service to the containers'
// UpdateChecker: update_available and up_to_date map one to one; an
// unknown state (unauthorized, not found, rate limited, unreachable …)
// becomes a check error with the registry's reason, never "up to date".
func RegistryChecker(r RegistryCheck) containers.UpdateChecker { return registryChecker{r} }

type registryChecker struct{ r RegistryCheck }

func (c registryChecker) Check(ctx context.Context, images []containers.ImageRef) ([]containers.ImageUpdate, error) {
	refs := make([]registry.ImageRef, len(images))
	for i, im := range images {
		refs[i] = registry.ImageRef{Ref: im.Image, LocalDigests: im.Digests}
		if len(im.Digests) == 0 && im.Digest != "" {
			refs[i].LocalDigests = []string{im.Digest}
		}
	}
	res := c.r.Check(ctx, refs)
	out := make([]containers.ImageUpdate, 0, len(images))
	for i, im := range images {
		u := containers.ImageUpdate{Image: im.Image, LocalDigest: im.Digest}
		if i >= len(res) {
			u.Error = "no answer from the registry check"
			out = append(out, u)
			continue
		}
		r := res[i]
		u.RemoteDigest, u.CheckedAt = r.RemoteDigest, r.CheckedAt
		switch r.State {
		case registry.StateUpdateAvailable:
			u.UpdateAvailable = true
		case registry.StateUpToDate:
		default:
			u.Error = strings.TrimSpace(string(r.Reason) + ": " + r.Detail)
			if r.Detail == "" {
				u.Error = string(r.Reason)
			}
			if u.Error == "" {
				u.Error = "unknown"
			}
		}
		out = append(out, u)
	}
	return out, nil
}

package updates

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/lcmproject/lcm/internal/domain"
)

// Installation kinds of SelfUpdate.
const (
	InstalledPackage = "debian_package" // /usr/lib/lcm/lcm-api from the lcm package
	InstalledBinary  = "binary"         // a binary installed by hand (install.sh, a container)
)

// selfUpdateReason says why LCM installs no update itself.
const selfUpdateReason = "LCM does not install its own updates: lcm-api runs as an unprivileged service account " +
	"without the rights to replace its package (by design), so an upgrade is done with the package manager " +
	"by an administrator of the host."

// SelfUpdate is what GET /api/v1/system/self-update answers. The reference
// product installs its .deb from the UI; LCM deliberately does not (see
// selfUpdateReason) and says instead how to install the update the last
// check found, for how this instance is installed.
type SelfUpdate struct {
	Supported       bool     `json:"supported"`
	Reason          string   `json:"reason"`
	Installation    string   `json:"installation"`
	Current         string   `json:"current"`
	Latest          string   `json:"latest,omitempty"`
	UpdateAvailable bool     `json:"update_available"`
	Packages        []string `json:"packages"`
	Instructions    []string `json:"instructions"`
	Docs            string   `json:"docs"`
}

// installation tells a packaged lcm-api from one installed by hand.
func installation(executable string) string {
	if filepath.Dir(executable) == "/usr/lib/lcm" {
		return InstalledPackage
	}
	return InstalledBinary
}

// SelfUpdate answers the self-update status: not supported, and the steps
// that install the available update (from the stored last check).
func (s *Service) SelfUpdate(ctx context.Context) (SelfUpdate, error) {
	in, err := s.Info(ctx)
	if err != nil {
		return SelfUpdate{}, err
	}
	su := SelfUpdate{Reason: selfUpdateReason, Installation: installation(s.o.Executable), Current: s.o.Current,
		UpdateAvailable: in.UpdateAvailable, Packages: []string{}, Docs: "updates"}
	target := "the new version"
	if in.Last != nil && in.Last.Latest != nil {
		su.Latest = in.Last.Latest.Version
		if in.UpdateAvailable {
			target = su.Latest
			for name := range in.Last.Latest.Checksums {
				su.Packages = append(su.Packages, name)
			}
			sort.Strings(su.Packages)
		}
	}
	backup := "Take a backup first (Backups page); a backup of the newer version cannot be restored by this one."
	if su.Installation == InstalledPackage {
		debs := "./lcm_<version>_<arch>.deb"
		if len(su.Packages) > 0 {
			var ours []string
			for _, p := range su.Packages {
				if strings.HasPrefix(p, "lcm_") || strings.HasPrefix(p, "lcm-worker_") {
					ours = append(ours, "./"+p)
				}
			}
			if len(ours) > 0 {
				debs = strings.Join(ours, " ")
			}
		}
		su.Instructions = []string{
			backup,
			fmt.Sprintf("Download the packages of %s and compare their SHA-256 with the release feed's (GET /api/v1/system/update-info lists them).", target),
			"On this host, as root: apt-get install " + debs + " (lcm-worker only where a worker runs).",
			"The package restarts lcm-api; the new version migrates the database on its first start and signs everyone out.",
		}
	} else {
		su.Instructions = []string{
			backup,
			fmt.Sprintf("Stop lcm-api, replace its binary with the one of %s, and start it again (install.md, Upgrade).", target),
			"The new version migrates the database on its first start and signs everyone out.",
		}
	}
	return su, nil
}

// StartSelfUpdate is POST /api/v1/system/self-update: always refused with
// 409 self_update_unsupported, naming what to do instead.
func (s *Service) StartSelfUpdate(context.Context) error {
	return domain.Conflict("self_update_unsupported", selfUpdateReason+" See GET /api/v1/system/self-update for the steps (Help: updates).")
}

package inventory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/facts"
	"github.com/lcmproject/lcm/internal/store"
)

// Bounds of the opt-in volume list: a server with more monitored mounts
// than this is better served by an alert rule than by history charts.
const (
	maxMonitoredVolumes = 32
	maxMountLen         = 255
)

// Volume is one mounted filesystem as the last refresh saw it.
type Volume struct {
	Mount      string `json:"mount"`
	Device     string `json:"device"`
	Type       string `json:"type"`
	SizeBytes  uint64 `json:"size_bytes"`
	UsedBytes  uint64 `json:"used_bytes"`
	AvailBytes uint64 `json:"avail_bytes"`
	// Network filesystems are shown but never sampled.
	Network bool `json:"network"`
	// Monitored: its storage history is kept ("/" always is).
	Monitored bool `json:"monitored"`
}

// Volumes is the answer of GET /servers/:id/storage-volumes.
type Volumes struct {
	// Monitored lists the sampled mounts: "/" and the opt-in ones, also
	// those the last refresh did not see (unmounted for now).
	Monitored []string `json:"monitored"`
	// Mounts are the filesystems of the last refresh ([] before the first).
	Mounts []Volume `json:"mounts"`
}

// Volumes returns the filesystems of a server visible to p and which of
// them have a storage history.
func (s *Service) Volumes(ctx context.Context, p *domain.Principal, serverID string) (Volumes, error) {
	fss, err := s.lastFilesystems(ctx, p, serverID)
	if err != nil {
		return Volumes{}, err
	}
	opted, err := s.store.MonitoredVolumes(ctx, serverID)
	if err != nil {
		return Volumes{}, err
	}
	v := Volumes{Monitored: append([]string{"/"}, opted...), Mounts: []Volume{}}
	seen := map[string]bool{}
	for _, fs := range fss {
		if seen[fs.MountPoint] {
			continue // overmounts: the first line wins, as in sampling
		}
		seen[fs.MountPoint] = true
		v.Mounts = append(v.Mounts, Volume{Mount: fs.MountPoint, Device: fs.Device, Type: fs.Type, SizeBytes: fs.SizeBytes,
			UsedBytes: fs.UsedBytes, AvailBytes: fs.AvailBytes, Network: fs.Network,
			Monitored: !fs.Network && slices.Contains(v.Monitored, fs.MountPoint)})
	}
	return v, nil
}

// SetVolumes replaces the opt-in mounts of a server visible to p. "/" is
// always monitored and may be listed or not; a network filesystem (as the
// last refresh saw it) is refused, as are relative or unclean paths.
func (s *Service) SetVolumes(ctx context.Context, p *domain.Principal, serverID string, mounts []string) (Volumes, error) {
	if len(mounts) > maxMonitoredVolumes+1 {
		return Volumes{}, domain.Invalid("too_many_volumes", fmt.Sprintf("at most %d volumes besides / can be monitored", maxMonitoredVolumes))
	}
	fss, err := s.lastFilesystems(ctx, p, serverID)
	if err != nil {
		return Volumes{}, err
	}
	network := map[string]bool{}
	for _, fs := range fss {
		network[fs.MountPoint] = network[fs.MountPoint] || fs.Network
	}
	var keep []string
	for _, m := range mounts {
		if err := validMount(m); err != nil {
			return Volumes{}, err
		}
		if network[m] {
			return Volumes{}, domain.Invalid("network_volume", fmt.Sprintf("%s is a network filesystem; those are shown but not monitored", m))
		}
		if m != "/" && !slices.Contains(keep, m) {
			keep = append(keep, m)
		}
	}
	if len(keep) > maxMonitoredVolumes {
		return Volumes{}, domain.Invalid("too_many_volumes", fmt.Sprintf("at most %d volumes besides / can be monitored", maxMonitoredVolumes))
	}
	if err := s.store.SetMonitoredVolumes(ctx, store.ScopeOf(p), serverID, keep); err != nil {
		return Volumes{}, err
	}
	return s.Volumes(ctx, p, serverID)
}

// validMount accepts absolute, clean paths of printable characters.
func validMount(m string) error {
	bad := func(why string) error {
		return domain.Invalid("invalid_mount", fmt.Sprintf("mount %q: %s", m, why))
	}
	switch {
	case m == "":
		return bad("empty")
	case len(m) > maxMountLen:
		return bad(fmt.Sprintf("longer than %d bytes", maxMountLen))
	case !strings.HasPrefix(m, "/"):
		return bad("must be an absolute path")
	case path.Clean(m) != m:
		return bad("must be a clean path (no trailing slash, . or ..)")
	case strings.ContainsFunc(m, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return bad("contains control characters")
	}
	return nil
}

// lastFilesystems are the filesystems of the last refresh of a server
// visible to p (none before the first refresh).
func (s *Service) lastFilesystems(ctx context.Context, p *domain.Principal, serverID string) ([]facts.Filesystem, error) {
	r, err := s.store.ServerFactsOf(ctx, store.ScopeOf(p), serverID)
	if errors.Is(err, domain.ErrNotFound) {
		// Tell "no such server" from "not refreshed yet".
		if verr := s.store.ServerVisible(ctx, store.ScopeOf(p), serverID); verr != nil {
			return nil, verr
		}
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var f facts.Facts
	if err := json.Unmarshal(r.FactsJSON, &f); err != nil {
		return nil, fmt.Errorf("inventory: stored facts: %w", err)
	}
	return f.Filesystems, nil
}

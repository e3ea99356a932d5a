package dnsserver

import (
	"fmt"
	"maps"

	"github.com/lcmproject/lcm/internal/records"
)

// Update returns a new snapshot in which the zones in put are rebuilt
// (added, or replaced by origin) and the origins in drop are removed; s is
// not modified and the zones not named are shared, so a change to one zone
// costs one zone's build rather than all of them. A zone in put that does
// not validate fails the update and the caller keeps serving s.
func (s *Snapshot) Update(put []ZoneInput, drop []string) (*Snapshot, error) {
	n := &Snapshot{zones: make(map[string]*zone, len(s.zones)+len(put))}
	maps.Copy(n.zones, s.zones)
	for _, o := range drop {
		origin, err := records.NormalizeOrigin(o)
		if err != nil {
			return nil, err
		}
		delete(n.zones, origin)
	}
	seen := make(map[string]bool, len(put))
	for _, in := range put {
		z, err := buildZone(in)
		if err != nil {
			return nil, err
		}
		if seen[z.origin] {
			return nil, fmt.Errorf("dnsserver: zone %s defined twice", z.origin)
		}
		seen[z.origin] = true
		n.zones[z.origin] = z
	}
	return n, nil
}

// Current returns the snapshot being served.
func (s *Server) Current() *Snapshot { return s.snap.Load() }

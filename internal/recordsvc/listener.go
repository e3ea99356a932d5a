package recordsvc

import (
	"context"
	"net/netip"
	"sort"

	"github.com/lcmproject/lcm/internal/dnsserver"
)

// ListenerStatus is what the embedded DNS listener serves right now: off
// when dns.listen is empty; otherwise the bound address (UDP and TCP on the
// same port), the origins in the served snapshot and who may transfer them.
type ListenerStatus struct {
	Enabled   bool
	Addr      string
	Zones     []string
	AXFRAllow []string
}

// SetListener records the started DNS listener so ListenerStatus can report
// it; the wiring calls it once after Start.
func (s *Service) SetListener(srv *dnsserver.Server, axfrAllow []netip.Prefix) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listener = srv
	s.axfrAllow = axfrAllow
}

// ListenerStatus reports the DNS listener. Any signed-in caller may read it:
// it names the listener and the served origins, nothing a `dig` against the
// listener would not show.
func (s *Service) ListenerStatus(context.Context) ListenerStatus {
	s.mu.RLock()
	srv, allow := s.listener, s.axfrAllow
	s.mu.RUnlock()
	if srv == nil {
		return ListenerStatus{Zones: []string{}, AXFRAllow: []string{}}
	}
	st := ListenerStatus{Enabled: true, Addr: srv.Addr(), Zones: []string{}, AXFRAllow: make([]string, 0, len(allow))}
	if snap := srv.Current(); snap != nil {
		st.Zones = append(st.Zones, snap.Zones()...)
	}
	sort.Strings(st.Zones)
	for _, p := range allow {
		st.AXFRAllow = append(st.AXFRAllow, p.String())
	}
	return st
}

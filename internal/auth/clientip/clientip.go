// Package clientip holds LCM's one function that decides a request's client
// address, used for both the IP allowlist and the lockouts, and the
// allowlist itself.
package clientip

import (
	"net/netip"
	"strings"
)

// ClientIP returns the client address of a request.
//
// Without trustProxy it is the host part of remoteAddr (the TCP peer). With
// trustProxy it is the right-most entry of X-Forwarded-For: the address the
// trusted reverse proxy itself saw and appended. Entries to its left were
// sent by the client and can be forged, so they are never used. This is
// correct for exactly one trusted proxy in front of the listener; enable
// trust_proxy_header only when the listener is reachable through that proxy
// alone, or any client can choose its address.
//
// xff is the X-Forwarded-For value; with several header lines, pass them
// joined with "," (strings.Join(r.Header.Values("X-Forwarded-For"), ",")).
// An entry may carry a port ("203.0.113.7:4711", "[2001:db8::1]:4711").
// When trustProxy is set but the header is missing or its last entry is not
// an address, the TCP peer is used.
//
// The result is normalised: IPv4-mapped IPv6 addresses become IPv4 and zones
// are dropped. If nothing parses, it is the zero netip.Addr (IsValid false),
// which an allowlist never allows and which all such clients share as one
// lockout key.
func ClientIP(remoteAddr string, xff string, trustProxy bool) netip.Addr {
	if trustProxy && xff != "" {
		last := xff
		if i := strings.LastIndexByte(xff, ','); i >= 0 {
			last = xff[i+1:]
		}
		if a, ok := parse(strings.TrimSpace(last)); ok {
			return a
		}
	}
	a, _ := parse(strings.TrimSpace(remoteAddr))
	return a
}

// parse accepts an address with or without a port and normalises it.
func parse(s string) (netip.Addr, bool) {
	if s == "" {
		return netip.Addr{}, false
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		ap, err2 := netip.ParseAddrPort(s)
		if err2 != nil {
			// "[2001:db8::1]" without a port.
			if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
				return parse(s[1 : len(s)-1])
			}
			return netip.Addr{}, false
		}
		a = ap.Addr()
	}
	return normalize(a), true
}

// normalize unmaps IPv4-mapped IPv6 and drops the zone.
func normalize(a netip.Addr) netip.Addr { return a.Unmap().WithZone("") }

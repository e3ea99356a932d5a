package facts

import (
	"net/netip"
	"strconv"
	"strings"
)

// addresses reads "ip -o addr" or, on hosts without iproute2, the
// hostname -I, /proc/net/fib_trie and /proc/net/if_inet6 fallbacks.
// Loopback (scope host) addresses are dropped: they say nothing about
// the server.
func (p *parser) addresses() []Address {
	if _, ok := p.secs["ip-addr"]; ok {
		return p.ipAddr()
	}
	var out []Address
	seen := map[string]int{}
	add := func(a Address) {
		if i, ok := seen[a.Address]; ok {
			if out[i].Interface == "" {
				out[i] = a
			}
			return
		}
		seen[a.Address] = len(out)
		out = append(out, a)
	}
	for _, a := range p.ifInet6() {
		add(a)
	}
	for _, l := range p.secs["ipv4-local"] {
		if a, ok := plainAddr(strings.TrimSpace(l)); ok {
			add(a)
		}
	}
	for _, l := range p.secs["hostname-i"] {
		for _, s := range strings.Fields(l) {
			if a, ok := plainAddr(s); ok {
				add(a)
			}
		}
	}
	if len(out) == 0 {
		p.warn("no IP address found")
	}
	return out
}

// plainAddr makes an Address from a bare IP without interface or prefix.
func plainAddr(s string) (Address, bool) {
	ip, err := netip.ParseAddr(s)
	if err != nil || ip.IsLoopback() {
		return Address{}, false
	}
	a := Address{Family: "inet", Address: ip.String(), PrefixLen: -1, Scope: "global"}
	if ip.Is6() {
		a.Family = "inet6"
	}
	if ip.IsLinkLocalUnicast() {
		a.Scope = "link"
	}
	return a, true
}

// ipAddr parses lines like
// "2: eth0    inet 10.0.0.5/24 brd 10.0.0.255 scope global eth0\       valid_lft …".
func (p *parser) ipAddr() []Address {
	var out []Address
	for i, l := range p.lines("ip-addr") {
		f := strings.Fields(l)
		if len(f) < 4 || (f[2] != "inet" && f[2] != "inet6") {
			if strings.TrimSpace(l) != "" {
				p.warn("ip-addr line %d unreadable", i+1)
			}
			continue
		}
		pfx, err := netip.ParsePrefix(f[3])
		if err != nil {
			p.warn("ip-addr line %d: bad address %q", i+1, f[3])
			continue
		}
		ifname, _, _ := strings.Cut(f[1], "@")
		a := Address{Interface: ifname, Family: f[2], Address: pfx.Addr().String(), PrefixLen: pfx.Bits()}
		for j := 4; j+1 < len(f); j++ {
			if f[j] == "scope" {
				a.Scope = f[j+1]
				break
			}
		}
		if a.Scope == "host" || pfx.Addr().IsLoopback() {
			continue
		}
		out = append(out, a)
	}
	return out
}

// ifInet6 parses /proc/net/if_inet6: "fd000000000000000000000000000002 04 40 00 82 eth0"
// (address hex, ifindex, prefix length hex, scope hex, flags, name).
func (p *parser) ifInet6() []Address {
	var out []Address
	for _, l := range p.secs["if-inet6"] {
		f := strings.Fields(l)
		if len(f) < 6 || len(f[0]) != 32 {
			continue
		}
		var b [16]byte
		ok := true
		for i := range b {
			n, err := strconv.ParseUint(f[0][2*i:2*i+2], 16, 8)
			if err != nil {
				ok = false
				break
			}
			b[i] = byte(n)
		}
		plen, err1 := strconv.ParseUint(f[2], 16, 8)
		scope, err2 := strconv.ParseUint(f[3], 16, 8)
		if !ok || err1 != nil || err2 != nil || plen > 128 {
			continue
		}
		ip := netip.AddrFrom16(b)
		if ip.IsLoopback() {
			continue
		}
		a := Address{Interface: f[5], Family: "inet6", Address: ip.String(), PrefixLen: int(plen), Scope: "global"}
		switch scope & 0xf0 {
		case 0x20:
			a.Scope = "link"
		case 0x10:
			a.Scope = "host"
		case 0x40:
			a.Scope = "site"
		}
		out = append(out, a)
	}
	return out
}

package firewall

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// ListeningScript lists listening TCP and UDP sockets with their process.
// Processes of other users need root: the action runs it under sudo where
// it may and falls back to this plain form (then without those names).
const ListeningCommand = "ss -tulpnH"

// Socket is one listening socket.
type Socket struct {
	Proto   string `json:"proto"` // tcp or udp
	Address string `json:"address"`
	Port    int    `json:"port"`
	Process string `json:"process,omitempty"`
	PID     int    `json:"pid,omitempty"`
	// Public: bound to a wildcard or a non-loopback address, so reachable
	// from the network unless a firewall stops it.
	Public bool `json:"public"`
	// Open is what the firewall makes of it (Exposure): "world" (reachable
	// from anywhere), "restricted" (only from listed sources), "blocked"
	// (the active firewall allows nothing to it) or "local" (loopback).
	Open string `json:"open,omitempty"`
}

// Exposure values.
const (
	OpenWorld      = "world"
	OpenRestricted = "restricted"
	OpenBlocked    = "blocked"
	OpenLocal      = "local"
)

// MaxSockets bounds one scan (a server with more listeners is unusual;
// the rest is cut, the scan says so).
const MaxSockets = 4096

// ParseListening parses `ss -tulpnH` output. Unknown lines are an error:
// the output is recorded for a reason.
func ParseListening(out string) ([]Socket, error) {
	var socks []Socket
	for n, line := range strings.Split(out, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		s, err := parseSSLine(line)
		if err != nil {
			return nil, fmt.Errorf("ss line %d: %w", n+1, err)
		}
		if len(socks) == MaxSockets {
			break
		}
		socks = append(socks, s)
	}
	return socks, nil
}

// parseSSLine reads "tcp LISTEN 0 128 127.0.0.1:5432 0.0.0.0:* users:((…))".
func parseSSLine(line string) (Socket, error) {
	f := strings.Fields(line)
	if len(f) < 6 {
		return Socket{}, fmt.Errorf("%d fields, want at least 6", len(f))
	}
	var s Socket
	switch f[0] {
	case "tcp", "udp":
		s.Proto = f[0]
	default:
		return Socket{}, fmt.Errorf("protocol %q", f[0])
	}
	addr, port, err := splitLocal(f[4])
	if err != nil {
		return Socket{}, err
	}
	s.Address, s.Port = addr, port
	s.Public = isPublic(addr)
	if len(f) > 6 {
		s.Process, s.PID = parseUsers(strings.Join(f[6:], " "))
	}
	return s, nil
}

// splitLocal splits "127.0.0.1:22", "[::1]:6379", "*:22",
// "127.0.0.53%lo:53", "[fe80::1]%eth0:546".
func splitLocal(v string) (string, int, error) {
	i := strings.LastIndexByte(v, ':')
	if i <= 0 {
		return "", 0, fmt.Errorf("local address %q", v)
	}
	host, ps := v[:i], v[i+1:]
	port, err := strconv.Atoi(ps)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("port in %q", v)
	}
	if j := strings.IndexByte(host, '%'); j >= 0 {
		host = host[:j]
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if host == "" {
		return "", 0, fmt.Errorf("local address %q", v)
	}
	if host != "*" {
		a, err := netip.ParseAddr(host)
		if err != nil {
			return "", 0, fmt.Errorf("local address %q", v)
		}
		host = a.String()
	}
	return host, port, nil
}

func isPublic(host string) bool {
	if host == "*" {
		return true
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	return !a.Unmap().IsLoopback()
}

// parseUsers reads the first process of users:(("sshd",pid=685,fd=3),…).
func parseUsers(v string) (string, int) {
	i := strings.Index(v, `(("`)
	if i < 0 {
		return "", 0
	}
	rest := v[i+3:]
	name, rest, ok := strings.Cut(rest, `"`)
	if !ok {
		return "", 0
	}
	pid := 0
	if j := strings.Index(rest, "pid="); j >= 0 {
		num := rest[j+4:]
		k := 0
		for k < len(num) && num[k] >= '0' && num[k] <= '9' {
			k++
		}
		pid, _ = strconv.Atoi(num[:k])
	}
	return name, pid
}

// Exposure sets each socket's Open value from the firewall state: with no
// active firewall every public socket is open to the world; with one, a
// rule without a source opens it to the world, rules with sources only to
// them, and no rule blocks it.
func Exposure(socks []Socket, st *State) {
	for i := range socks {
		s := &socks[i]
		if !s.Public {
			s.Open = OpenLocal
			continue
		}
		if st == nil || !st.Active {
			s.Open = OpenWorld
			continue
		}
		s.Open = OpenBlocked
		for _, r := range st.Rules {
			if r.Proto != Any && r.Proto != s.Proto {
				continue
			}
			end := r.Port
			if r.PortEnd > 0 {
				end = r.PortEnd
			}
			if s.Port < r.Port || s.Port > end {
				continue
			}
			if r.Source == "" {
				s.Open = OpenWorld
				break
			}
			s.Open = OpenRestricted
		}
	}
}

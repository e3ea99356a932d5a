package fleet

import (
	"strings"
	"testing"

	"github.com/lcmproject/lcm/internal/domain"
)

// FuzzValidators: the fleet's input checks never panic, and what they
// accept is what they promise: a host without spaces, slashes, backslashes
// or @ of at most 253 bytes and a port in 1–65535; a name of 1–128 bytes;
// a group description of at most 1024 bytes and a segment of letters,
// digits, - and _.
func FuzzValidators(f *testing.F) {
	f.Add("192.0.2.1", 22, "web-01", "desc", "dc1")
	f.Add("", 0, "", "", "")
	f.Add("a b/c@d", 70000, strings.Repeat("n", 129), strings.Repeat("d", 1025), "dc 1")
	f.Fuzz(func(t *testing.T, host string, port int, name, desc, segment string) {
		if validHostPort(host, port) == nil {
			if host == "" || len(host) > 253 || strings.ContainsAny(host, " /\\@") || port < 1 || port > 65535 {
				t.Fatalf("accepted host %q port %d", host, port)
			}
		}
		if validName(name) == nil && (name == "" || len(name) > 128) {
			t.Fatalf("accepted name of %d bytes", len(name))
		}
		if validGroup(&name, &desc, &segment) == nil {
			if name == "" || len(name) > 128 || len(desc) > 1024 || (segment != "" && !domain.ValidSegment(segment)) {
				t.Fatalf("accepted group %q %q %q", name, desc, segment)
			}
		}
		if validGroup(nil, nil, nil) != nil {
			t.Fatal("an empty patch refused")
		}
	})
}

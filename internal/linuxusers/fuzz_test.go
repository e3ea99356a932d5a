package linuxusers

import (
	"strings"
	"testing"
)

// FuzzParsePublicKey: never panics; an accepted key is one line, of an
// accepted type, without options, and parses again to itself.
func FuzzParsePublicKey(f *testing.F) {
	for _, s := range []string{
		"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl alice@laptop",
		`command="/bin/sh" ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl x`,
		"ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ", "ssh-dss AAAA", "", "\n", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl a\nb",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		k, err := ParsePublicKey(line)
		if err != nil {
			return
		}
		if strings.ContainsAny(k.PublicKey, "\n\r") || !strings.HasPrefix(k.PublicKey, k.Type+" ") {
			t.Fatalf("accepted %q as %q", line, k.PublicKey)
		}
		if _, ok := allowedKeyTypes[k.Type]; !ok {
			t.Fatalf("type %s accepted", k.Type)
		}
		again, err := ParsePublicKey(k.PublicKey)
		if err != nil || again.PublicKey != k.PublicKey || again.Fingerprint != k.Fingerprint {
			t.Fatalf("not stable: %q → %q (%v)", k.PublicKey, again.PublicKey, err)
		}
	})
}

// FuzzCheckUsername: an accepted name is a portable POSIX name that is
// neither reserved nor LCM's own.
func FuzzCheckUsername(f *testing.F) {
	for _, s := range []string{"alice", "root", "lcm", "lcm-prof-x", "_apt", "a-b", "9x", "A", "systemd-x", "a;b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, u string) {
		if CheckUsername(u) != nil {
			return
		}
		if !usernameRe.MatchString(u) || reservedNames[u] || strings.HasPrefix(u, "lcm") || strings.HasPrefix(u, "_") {
			t.Fatalf("accepted %q", u)
		}
	})
}

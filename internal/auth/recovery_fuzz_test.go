package auth

import (
	"strings"
	"testing"
)

// FuzzNormalizeRecoveryCode: normalising never panics, is idempotent,
// leaves no dash, space or tab and nothing ToLower would change, and
// ignores how the user grouped the code (dashes or spaces).
func FuzzNormalizeRecoveryCode(f *testing.F) {
	f.Add("ABCDE-FGHJK")
	f.Add(" abcde fghjk\t")
	f.Add("ÄÖÜ-ß")
	f.Fuzz(func(t *testing.T, code string) {
		n := NormalizeRecoveryCode(code)
		if NormalizeRecoveryCode(n) != n {
			t.Fatalf("not idempotent: %q → %q → %q", code, n, NormalizeRecoveryCode(n))
		}
		if strings.ContainsAny(n, "- \t") || n != strings.ToLower(n) {
			t.Fatalf("%q → %q", code, n)
		}
		if NormalizeRecoveryCode(strings.ReplaceAll(code, "-", " ")) != n {
			t.Fatalf("dash and space differ for %q", code)
		}
	})
}

// FuzzValidEmail: ValidEmail never panics; an accepted address is plain
// (what mail.ParseAddress returns unchanged), at most 254 bytes, with a
// dot in the part after the last @.
func FuzzValidEmail(f *testing.F) {
	for _, s := range []string{"ops@example.org", "", "a@b", "Name <a@b.c>", "a@b.c.", "\"x y\"@example.com"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if ValidEmail(v) != nil || v == "" {
			return
		}
		at := strings.LastIndexByte(v, '@')
		if at < 0 || len(v) > 254 || !strings.Contains(v[at:], ".") || strings.ContainsAny(v, "<>") {
			t.Fatalf("accepted %q", v)
		}
	})
}

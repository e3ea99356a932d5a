package password

import (
	"errors"
	"slices"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/lcmproject/lcm/internal/domain"
)

func FuzzCheck(f *testing.F) {
	for _, s := range []string{"", good, "P4ssw0rd!2026", "aaaa", " x", "\x00", "\xff", "日本語のパスワードです9!",
		"correct horse battery staple", "Xjdoe42#Zq9!", "lcm-Xq9#-lcm", "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"} {
		f.Add(s, "jdoe42", "anna.k@contoso.example.com")
	}
	f.Fuzz(func(t *testing.T, pw, user, email string) {
		v := Check(pw, Identity{Username: user, Email: email})
		seen := map[string]bool{}
		for _, x := range v {
			if !slices.Contains(Codes, x.Code) {
				t.Fatalf("undocumented code %q", x.Code)
			}
			if seen[x.Code] {
				t.Fatalf("duplicate code %q", x.Code)
			}
			seen[x.Code] = true
			if x.Message == "" {
				t.Fatalf("code %q without message", x.Code)
			}
		}
		n := utf8.RuneCountInString(pw)
		if seen[CodeTooLong] != (n > MaxLength) {
			t.Fatalf("too_long=%v for %d runes", seen[CodeTooLong], n)
		}
		if n <= MaxLength && seen[CodeTooShort] != (n < MinLength) {
			t.Fatalf("too_short=%v for %d runes", seen[CodeTooShort], n)
		}
		err := Validate(pw, Identity{Username: user, Email: email})
		if len(v) == 0 {
			if err != nil {
				t.Fatalf("Validate error %v for a passing password", err)
			}
			if n < MinLength || n > MaxLength {
				t.Fatalf("passing password of %d runes", n)
			}
			if !utf8.ValidString(pw) {
				t.Fatal("passing password with invalid UTF-8")
			}
			rs := []rune(pw)
			if unicode.IsSpace(rs[0]) || unicode.IsSpace(rs[len(rs)-1]) {
				t.Fatal("passing password with whitespace at the edge")
			}
			for _, r := range rs {
				if unicode.IsControl(r) {
					t.Fatalf("passing password with control character %U", r)
				}
			}
			return
		}
		var de *domain.Error
		if !errors.As(err, &de) || !errors.Is(err, domain.ErrInvalid) || de.Code != v[0].Code {
			t.Fatalf("Validate = %v, want ErrInvalid with code %q", err, v[0].Code)
		}
	})
}

package release

import (
	"strings"
	"testing"
)

// FuzzParseVersion: ParseVersion never panics; what it accepts prints back
// (String, Tag) to a version that parses to the same value, and Debian
// differs only in the pre-release separator.
func FuzzParseVersion(f *testing.F) {
	for _, s := range []string{"1.2.3", "v0.0.1", "10.20.30-beta.4", "1.2", "01.2.3", "1.2.3-beta.0", " 1.2.3 ", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseVersion(s)
		if err != nil {
			return
		}
		for _, form := range []string{v.String(), v.Tag()} {
			w, err := ParseVersion(form)
			if err != nil || w != v {
				t.Fatalf("%q → %+v → %q → %+v (%v)", s, v, form, w, err)
			}
		}
		if strings.Replace(v.Debian(), "~beta.", "-beta.", 1) != v.String() {
			t.Fatalf("Debian %q of %q", v.Debian(), v.String())
		}
		if v.Beta < 0 || v.Major < 0 || v.Minor < 0 || v.Patch < 0 || v.Core().Beta != 0 {
			t.Fatalf("%+v", v)
		}
	})
}

// FuzzParseCommit: Parse never panics; a breaking marker ("!" after the
// type, or a BREAKING CHANGE footer) is always a major step, the type is
// lower case, and a subject without the conventional header has no type.
func FuzzParseCommit(f *testing.F) {
	f.Add("abc", "feat(api)!: new thing", "body\nBREAKING CHANGE: x")
	f.Add("", "Merge branch", "")
	f.Add("h", "FIX: x", "BREAKING-CHANGE: y")
	f.Fuzz(func(t *testing.T, hash, subject, body string) {
		c := Parse(hash, subject, body)
		if c.Breaking && BumpOf(c) != Major {
			t.Fatalf("breaking commit %+v bumps %v", c, BumpOf(c))
		}
		if c.Type != strings.ToLower(c.Type) {
			t.Fatalf("type %q", c.Type)
		}
		if c.Type == "" && c.Breaking && !strings.Contains(body, "BREAKING") {
			t.Fatalf("breaking without a marker: %+v", c)
		}
		if Highest([]Commit{c, {Type: "feat"}}) < Minor {
			t.Fatal("highest below a feat")
		}
	})
}

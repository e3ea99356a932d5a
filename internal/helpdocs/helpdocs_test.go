package helpdocs

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/lcmproject/lcm/internal/domain"
)

func TestEmbeddedDocs(t *testing.T) {
	list := Embedded.List()
	if len(list) < 10 {
		t.Fatalf("only %d embedded docs", len(list))
	}
	seen := map[string]string{}
	for _, d := range list {
		seen[d.Slug] = d.Title
	}
	for slug, title := range map[string]string{"install": "", "packages-deb": "Debian packages", "updates": "Updates"} {
		got, ok := seen[slug]
		if !ok {
			t.Errorf("%s is not embedded", slug)
		} else if title != "" && got != title {
			t.Errorf("%s: title %q, want %q", slug, got, title)
		}
	}
	p, err := Embedded.Get("packages-deb")
	if err != nil || p.Title != "Debian packages" || !strings.HasPrefix(p.Markdown, "# Debian packages\n") {
		t.Fatalf("Get(packages-deb) = %q, %v", p.Title, err)
	}
}

func TestGetRefusesBadSlugs(t *testing.T) {
	for _, s := range []string{"", "..", "../go.mod", "install.md", "/etc/passwd", "Install", "in stall", "-x", "x-", "a/b", `a\b`, "a\x00", strings.Repeat("a", 65), "%2e%2e", "embed.go"} {
		_, err := Embedded.Get(s)
		if err == nil {
			t.Errorf("Get(%q) succeeded", s)
		}
	}
	if _, err := Embedded.Get("no-such-doc"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("unknown slug: %v", err)
	}
	if _, err := Embedded.Get("../x"); !errors.Is(err, domain.ErrInvalid) {
		t.Errorf("traversal: %v", err)
	}
}

func TestTitle(t *testing.T) {
	for md, want := range map[string]string{
		"# Hello\ntext":                   "Hello",
		"intro\n\n#  Spaced  \n":          "Spaced",
		"```\n# not a title\n```\n# Real": "Real",
		"## Sub only":                     "fallback",
		"#NoSpace":                        "fallback",
		"":                                "fallback",
	} {
		if got := Title(md, "fallback"); got != want {
			t.Errorf("Title(%q) = %q, want %q", md, got, want)
		}
	}
}

func TestListSkipsBadNames(t *testing.T) {
	l := New(fstest.MapFS{
		"b.md":          {Data: []byte("# Beta\n")},
		"a.md":          {Data: []byte("no heading")},
		"UPPER.md":      {Data: []byte("# x")},
		"sub/c.md":      {Data: []byte("# c")},
		"not-md.txt":    {Data: []byte("# t")},
		"with space.md": {Data: []byte("# s")},
	})
	got := l.List()
	if len(got) != 2 || got[0] != (Doc{Slug: "a", Title: "a"}) || got[1] != (Doc{Slug: "b", Title: "Beta"}) {
		t.Errorf("List = %+v", got)
	}
}

// FuzzGet: whatever the slug, Get never fails with anything but invalid
// or not found, and what it returns is one of the listed documents.
func FuzzGet(f *testing.F) {
	for _, s := range []string{"install", "../install", "install/../install", "..", "a\x00b", "packages-deb", "%2e"} {
		f.Add(s)
	}
	listed := map[string]bool{}
	for _, d := range Embedded.List() {
		listed[d.Slug] = true
	}
	f.Fuzz(func(t *testing.T, slug string) {
		p, err := Embedded.Get(slug)
		if err != nil {
			if !errors.Is(err, domain.ErrInvalid) && !errors.Is(err, domain.ErrNotFound) {
				t.Fatalf("Get(%q): %v", slug, err)
			}
			if ValidSlug(slug) == errors.Is(err, domain.ErrInvalid) {
				t.Fatalf("Get(%q): %v but ValidSlug = %v", slug, err, ValidSlug(slug))
			}
			return
		}
		if p.Slug != slug || !listed[slug] || strings.ContainsAny(slug, "./\\\x00") {
			t.Fatalf("Get(%q) returned %q", slug, p.Slug)
		}
	})
}

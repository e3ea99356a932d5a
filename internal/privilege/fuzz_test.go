package privilege

import (
	"path"
	"strings"
	"testing"
)

// FuzzValidate feeds argv lists (NUL-separated) seeded with the spec's
// rejection classes. Invariants: Validate never panics; an accepted rule
// has an absolute clean program path, no wildcard, metacharacter, comma or
// whitespace, a sub-action for systemctl/apt-get/docker, --no-pager for
// systemctl/journalctl, and renders to exactly one line issued to the
// profile group that never has ALL as command.
func FuzzValidate(f *testing.F) {
	for _, seed := range []string{
		"/usr/bin/systemctl\x00status\x00ssh",
		"systemctl\x00restart\x00nginx",                 // relative path
		"/usr/bin/systemctl\x00restart\x00*",            // wildcard
		"/usr/bin/systemctl\x00restart\x00ngin?",        // wildcard
		"/usr/bin/systemctl\x00restart\x00[ab]",         // wildcard
		"/usr/bin/du\x00a;id",                           // metacharacter
		"/usr/bin/du\x00$(id)",                          // metacharacter
		"/usr/bin/du\x00a|b",                            // metacharacter
		"/usr/bin/systemctl\x00restart\x00a,b",          // comma
		"/usr/bin/systemctl",                            // bare
		"/usr/bin/apt-get",                              // bare
		"/usr/bin/docker\x00--debug",                    // bare
		"/bin/sh\x00-c\x00id",                           // dangerous
		"ALL",                                           // ALL
		"/usr/bin/vim\x00/etc/hosts",                    // editor → sudoedit
		"/usr/bin/journalctl\x00-u\x00x\x00--since=a:b", // escapes
	} {
		f.Add(seed, false)
	}
	f.Fuzz(func(t *testing.T, s string, confirmed bool) {
		argv := strings.Split(s, "\x00")
		r := Normalize(Rule{Kind: KindCommand, Argv: argv, Confirmed: confirmed})
		if Validate(r) != nil {
			return
		}
		if r.Kind == KindEdit {
			if !strings.HasPrefix(r.Path, "/") || path.Clean(r.Path) != r.Path {
				t.Fatalf("accepted edit path %q", r.Path)
			}
		} else {
			if !strings.HasPrefix(r.Argv[0], "/") || path.Clean(r.Argv[0]) != r.Argv[0] {
				t.Fatalf("accepted program %q", r.Argv[0])
			}
			for _, a := range r.Argv {
				if a == "" || strings.ContainsAny(a, "*?[],;&|`$<>(){}\\\"'!# \t\n\r") {
					t.Fatalf("accepted argument %q", a)
				}
			}
			base := path.Base(r.Argv[0])
			if bareNeedsSubAction[base] && !hasSubAction(r.Argv[1:]) {
				t.Fatalf("accepted bare %v", r.Argv)
			}
			if noPager[base] && !contains(r.Argv, "--no-pager") {
				t.Fatalf("no --no-pager in %v", r.Argv)
			}
			if Dangerous(r) != "" && !confirmed {
				t.Fatalf("accepted unconfirmed dangerous %v", r.Argv)
			}
		}
		text, err := Render("fuzz", "fuzz", []Rule{r})
		if err != nil {
			t.Fatalf("valid rule not rendered: %v", err)
		}
		lines := strings.Split(strings.TrimSpace(text), "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[1], "%lcm-prof-fuzz ALL=(root) NOPASSWD: ") ||
			strings.TrimPrefix(lines[1], "%lcm-prof-fuzz ALL=(root) NOPASSWD: ") == "ALL" {
			t.Fatalf("rendered %q", text)
		}
	})
}

// FuzzExpandParams feeds parameter values into the built-in blocks: an
// accepted expansion holds only valid rules (the value cannot smuggle a
// metacharacter, a wildcard, a path escape or a second argument).
func FuzzExpandParams(f *testing.F) {
	for _, seed := range []string{"nginx", "nginx.service", "a b", "x;id", "*", "../etc", "/srv/www", "/", "web,db", "$(id)", "-rf"} {
		f.Add(seed)
	}
	bs := Builtins()
	f.Fuzz(func(t *testing.T, v string) {
		for _, b := range bs {
			params := map[string]string{}
			for _, p := range b.Params {
				params[p.Name] = v
			}
			for _, fam := range b.SupportedFamilies() {
				rules, e := b.Expand(fam, params)
				if e != nil {
					continue
				}
				for _, r := range rules {
					if Validate(r) != nil {
						t.Fatalf("%s/%s with %q gave an invalid rule %+v", b.Slug, fam, v, r)
					}
					for _, a := range r.Argv {
						if strings.ContainsAny(a, " \t\n") {
							t.Fatalf("%s: value %q split into arguments", b.Slug, v)
						}
					}
				}
			}
		}
	})
}

package privilege

import (
	"fmt"
	"regexp"
	"strings"
)

// GroupPrefix starts every profile group: lcm-prof-<slug>.
const GroupPrefix = "lcm-prof-"

// SudoersDir is where a profile's file goes: /etc/sudoers.d/lcm-prof-<slug>.
const SudoersDir = "/etc/sudoers.d"

var slugRe = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,21}[a-z0-9])?$`)

// ValidSlug reports whether s can name a profile group: lower-case letters,
// digits and inner hyphens, at most 23 characters so lcm-prof-<slug> stays
// within the 32 characters of a Linux group name. sudoers.d ignores file
// names with a '.' or ending in '~', which the rule excludes.
func ValidSlug(s string) bool { return slugRe.MatchString(s) }

// Slugify turns a profile name into a slug candidate.
func Slugify(name string) string {
	var b strings.Builder
	dash := false
	for _, c := range strings.ToLower(name) {
		switch {
		case c >= 'a' && c <= 'z' || c >= '0' && c <= '9':
			b.WriteRune(c)
			dash = false
		case b.Len() > 0 && !dash:
			b.WriteByte('-')
			dash = true
		}
	}
	s := strings.Trim(b.String(), "-")
	if len(s) > 23 {
		s = strings.TrimRight(s[:23], "-")
	}
	if s == "" {
		s = "profile"
	}
	return s
}

// GroupName is the Linux group of a profile.
func GroupName(slug string) string { return GroupPrefix + slug }

// SudoersPath is the file of a profile.
func SudoersPath(slug string) string { return SudoersDir + "/" + GroupName(slug) }

// sudoersEscape escapes the characters sudoers treats specially inside a
// command's arguments (validation already refused the others).
func sudoersEscape(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `:`, `\:`, `=`, `\=`, `,`, `\,`)
	return r.Replace(s)
}

// Line renders one normalized, valid rule as its sudoers line for group;
// ACL rules have none ("", false).
func Line(group string, r Rule) (string, bool) {
	runAs := "root"
	if r.RunAs != "" {
		runAs = r.RunAs
	}
	switch r.Kind {
	case KindCommand:
		words := make([]string, len(r.Argv))
		for i, a := range r.Argv {
			words[i] = sudoersEscape(a)
		}
		// A command with no arguments would allow any arguments in
		// sudoers; "" forbids them, keeping the argv exact.
		if len(words) == 1 {
			words = append(words, `""`)
		}
		return fmt.Sprintf("%%%s ALL=(%s) NOPASSWD: %s", group, runAs, strings.Join(words, " ")), true
	case KindEdit:
		return fmt.Sprintf("%%%s ALL=(root) NOPASSWD: sudoedit %s", group, sudoersEscape(r.Path)), true
	}
	return "", false
}

// Render returns the sudoers file of a profile: a header and one line per
// command or edit rule, every line issued to the profile's own group and
// none with ALL as command. rules must be normalized and valid
// (ValidateAll); Render refuses anything else rather than write it.
func Render(slug, profileName string, rules []Rule) (string, error) {
	if !ValidSlug(slug) {
		return "", fmt.Errorf("privilege: invalid profile slug %q", slug)
	}
	group := GroupName(slug)
	var b strings.Builder
	fmt.Fprintf(&b, "# Managed by LCM: privilege profile %q (group %s). Changes here are overwritten.\n",
		strings.Map(printable, profileName), group)
	n := 0
	for i, r := range rules {
		if e := Validate(r); e != nil {
			e.Index = i
			return "", e
		}
		line, ok := Line(group, r)
		if !ok {
			continue
		}
		b.WriteString(line)
		b.WriteByte('\n')
		n++
	}
	if n == 0 {
		b.WriteString("# This profile grants no sudo rights.\n")
	}
	return b.String(), nil
}

func printable(r rune) rune {
	if r < 0x20 || r == 0x7f || r == '"' || r == '\\' {
		return -1
	}
	return r
}

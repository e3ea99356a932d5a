// Package release derives LCM's next version from conventional commits
// (spec, "Versioning"): feat!, fix! or BREAKING CHANGE → major; feat →
// minor; fix, perf, refactor → patch; docs, test, ci, chore, build, style,
// revert → no release. The highest type since the last release decides.
// The beta channel prepares pre-releases X.Y.Z-beta.N; Debian packages
// write them X.Y.Z~beta.N.
package release

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Bump is the step a set of commits asks for.
type Bump int

// Steps, lowest first.
const (
	None Bump = iota
	Patch
	Minor
	Major
)

func (b Bump) String() string {
	return [...]string{"none", "patch", "minor", "major"}[b]
}

// Channels are the release branches; community is the default.
var Channels = []string{"develop", "beta", "community", "enterprise"}

// DefaultChannel is the channel when none is given.
const DefaultChannel = "community"

// ValidChannel reports whether c is a release channel.
func ValidChannel(c string) bool { return slices.Contains(Channels, c) }

// Commit is a parsed conventional commit.
type Commit struct {
	Hash     string
	Type     string // feat, fix, …; "" when the subject is not conventional
	Scope    string
	Breaking bool
	Subject  string // the description after "type(scope): "
}

var header = regexp.MustCompile(`^([a-zA-Z]+)(?:\(([^()\r\n]*)\))?(!)?: (.+)$`)

// Parse reads a commit's subject line and body.
func Parse(hash, subject, body string) Commit {
	c := Commit{Hash: hash, Subject: strings.TrimSpace(subject)}
	if m := header.FindStringSubmatch(strings.TrimSpace(subject)); m != nil {
		c.Type, c.Scope, c.Breaking, c.Subject = strings.ToLower(m[1]), m[2], m[3] == "!", m[4]
	}
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "BREAKING CHANGE:") || strings.HasPrefix(line, "BREAKING-CHANGE:") {
			c.Breaking = true
		}
	}
	return c
}

// BumpOf is the step one commit asks for. A "!" after the type (feat!,
// fix!, and — as Conventional Commits defines it — any other type) or a
// BREAKING CHANGE footer in the body is a major step.
func BumpOf(c Commit) Bump {
	if c.Breaking {
		return Major
	}
	switch c.Type {
	case "feat":
		return Minor
	case "fix", "perf", "refactor":
		return Patch
	}
	return None
}

// Highest is the step of a set of commits: the highest one decides.
func Highest(cs []Commit) Bump {
	b := None
	for _, c := range cs {
		b = max(b, BumpOf(c))
	}
	return b
}

// Version is a semantic version with an optional beta number.
type Version struct {
	Major, Minor, Patch int
	Beta                int // 0: a stable version
}

var semver = regexp.MustCompile(`^v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-beta\.([1-9]\d*))?$`)

// ParseVersion reads X.Y.Z or X.Y.Z-beta.N (a leading v is allowed).
func ParseVersion(s string) (Version, error) {
	m := semver.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return Version{}, fmt.Errorf("release: %q is not X.Y.Z or X.Y.Z-beta.N", s)
	}
	n := func(x string) int { v, _ := strconv.Atoi(x); return v }
	v := Version{Major: n(m[1]), Minor: n(m[2]), Patch: n(m[3])}
	if m[4] != "" {
		v.Beta = n(m[4])
	}
	return v, nil
}

func (v Version) String() string {
	s := fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
	if v.Beta > 0 {
		s += fmt.Sprintf("-beta.%d", v.Beta)
	}
	return s
}

// Tag is the git tag of the version.
func (v Version) Tag() string { return "v" + v.String() }

// Debian is the version in Debian form: -beta.N sorts before the release
// only when written ~beta.N.
func (v Version) Debian() string { return strings.Replace(v.String(), "-beta.", "~beta.", 1) }

// Core is the version without its pre-release part.
func (v Version) Core() Version { return Version{Major: v.Major, Minor: v.Minor, Patch: v.Patch} }

// Less orders versions by semver precedence (a beta before its release).
func (v Version) Less(o Version) bool {
	if a, b := [3]int{v.Major, v.Minor, v.Patch}, [3]int{o.Major, o.Minor, o.Patch}; a != b {
		return a[0] < b[0] || (a[0] == b[0] && (a[1] < b[1] || (a[1] == b[1] && a[2] < b[2])))
	}
	switch {
	case v.Beta == o.Beta:
		return false
	case v.Beta == 0:
		return false
	case o.Beta == 0:
		return true
	}
	return v.Beta < o.Beta
}

// Apply steps a stable version.
func (b Bump) Apply(v Version) Version {
	v = v.Core()
	switch b {
	case Major:
		return Version{Major: v.Major + 1}
	case Minor:
		return Version{Major: v.Major, Minor: v.Minor + 1}
	case Patch:
		return Version{Major: v.Major, Minor: v.Minor, Patch: v.Patch + 1}
	}
	return v
}

// Plan is what a release run decides.
type Plan struct {
	Channel  string
	Last     *Version // the last stable release; nil when there is none
	Bump     Bump
	Next     Version
	Commits  []Commit // since the last release, newest first
	Release  bool     // false: nothing to release, or the tag exists
	Reason   string   // why not, when Release is false
	Existing bool     // the prepared version is tagged already
}

// Prepare decides the next version of a channel. reachable are the tags
// reachable from HEAD (the last stable release is the highest of them),
// all are every tag of the repository (a version tagged on another branch
// is not released again), commits are those since the last release.
func Prepare(channel string, reachable, all []string, commits []Commit) (Plan, error) {
	if channel == "" {
		channel = DefaultChannel
	}
	if !ValidChannel(channel) {
		return Plan{}, fmt.Errorf("release: unknown channel %q (channels: %s)", channel, strings.Join(Channels, ", "))
	}
	p := Plan{Channel: channel, Commits: commits, Bump: Highest(commits)}
	tagged := map[string]bool{}
	betas := map[Version]int{} // core → highest beta
	for _, t := range all {
		v, err := ParseVersion(t)
		if err != nil || !strings.HasPrefix(t, "v") {
			continue
		}
		tagged[v.String()] = true
		if v.Beta > 0 {
			betas[v.Core()] = max(betas[v.Core()], v.Beta)
		}
	}
	var stable []Version
	for _, t := range reachable {
		v, err := ParseVersion(t)
		if err != nil || !strings.HasPrefix(t, "v") {
			continue
		}
		if v.Beta == 0 {
			stable = append(stable, v)
		}
	}
	base := Version{}
	if len(stable) > 0 {
		last := slices.MaxFunc(stable, func(a, b Version) int {
			if a.Less(b) {
				return -1
			}
			if b.Less(a) {
				return 1
			}
			return 0
		})
		p.Last, base = &last, last
	}
	if p.Bump == None {
		p.Next, p.Reason = base, "no commit since the last release asks for one (only docs, test, ci, chore, build, style, revert or non-conventional commits)"
		return p, nil
	}
	p.Next = p.Bump.Apply(base)
	if channel == "beta" {
		p.Next.Beta = betas[p.Next.Core()] + 1
	}
	switch {
	case tagged[p.Next.String()]:
		p.Existing, p.Reason = true, "the prepared version "+p.Next.String()+" has a tag already"
	case channel == "develop":
		p.Reason = "develop is the integration channel: it prepares the next version but never releases"
	default:
		p.Release = true
	}
	return p, nil
}

// groups orders the changelog sections.
var groups = []struct{ title, typ string }{
	{"Features", "feat"}, {"Fixes", "fix"}, {"Performance", "perf"}, {"Refactoring", "refactor"},
	{"Documentation", "docs"}, {"Tests", "test"}, {"Build and CI", "build"}, {"Build and CI", "ci"},
	{"Other", "chore"}, {"Other", "style"}, {"Other", "revert"},
}

// Changelog renders the plan's commits grouped by type, breaking changes
// first; non-conventional commits are listed under "Other".
func Changelog(p Plan, date string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## %s (%s, %s)\n", p.Next, date, p.Channel)
	section := func(title string, cs []Commit) {
		if len(cs) == 0 {
			return
		}
		fmt.Fprintf(&b, "\n### %s\n\n", title)
		for _, c := range cs {
			line := c.Subject
			if c.Scope != "" {
				line = "**" + c.Scope + ":** " + line
			}
			fmt.Fprintf(&b, "- %s (%s)\n", line, short(c.Hash))
		}
	}
	var breaking []Commit
	for _, c := range p.Commits {
		if BumpOf(c) == Major {
			breaking = append(breaking, c)
		}
	}
	section("Breaking changes", breaking)
	done := map[string]bool{}
	for i, g := range groups {
		if done[g.title] {
			continue
		}
		var cs []Commit
		for _, h := range groups[i:] {
			if h.title != g.title {
				continue
			}
			for _, c := range p.Commits {
				if c.Type == h.typ && BumpOf(c) != Major {
					cs = append(cs, c)
				}
			}
		}
		if g.title == "Other" {
			for _, c := range p.Commits {
				if c.Type == "" || !knownType(c.Type) {
					cs = append(cs, c)
				}
			}
		}
		done[g.title] = true
		section(g.title, cs)
	}
	return b.String()
}

func knownType(t string) bool {
	for _, g := range groups {
		if g.typ == t {
			return true
		}
	}
	return false
}

func short(h string) string {
	if len(h) > 7 {
		return h[:7]
	}
	return h
}

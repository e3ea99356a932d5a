package vulndb

import (
	"sort"
)

// Component is one installed package as the SBOM describes it.
type Component struct {
	Name    string // binary package name
	Version string // installed version (the manager's native string)
	Source  string // source package where the family has one ("" = Name)
	Distro  string // purl distro qualifier: "debian-12", "alpine-3.19", "rocky-9.3"
	// Container names the CVE-relevant container the package was read
	// from ("docker/web"; "" = the server's own). It is not part of the
	// match: the caches are keyed without it, and the findings carry it.
	Container string
}

// Finding is one advisory that affects one installed package.
type Finding struct {
	Advisory  string   `json:"advisory"` // the OSV record id (DSA-5724-1, DEBIAN-CVE-…)
	CVEs      []string `json:"cves"`
	Package   string   `json:"package"` // binary package installed
	Source    string   `json:"source,omitempty"`
	Installed string   `json:"installed"`
	Fixed     string   `json:"fixed,omitempty"` // "" = no fix published yet
	Severity  string   `json:"severity"`        // unknown, low, medium, high, critical
	CVSS      float64  `json:"cvss,omitempty"`
	Summary   string   `json:"summary,omitempty"`
	Ecosystem string   `json:"ecosystem"`           // "Debian:12"
	Container string   `json:"container,omitempty"` // "docker/web": found in that container, not on the host
}

// Matcher matches components and remembers the result per (release,
// package, source, version): identical packages on many servers are
// matched once. It is not safe for concurrent use; make one per worker.
type Matcher struct {
	db    *DB
	cache map[Component][]Finding
}

// NewMatcher returns a matcher over db.
func (db *DB) NewMatcher() *Matcher { return &Matcher{db: db, cache: map[Component][]Finding{}} }

// Match returns the findings of a package set, most severe first.
func (m *Matcher) Match(comps []Component) []Finding {
	out := []Finding{}
	for _, c := range comps {
		key := c
		key.Container = ""
		fs, ok := m.cache[key]
		if !ok {
			fs = m.db.matchOne(key)
			m.cache[key] = fs
		}
		out = appendIn(out, fs, c.Container)
	}
	SortFindings(out)
	return out
}

// appendIn appends the findings of one component found in container ("":
// on the host). Cached findings are shared: they are copied before the
// container is set.
func appendIn(out, fs []Finding, container string) []Finding {
	if container == "" {
		return append(out, fs...)
	}
	for _, f := range fs {
		f.Container = container
		out = append(out, f)
	}
	return out
}

// Match returns the findings of a package set, most severe first. It is
// safe for concurrent use: results per component are remembered in the
// database (up to maxShared components), so a package version that many
// servers run is matched once per database load.
func (db *DB) Match(comps []Component) []Finding {
	out := []Finding{}
	for _, c := range comps {
		key := c
		key.Container = ""
		if v, ok := db.shared.Load(key); ok {
			db.hits.Add(1)
			out = appendIn(out, v.([]Finding), c.Container)
			continue
		}
		db.misses.Add(1)
		fs := db.matchOne(key)
		if db.sharedN.Add(1) <= maxShared {
			db.shared.Store(key, fs)
		}
		out = appendIn(out, fs, c.Container)
	}
	SortFindings(out)
	return out
}

// maxShared bounds the remembered components (~100 bytes each plus their
// findings): a few million distinct package versions is far beyond a fleet.
const maxShared = 2_000_000

func (db *DB) matchOne(c Component) []Finding {
	if c.Name == "" || c.Version == "" {
		return nil
	}
	id, ver := splitDistro(c.Distro)
	key := distroKey(id, ver)
	names := []string{c.Name}
	if matchesSource(key) && c.Source != "" && c.Source != c.Name {
		names = []string{c.Source, c.Name}
	}
	cmp := compareFor(key)
	var out []Finding
	seen := map[string]bool{}
	for _, n := range names {
		for _, e := range db.index[key+"\x00"+n] {
			if seen[e.rec.ID] {
				continue
			}
			fixed, hit := affected(cmp, c.Version, e.aff)
			if !hit {
				continue
			}
			seen[e.rec.ID] = true
			sev, score := db.severityOf(e.rec, e.aff)
			summary := e.rec.Summary
			if summary == "" {
				summary = firstLine(e.rec.Details, 200)
			}
			src := c.Source
			if src == c.Name {
				src = ""
			}
			out = append(out, Finding{Advisory: e.rec.ID, CVEs: e.rec.CVEs(), Package: c.Name, Source: src,
				Installed: c.Version, Fixed: fixed, Severity: sev, CVSS: score, Summary: summary, Ecosystem: e.aff.Package.Ecosystem})
		}
	}
	return out
}

// affected applies OSV's evaluation: a version is affected by an
// ECOSYSTEM range when it is at or after an "introduced" ("0" = from the
// start) and before the following "fixed" (or at or before a
// "last_affected"), or when it is listed in "versions". fixed is the fix
// of the range that hit ("" = none yet).
func affected(cmp func(a, b string) int, v string, a *Affected) (string, bool) {
	for _, r := range a.Ranges {
		if r.Type != "ECOSYSTEM" {
			continue
		}
		if fixed, hit := inRange(cmp, v, r.Events); hit {
			return fixed, true
		}
	}
	for _, x := range a.Versions {
		if cmp(v, x) == 0 {
			return "", true
		}
	}
	return "", false
}

// inRange evaluates one range's events: they are sorted by version
// ("0" first) and walked, as the OSV schema's evaluation algorithm does.
func inRange(cmp func(a, b string) int, v string, events []Event) (string, bool) {
	evs := append([]Event(nil), events...)
	at := func(e Event) string {
		switch {
		case e.Introduced != "":
			return e.Introduced
		case e.Fixed != "":
			return e.Fixed
		case e.LastAffected != "":
			return e.LastAffected
		}
		return e.Limit
	}
	sort.SliceStable(evs, func(i, j int) bool {
		a, b := at(evs[i]), at(evs[j])
		if a == "0" || b == "0" {
			return a == "0" && b != "0"
		}
		return cmp(a, b) < 0
	})
	hit, fixed := false, ""
	for _, e := range evs {
		switch {
		case e.Introduced != "":
			if e.Introduced == "0" || cmp(v, e.Introduced) >= 0 {
				hit = true
			}
		case e.Fixed != "":
			if cmp(v, e.Fixed) >= 0 {
				hit = false
			} else if hit && fixed == "" {
				fixed = e.Fixed
			}
		case e.LastAffected != "":
			if cmp(v, e.LastAffected) > 0 {
				hit = false
			}
		case e.Limit != "":
			if cmp(v, e.Limit) >= 0 {
				hit = false
			}
		}
	}
	if !hit {
		return "", false
	}
	return fixed, true
}

// SortFindings orders findings most severe first, then by package,
// advisory and container (the host's first).
func SortFindings(fs []Finding) {
	sort.Slice(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		if ra, rb := SeverityRank(a.Severity), SeverityRank(b.Severity); ra != rb {
			return ra > rb
		}
		if a.Package != b.Package {
			return a.Package < b.Package
		}
		if a.Advisory != b.Advisory {
			return a.Advisory < b.Advisory
		}
		return a.Container < b.Container
	})
}

func firstLine(s string, n int) string {
	for len(s) > 0 && (s[0] == '\n' || s[0] == ' ') {
		s = s[1:]
	}
	for i, r := range s {
		if r == '\n' {
			s = s[:i]
			break
		}
	}
	if len(s) > n {
		s = s[:n]
	}
	return s
}

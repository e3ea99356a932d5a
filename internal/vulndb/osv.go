// Package vulndb is LCM's offline vulnerability database: OSV records read
// from the official export layout (<ecosystem>/all.zip, one <ID>.json per
// record), indexed by ecosystem and package, and a matcher that applies
// OSV's range semantics with each ecosystem's version ordering.
//
// It knows nothing of the bus, the control plane's database or HTTP: the
// scanner process (cmd/scanner, internal/scanner) owns one DB.
package vulndb

import (
	"strings"
)

// Record is the part of an OSV record (https://ossf.github.io/osv-schema/)
// the matcher needs.
type Record struct {
	ID        string     `json:"id"`
	Summary   string     `json:"summary"`
	Details   string     `json:"details"`
	Aliases   []string   `json:"aliases"`
	Related   []string   `json:"related"`
	Upstream  []string   `json:"upstream"`
	Published string     `json:"published"`
	Modified  string     `json:"modified"`
	Severity  []Severity `json:"severity"`
	Affected  []Affected `json:"affected"`
	// DatabaseSpecific carries a severity in some databases (GHSA, Alpine
	// overlays): {"severity": "HIGH"}.
	DatabaseSpecific struct {
		Severity string `json:"severity"`
	} `json:"database_specific"`
}

// Severity is one OSV severity entry: CVSS_V3/CVSS_V4 vectors, or a
// distribution's own rating ("Ubuntu": "high").
type Severity struct {
	Type  string `json:"type"`
	Score string `json:"score"`
}

// Affected is one affected package with its ranges.
type Affected struct {
	Package struct {
		Ecosystem string `json:"ecosystem"`
		Name      string `json:"name"`
		PURL      string `json:"purl"`
	} `json:"package"`
	Ranges            []Range    `json:"ranges"`
	Versions          []string   `json:"versions"`
	Severity          []Severity `json:"severity"`
	EcosystemSpecific struct {
		Severity string `json:"severity"`
		// Urgency is the Debian security tracker's rating of the CVE for
		// this release (DEBIAN-CVE records): unimportant, low, medium,
		// high, "not yet assigned", end-of-life; a trailing "**" marks an
		// estimate.
		Urgency string `json:"urgency"`
	} `json:"ecosystem_specific"`
	DatabaseSpecific struct {
		Severity string `json:"severity"`
		// CVEsMap is where Ubuntu's USN records rate each CVE they fix
		// (CVSS vector and Ubuntu priority).
		CVEsMap struct {
			CVEs []struct {
				ID       string     `json:"id"`
				Severity []Severity `json:"severity"`
			} `json:"cves"`
		} `json:"cves_map"`
	} `json:"database_specific"`
}

// Range is an OSV range; only ECOSYSTEM ranges order distribution versions.
type Range struct {
	Type   string  `json:"type"`
	Events []Event `json:"events"`
}

// Event is one OSV range event.
type Event struct {
	Introduced   string `json:"introduced,omitempty"`
	Fixed        string `json:"fixed,omitempty"`
	LastAffected string `json:"last_affected,omitempty"`
	Limit        string `json:"limit,omitempty"`
}

// CVEs returns the CVE ids the record names (its id, aliases, related and
// upstream), sorted and unique.
func (r *Record) CVEs() []string {
	seen := map[string]bool{}
	var out []string
	for _, list := range [][]string{{r.ID}, r.Aliases, r.Upstream, r.Related} {
		for _, id := range list {
			if strings.HasPrefix(id, "CVE-") && !seen[id] {
				seen[id] = true
				out = append(out, id)
			}
		}
	}
	sortStrings(out)
	return out
}

// Levels of severity, lowest first. "unknown" is below everything.
const (
	SevUnknown  = "unknown"
	SevLow      = "low"
	SevMedium   = "medium"
	SevHigh     = "high"
	SevCritical = "critical"
)

// SeverityRank orders severities (unknown 0 … critical 4).
func SeverityRank(s string) int {
	switch s {
	case SevLow, "negligible":
		return 1
	case SevMedium, "moderate":
		return 2
	case SevHigh, "important":
		return 3
	case SevCritical:
		return 4
	}
	return 0
}

// normSeverity maps the many spellings (NVD, GHSA, Ubuntu priorities,
// Red Hat impacts, Debian urgencies) onto the five levels. Debian's
// "unimportant" (no security impact on Debian) is low; "not yet
// assigned" and "end-of-life" say nothing and stay unknown; an estimate
// ("medium**") counts as its level.
func normSeverity(s string) string {
	switch strings.TrimSuffix(strings.ToLower(strings.TrimSpace(s)), "**") {
	case "critical":
		return SevCritical
	case "high", "important":
		return SevHigh
	case "medium", "moderate":
		return SevMedium
	case "low", "negligible", "unimportant":
		return SevLow
	}
	return SevUnknown
}

// ownSeverity is the severity and CVSS score the record itself states for
// one affected entry (score 0 when no CVSS vector).
func (r *Record) ownSeverity(a *Affected) (string, float64) {
	best, score := SevUnknown, 0.0
	consider := func(list []Severity) {
		for _, s := range list {
			var sev string
			switch strings.ToUpper(s.Type) {
			case "CVSS_V3":
				sc, ok := CVSS3Score(s.Score)
				if !ok {
					continue
				}
				if sc > score {
					score = sc
				}
				sev = CVSSRating(sc)
			default:
				sev = normSeverity(s.Score)
			}
			if SeverityRank(sev) > SeverityRank(best) {
				best = sev
			}
		}
	}
	if a != nil {
		consider(a.Severity)
		for _, c := range a.DatabaseSpecific.CVEsMap.CVEs {
			consider(c.Severity)
		}
		for _, s := range []string{a.EcosystemSpecific.Severity, a.EcosystemSpecific.Urgency, a.DatabaseSpecific.Severity} {
			if sev := normSeverity(s); SeverityRank(sev) > SeverityRank(best) {
				best = sev
			}
		}
	}
	consider(r.Severity)
	if sev := normSeverity(r.DatabaseSpecific.Severity); SeverityRank(sev) > SeverityRank(best) {
		best = sev
	}
	return best, score
}

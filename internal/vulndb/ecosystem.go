package vulndb

import (
	"regexp"
	"strings"

	"github.com/lcmproject/lcm/internal/pkgmgr"
)

// Ecosystems are the OSV export directories LCM reads (the <ecosystem> of
// <ecosystem>/all.zip), one per distribution family it matches.
var Ecosystems = []string{"Debian", "Ubuntu", "Alpine", "Rocky Linux", "AlmaLinux", "Red Hat", "SUSE", "openSUSE"}

// KnownEcosystem reports whether name is one of Ecosystems.
func KnownEcosystem(name string) bool {
	for _, e := range Ecosystems {
		if e == name {
			return true
		}
	}
	return false
}

var (
	reSP      = regexp.MustCompile(`(\d+)(?: SP(\d+))?\s*$`)
	reRHMajor = regexp.MustCompile(`^(?:enterprise_linux|rhel):(\d+)`)
)

// releaseKey normalises an OSV ecosystem ("Debian:12", "Ubuntu:22.04:LTS",
// "Alpine:v3.19", "Rocky Linux:9", "Red Hat:enterprise_linux:9::baseos",
// "SUSE:Linux Enterprise Server 15 SP5", "openSUSE:Leap 15.5") to the key
// distroKey produces for the SBOM's distro qualifier. ok is false for an
// ecosystem LCM does not match (or one without a release).
func releaseKey(eco string) (string, bool) {
	base, rel, ok := strings.Cut(eco, ":")
	if !ok || rel == "" {
		return "", false
	}
	switch base {
	case "Debian":
		return "debian:" + major(rel), true
	case "Ubuntu":
		r, _, _ := strings.Cut(strings.TrimPrefix(rel, "Pro:"), ":")
		return "ubuntu:" + r, true
	case "Alpine":
		return "alpine:" + minor(strings.TrimPrefix(rel, "v")), true
	case "Rocky Linux":
		return "rocky:" + major(rel), true
	case "AlmaLinux":
		return "almalinux:" + major(rel), true
	case "Red Hat":
		if m := reRHMajor.FindStringSubmatch(rel); m != nil {
			return "rhel:" + m[1], true
		}
	case "SUSE", "openSUSE":
		fam := "sles"
		if strings.Contains(rel, "Leap") {
			fam = "opensuse-leap"
		} else if strings.Contains(rel, "Tumbleweed") {
			return "opensuse-tumbleweed:", true
		}
		if m := reSP.FindStringSubmatch(rel); m != nil {
			v := m[1]
			if m[2] != "" {
				v += "." + m[2]
			}
			if fam == "opensuse-leap" {
				v = strings.TrimSpace(rel[strings.LastIndex(rel, " ")+1:])
			}
			return fam + ":" + v, true
		}
	}
	return "", false
}

// distroKey normalises an os-release ID and VERSION_ID ("debian" "12",
// "ubuntu" "22.04", "alpine" "3.19.1", "rocky" "9.3", "sles" "15.5",
// "opensuse-leap" "15.5") to a release key.
func distroKey(id, ver string) string {
	switch id {
	case "debian", "rocky", "almalinux", "rhel":
		return id + ":" + major(ver)
	case "alpine":
		return id + ":" + minor(ver)
	case "opensuse-tumbleweed":
		return id + ":"
	case "sles", "sled":
		return "sles:" + ver
	}
	return id + ":" + ver
}

// DistroQualifier is the purl distro qualifier of an os-release pair
// ("debian", "12" → "debian-12").
func DistroQualifier(id, ver string) string {
	if ver == "" {
		return id
	}
	return id + "-" + ver
}

// splitDistro parses a distro qualifier back ("opensuse-leap-15.5" →
// "opensuse-leap", "15.5"): the version is the part after the last dash.
func splitDistro(q string) (id, ver string) {
	i := strings.LastIndex(q, "-")
	if i < 0 {
		return q, ""
	}
	return q[:i], q[i+1:]
}

func major(v string) string {
	m, _, _ := strings.Cut(v, ".")
	return m
}

func minor(v string) string {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) >= 2 {
		return parts[0] + "." + parts[1]
	}
	return v
}

// compareFor returns the version ordering of a release key's family:
// dpkg's for Debian and Ubuntu, apk's for Alpine, rpm's otherwise.
func compareFor(key string) func(a, b string) int {
	fam, _, _ := strings.Cut(key, ":")
	switch fam {
	case "debian", "ubuntu":
		return pkgmgr.CompareDeb
	case "alpine":
		return pkgmgr.CompareAPK
	}
	return pkgmgr.CompareRPM
}

// matchesSource reports whether a family's advisories name source
// packages (deb, apk) rather than binary ones (rpm).
func matchesSource(key string) bool {
	fam, _, _ := strings.Cut(key, ":")
	return fam == "debian" || fam == "ubuntu" || fam == "alpine"
}

// EcosystemOf is the OSV export directory (one of Ecosystems) whose
// records describe an os-release ID ("debian" → "Debian"); "" when LCM
// matches no OSV data for it.
func EcosystemOf(osID string) string {
	switch osID {
	case "debian":
		return "Debian"
	case "ubuntu":
		return "Ubuntu"
	case "alpine":
		return "Alpine"
	case "rocky":
		return "Rocky Linux"
	case "almalinux":
		return "AlmaLinux"
	case "rhel":
		return "Red Hat"
	case "sles", "sled":
		return "SUSE"
	case "opensuse-leap", "opensuse-tumbleweed":
		return "openSUSE"
	}
	return ""
}

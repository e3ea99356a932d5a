package pkgmgr

import (
	"fmt"
	"strings"

	"github.com/lcmproject/lcm/internal/domain"
)

// familyByID maps os-release ID and ID_LIKE values to families. ID is
// tried first, then each ID_LIKE entry in order, so a derivative such as
// Linux Mint ("linuxmint", like "ubuntu debian") or Rocky ("rocky", like
// "rhel centos fedora") resolves through its parent.
var familyByID = map[string]Family{
	"debian": FamilyAPT, "ubuntu": FamilyAPT, "raspbian": FamilyAPT, "linuxmint": FamilyAPT,
	"pop": FamilyAPT, "kali": FamilyAPT, "devuan": FamilyAPT, "elementary": FamilyAPT,

	"rhel": FamilyDNF, "centos": FamilyDNF, "fedora": FamilyDNF, "rocky": FamilyDNF,
	"almalinux": FamilyDNF, "ol": FamilyDNF, "amzn": FamilyDNF, "scientific": FamilyDNF,
	"eurolinux": FamilyDNF, "virtuozzo": FamilyDNF, "cloudlinux": FamilyDNF,

	"sles": FamilyZypper, "sled": FamilyZypper, "suse": FamilyZypper, "opensuse": FamilyZypper,
	"opensuse-leap": FamilyZypper, "opensuse-tumbleweed": FamilyZypper, "sle-micro": FamilyZypper,

	"arch": FamilyPacman, "archarm": FamilyPacman, "manjaro": FamilyPacman, "endeavouros": FamilyPacman,

	"alpine": FamilyAPK, "postmarketos": FamilyAPK,
}

// FamilyFromOSRelease returns the package-manager family for an
// /etc/os-release ID and ID_LIKE list (case-insensitive). Unknown systems
// return an error wrapping domain.ErrInvalid.
func FamilyFromOSRelease(id string, idLike []string) (Family, error) {
	for _, v := range append([]string{id}, idLike...) {
		if f, ok := familyByID[strings.ToLower(strings.TrimSpace(v))]; ok {
			return f, nil
		}
	}
	return "", domain.Invalid("unknown_distribution",
		fmt.Sprintf("no package manager family for os-release ID %q (ID_LIKE %q)", id, strings.Join(idLike, " ")))
}

// FamilyOfBinary returns the family of a package-manager command name as
// the facts collector and the job-time detection report it ("apt-get" or
// "apt", "dnf", "yum", "zypper", "pacman", "apk"); false for others.
func FamilyOfBinary(bin string) (Family, bool) {
	switch bin {
	case "apt-get", "apt":
		return FamilyAPT, true
	case "dnf", "yum":
		return FamilyDNF, true
	case "zypper":
		return FamilyZypper, true
	case "pacman":
		return FamilyPacman, true
	case "apk":
		return FamilyAPK, true
	}
	return "", false
}

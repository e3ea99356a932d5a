package pkgmgr

import "strings"

// rpmQueryFormat is the rpm -qa format ParseRPMQuery reads. %{EPOCH} prints
// "(none)" when unset; the parser drops that so versions read "1.2-3.el9".
const rpmQueryFormat = `%{NAME}\t%{EPOCH}:%{VERSION}-%{RELEASE}\t%{ARCH}\t%{SOURCERPM}\n`

// rpmList lists installed packages without root: the rpm database is
// world-readable.
const rpmList = "rpm -qa --qf " + "'" + rpmQueryFormat + "'"

// ParseRPMQuery parses rpm -qa output in rpmQueryFormat, recording manager
// as Package.Manager. The gpg-pubkey pseudo packages (imported signing keys)
// are skipped. Source is the source package name, without version and
// ".src.rpm".
func ParseRPMQuery(out []byte, manager string) ([]Package, error) {
	bad := lineErrs{parser: "rpm -qa"}
	pkgs := make([]Package, 0, len(out)/80)
	var f [4]string
	eachLine(out, func(line string) {
		if !splitTabs(line, f[:]) || f[0] == "" || f[1] == "" {
			bad.add(line)
			return
		}
		if f[0] == "gpg-pubkey" {
			return
		}
		pkgs = append(pkgs, Package{
			Name:    f[0],
			Version: strings.TrimPrefix(f[1], "(none):"),
			Arch:    f[2],
			Source:  sourceRPMName(f[3]),
			Manager: manager,
		})
	})
	return pkgs, bad.err()
}

// sourceRPMName turns "openssl-3.0.7-27.el9.src.rpm" into "openssl".
func sourceRPMName(s string) string {
	if s == "" || s == "(none)" {
		return ""
	}
	s = strings.TrimSuffix(strings.TrimSuffix(s, ".rpm"), ".src")
	s = strings.TrimSuffix(s, ".nosrc")
	// Drop "-release" then "-version".
	for k := 0; k < 2; k++ {
		i := strings.LastIndexByte(s, '-')
		if i <= 0 {
			return s
		}
		s = s[:i]
	}
	return s
}

// splitNameArch splits "openssl-libs.x86_64" at the last dot when what
// follows is a known RPM architecture.
func splitNameArch(s string) (name, arch string) {
	i := strings.LastIndexByte(s, '.')
	if i <= 0 {
		return s, ""
	}
	if rpmArches[s[i+1:]] {
		return s[:i], s[i+1:]
	}
	return s, ""
}

// rpmArches are the architecture suffixes that appear in dnf, yum and
// zypper listings.
var rpmArches = map[string]bool{
	"noarch": true, "x86_64": true, "i686": true, "i586": true, "i386": true,
	"aarch64": true, "ppc64le": true, "ppc64": true, "s390x": true,
	"armv7hl": true, "armv7hnl": true, "riscv64": true, "src": true,
}

// splitNEVRA splits "openssl-libs-1:3.0.7-27.el9.x86_64" into name, EVR and
// arch: arch after the last dot, release and version after the last two
// dashes.
func splitNEVRA(s string) (name, evr, arch string, ok bool) {
	na, arch := splitNameArch(s)
	if arch == "" {
		return "", "", "", false
	}
	r := strings.LastIndexByte(na, '-')
	if r <= 0 {
		return "", "", "", false
	}
	v := strings.LastIndexByte(na[:r], '-')
	if v <= 0 {
		return "", "", "", false
	}
	return na[:v], na[v+1:], arch, true
}

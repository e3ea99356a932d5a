package pkgmgr

import "strings"

// ParseDNFCheckUpdate parses "dnf -q check-update" (and yum's):
//
//	openssl-libs.x86_64        1:3.0.7-27.el9        baseos
//
// A name too long for its column is printed alone with the rest on the next
// line; both are joined. Parsing stops at "Obsoleting Packages", whose lines
// repeat packages already listed. Current is left empty (see FillCurrent).
func ParseDNFCheckUpdate(out []byte) ([]Upgradable, error) {
	bad := lineErrs{parser: "dnf check-update"}
	var ups []Upgradable
	pending, stop := "", false
	eachLine(out, func(line string) {
		if stop {
			return
		}
		if strings.HasPrefix(line, "Obsoleting Packages") {
			stop = true
			return
		}
		if strings.HasPrefix(line, "Last metadata expiration") || strings.HasPrefix(line, "Security:") {
			return
		}
		f := strings.Fields(line)
		if pending != "" {
			f = append([]string{pending}, f...)
			pending = ""
		}
		if len(f) == 1 {
			if _, arch := splitNameArch(f[0]); arch != "" {
				pending = f[0]
				return
			}
		}
		if len(f) != 3 {
			bad.add(line)
			return
		}
		name, arch := splitNameArch(f[0])
		if arch == "" {
			bad.add(line)
			return
		}
		ups = append(ups, Upgradable{Name: name, Arch: arch, Candidate: f[1]})
	})
	if pending != "" {
		bad.add(pending)
	}
	return ups, bad.err()
}

// ParseDNFUpdateinfo reads "dnf -q updateinfo list --security" and returns
// the set of "name.arch" with a security advisory. dnf 4 prints
//
//	RHSA-2024:2484 Moderate/Sec.  shadow-utils-2:4.9-8.el9.x86_64
//
// and dnf 5 adds type and date columns; the package is found as the first
// field that parses as a NEVRA either way.
func ParseDNFUpdateinfo(out []byte) (map[string]bool, error) {
	bad := lineErrs{parser: "dnf updateinfo"}
	sec := map[string]bool{}
	eachLine(out, func(line string) {
		f := strings.Fields(line)
		if len(f) > 0 && (f[0] == "Name" || strings.HasPrefix(line, "Last metadata")) {
			return // dnf 5 header, dnf 4 notice
		}
		for _, w := range f[1:] {
			if name, _, arch, ok := splitNEVRA(w); ok {
				sec[name+"."+arch] = true
				return
			}
		}
		bad.add(line)
	})
	return sec, bad.err()
}

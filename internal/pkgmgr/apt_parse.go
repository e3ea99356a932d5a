package pkgmgr

import "strings"

// ParseDpkgQuery parses dpkg-query output in dpkgQueryFormat. Packages dpkg
// only remembers (status not-installed or config-files) are skipped; those
// half installed or half configured are kept since their files are on disk.
func ParseDpkgQuery(out []byte) ([]Package, error) {
	bad := lineErrs{parser: "dpkg-query"}
	pkgs := make([]Package, 0, len(out)/60)
	var f [5]string
	eachLine(out, func(line string) {
		if !splitTabs(line, f[:]) || f[0] == "" {
			bad.add(line)
			return
		}
		status := strings.TrimSpace(f[4])
		if len(status) < 2 {
			bad.add(line)
			return
		}
		if status[1] == 'n' || status[1] == 'c' || f[1] == "" {
			return
		}
		src := f[3]
		if src == "" {
			src = f[0]
		}
		pkgs = append(pkgs, Package{Name: f[0], Version: f[1], Arch: f[2], Source: src, Manager: "apt"})
	})
	return pkgs, bad.err()
}

// ParseAptSimulate reads the "Inst" lines of apt-get -s upgrade or
// dist-upgrade:
//
//	Inst bash [5.2.15-2+b8] (5.2.15-2+b13 Debian:12.15/oldstable [amd64])
//	Inst libssl3 [3.0.15-1~deb12u1] (3.0.17-1~deb12u2 Debian:12.15/oldstable, Debian-Security:12/oldstable-security [amd64]) []
//
// Lines for packages not yet installed (no "[current]") are new dependencies,
// not upgrades, and are skipped; so are Conf, Remv and all other lines.
func ParseAptSimulate(out []byte) ([]Upgradable, error) {
	bad := lineErrs{parser: "apt-get -s"}
	var ups []Upgradable
	eachLine(out, func(line string) {
		if !strings.HasPrefix(line, "Inst ") {
			return
		}
		u, ok, isNew := parseInst(line[len("Inst "):])
		if isNew {
			return
		}
		if !ok {
			bad.add(line)
			return
		}
		ups = append(ups, u)
	})
	return ups, bad.err()
}

// parseInst parses an Inst line after "Inst ".
func parseInst(s string) (u Upgradable, ok, isNew bool) {
	name, rest, found := strings.Cut(s, " ")
	if !found || name == "" {
		return u, false, false
	}
	if !strings.HasPrefix(rest, "[") {
		return u, false, strings.HasPrefix(rest, "(")
	}
	end := strings.IndexByte(rest, ']')
	if end < 0 {
		return u, false, false
	}
	u.Current = rest[1:end]
	rest = strings.TrimSpace(rest[end+1:])
	open, closing := strings.IndexByte(rest, '('), strings.LastIndexByte(rest, ')')
	if open != 0 || closing < 0 {
		return u, false, false
	}
	inner := rest[1:closing]
	u.Candidate, inner, _ = strings.Cut(inner, " ")
	// The architecture is the last bracketed word: "… [amd64]".
	if i := strings.LastIndexByte(inner, '['); i >= 0 && strings.HasSuffix(inner, "]") {
		u.Arch = inner[i+1 : len(inner)-1]
		inner = inner[:i]
	}
	if n, arch, ok := strings.Cut(name, ":"); ok {
		name = n
		if u.Arch == "" {
			u.Arch = arch
		}
	}
	u.Name = name
	for _, o := range strings.Split(inner, ",") {
		if isSecurityOrigin(strings.TrimSpace(o)) {
			u.Security = true
		}
	}
	return u, u.Candidate != "" && u.Current != "", false
}

// isSecurityOrigin reports an apt origin ("Label:Version/Suite", as apt-get
// -s prints it, or a bare suite as apt list prints it) of a security
// archive: Debian's label "Debian-Security" (also for Debian ≤10, whose
// suite lacked the suffix) and Debian/Ubuntu suites ending in "-security".
// The delimiter test keeps a name like "my-security-tools" from matching.
func isSecurityOrigin(o string) bool {
	o = strings.ToLower(o)
	for {
		i := strings.Index(o, "-security")
		if i < 0 {
			return false
		}
		o = o[i+len("-security"):]
		if o == "" || strings.IndexByte(" ,:/]", o[0]) >= 0 {
			return true
		}
	}
}

// ParseAptList parses "apt list --upgradable", the alternative listing:
//
//	apt/oldstable-security 2.6.2 amd64 [upgradable from: 2.6.1]
func ParseAptList(out []byte) ([]Upgradable, error) {
	bad := lineErrs{parser: "apt list"}
	var ups []Upgradable
	eachLine(out, func(line string) {
		if strings.HasPrefix(line, "Listing...") || strings.HasPrefix(line, "WARNING:") {
			return
		}
		f := strings.Fields(line)
		const marker = "[upgradable"
		if len(f) < 6 || f[3] != marker || f[4] != "from:" {
			bad.add(line)
			return
		}
		name, suites, ok := strings.Cut(f[0], "/")
		if !ok || name == "" {
			bad.add(line)
			return
		}
		u := Upgradable{Name: name, Candidate: f[1], Arch: f[2], Current: strings.TrimSuffix(f[5], "]")}
		for _, s := range strings.Split(suites, ",") {
			if isSecurityOrigin(s) {
				u.Security = true
			}
		}
		ups = append(ups, u)
	})
	return ups, bad.err()
}

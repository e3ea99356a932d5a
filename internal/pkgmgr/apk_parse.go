package pkgmgr

import "strings"

// splitAPKNameVersion splits "libstdc++-12.2.1_git20220924-r10" at the dash
// that starts the version: the last dash followed by a digit before the
// "-rN" release.
func splitAPKNameVersion(s string) (name, version string, ok bool) {
	r := strings.LastIndex(s, "-r")
	if r <= 0 || !allDigits(s[r+2:]) {
		return "", "", false
	}
	v := strings.LastIndexByte(s[:r], '-')
	if v <= 0 || v+1 >= r || !isDigit(s[v+1]) {
		return "", "", false
	}
	return s[:v], s[v+1:], true
}

// apkListLine splits "musl-1.2.4-r2 x86_64 {musl} (MIT) [installed]" into
// its name, version, arch and origin.
func apkListLine(line string) (name, version, arch, origin string, ok bool) {
	f := strings.Fields(line)
	if len(f) == 0 {
		return "", "", "", "", false
	}
	name, version, ok = splitAPKNameVersion(f[0])
	if !ok {
		return "", "", "", "", false
	}
	if len(f) >= 2 {
		arch = f[1]
	}
	if len(f) >= 3 && strings.HasPrefix(f[2], "{") && strings.HasSuffix(f[2], "}") {
		origin = f[2][1 : len(f[2])-1]
	}
	return name, version, arch, origin, true
}

// ParseAPKList parses "apk list -I" and, as a fallback format, "apk info -v"
// (one "name-version" word per line, no architecture or origin).
func ParseAPKList(out []byte) ([]Package, error) {
	bad := lineErrs{parser: "apk list"}
	pkgs := make([]Package, 0, len(out)/50)
	eachLine(out, func(line string) {
		if strings.HasPrefix(line, "WARNING:") {
			return
		}
		name, version, arch, origin, ok := apkListLine(line)
		if !ok {
			bad.add(line)
			return
		}
		if origin == "" {
			origin = name
		}
		pkgs = append(pkgs, Package{Name: name, Version: version, Arch: arch, Source: origin, Manager: "apk"})
	})
	return pkgs, bad.err()
}

// ParseAPKListUpgradable parses "apk list -u":
//
//	busybox-1.36.1-r7 x86_64 {busybox} (GPL-2.0-only) [upgradable from: busybox-1.36.1-r5]
func ParseAPKListUpgradable(out []byte) ([]Upgradable, error) {
	bad := lineErrs{parser: "apk list -u"}
	var ups []Upgradable
	eachLine(out, func(line string) {
		if strings.HasPrefix(line, "WARNING:") {
			return
		}
		name, cand, arch, _, ok := apkListLine(line)
		const marker = "[upgradable from: "
		i := strings.Index(line, marker)
		if !ok || i < 0 || !strings.HasSuffix(line, "]") {
			bad.add(line)
			return
		}
		_, cur, ok := splitAPKNameVersion(line[i+len(marker) : len(line)-1])
		if !ok {
			bad.add(line)
			return
		}
		ups = append(ups, Upgradable{Name: name, Current: cur, Candidate: cand, Arch: arch})
	})
	return ups, bad.err()
}

// ParseAPKVersion parses "apk version -l '<'", the alternative listing:
//
//	Installed:                                Available:
//	busybox-1.36.1-r5                       < 1.36.1-r7
func ParseAPKVersion(out []byte) ([]Upgradable, error) {
	bad := lineErrs{parser: "apk version"}
	var ups []Upgradable
	eachLine(out, func(line string) {
		f := strings.Fields(line)
		if len(f) > 0 && (f[0] == "Installed:" || f[0] == "WARNING:" || strings.HasPrefix(f[0], "fetch")) {
			return
		}
		if len(f) != 3 || f[1] != "<" {
			bad.add(line)
			return
		}
		name, cur, ok := splitAPKNameVersion(f[0])
		if !ok {
			bad.add(line)
			return
		}
		ups = append(ups, Upgradable{Name: name, Current: cur, Candidate: f[2]})
	})
	return ups, bad.err()
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return s != ""
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

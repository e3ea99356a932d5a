package pkgmgr

import "strings"

// ParseAptPolicy parses `apt-cache policy <names…>` (LC_ALL=C) into the
// packages whose candidate differs from the installed version: a header
// line "name:" (or "name:arch:" for a foreign architecture), then
// "  Installed: v", "  Candidate: v" and the version table, where each
// version line ("     v prio", " *** v prio" for the installed one) is
// followed by its sources ("        500 http://… bookworm-security/main
// amd64 Packages"). The candidate is a security update when one of its
// sources is a security suite. Packages not installed, without a
// candidate or up to date are left out; Held is not set (see AddHeld).
func ParseAptPolicy(out []byte) ([]Upgradable, error) {
	bad := lineErrs{parser: "apt-cache policy"}
	var ups []Upgradable
	type pkg struct {
		name, arch, installed, candidate string
		security, inCandidate            bool
	}
	var cur *pkg
	flush := func() {
		if cur == nil {
			return
		}
		if cur.installed != "" && cur.installed != "(none)" && cur.candidate != "" && cur.candidate != "(none)" && cur.candidate != cur.installed {
			ups = append(ups, Upgradable{Name: cur.name, Arch: cur.arch, Current: cur.installed, Candidate: cur.candidate, Security: cur.security})
		}
		cur = nil
	}
	eachLine(out, func(line string) {
		trimmed := strings.TrimSpace(line)
		switch {
		case !strings.HasPrefix(line, " ") && strings.HasSuffix(line, ":"):
			flush()
			name := strings.TrimSuffix(line, ":")
			p := &pkg{name: name}
			if n, a, ok := strings.Cut(name, ":"); ok {
				p.name, p.arch = n, a
			}
			if p.name == "" || strings.ContainsAny(p.name, " \t") {
				bad.add(line)
				return
			}
			cur = p
		case cur == nil:
			bad.add(line)
		case strings.HasPrefix(trimmed, "Installed:"):
			cur.installed = strings.TrimSpace(strings.TrimPrefix(trimmed, "Installed:"))
		case strings.HasPrefix(trimmed, "Candidate:"):
			cur.candidate = strings.TrimSpace(strings.TrimPrefix(trimmed, "Candidate:"))
		case trimmed == "Version table:":
		case strings.HasPrefix(line, " *** ") || (strings.HasPrefix(line, "     ") && !strings.HasPrefix(line, "      ")):
			// A version line: the sources below it belong to this version.
			f := strings.Fields(strings.TrimPrefix(trimmed, "*** "))
			cur.inCandidate = len(f) > 0 && f[0] == cur.candidate
		case strings.HasPrefix(line, "        "):
			if cur.inCandidate && isSecuritySource(trimmed) {
				cur.security = true
			}
		default:
			bad.add(line)
		}
	})
	flush()
	return ups, bad.err()
}

// isSecuritySource reports whether a version-table source line names a
// security suite ("… bookworm-security/main amd64 Packages", Ubuntu's
// "… noble-security/main …").
func isSecuritySource(line string) bool {
	for _, f := range strings.Fields(line) {
		suite, _, _ := strings.Cut(f, "/")
		if strings.HasSuffix(suite, "-security") {
			return true
		}
	}
	return false
}

package pkgmgr

import (
	"fmt"
	"regexp"

	"github.com/lcmproject/lcm/internal/domain"
)

// maxNames bounds one command's package list; beyond it the command line
// risks ARG_MAX on small hosts and the job log becomes unreadable.
const maxNames = 500

// maxNameLen is generous: the longest Debian package name is under 100 bytes.
const maxNameLen = 200

// Name rules per family. All forbid a leading '-' (option injection) and
// every shell metacharacter; quoting is a second, independent line of defence.
var (
	// Debian policy §5.6.1 (lower case, digits, + - .; ≥2 chars, starts
	// alphanumeric), with an optional ":arch" qualifier.
	debName = regexp.MustCompile(`^[a-z0-9][a-z0-9+.-]+(:[a-z0-9-]+)?$`)
	// RPM names: letters, digits, and . _ + -; starting alphanumeric or '_'.
	rpmName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._+-]*$`)
	// Arch packaging rules: lower case alphanumerics and @ . _ + -, not
	// starting with '-' or '.'.
	pacmanName = regexp.MustCompile(`^[a-z0-9@_+][a-z0-9@._+-]*$`)
	// Alpine APKBUILD pkgname rules.
	apkName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._+-]*$`)
)

// validateNames checks a non-empty list of package names against rule.
func validateNames(f Family, rule *regexp.Regexp, names []string) error {
	if len(names) == 0 {
		return domain.Invalid("no_packages", "no package names given")
	}
	if len(names) > maxNames {
		return domain.Invalid("too_many_packages", fmt.Sprintf("at most %d packages per command", maxNames))
	}
	for _, n := range names {
		if len(n) > maxNameLen || !rule.MatchString(n) {
			return domain.Invalid("bad_package_name", fmt.Sprintf("%q is not a valid %s package name", n, f))
		}
	}
	return nil
}

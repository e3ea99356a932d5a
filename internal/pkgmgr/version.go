package pkgmgr

import (
	"strings"

	apkversion "github.com/knqyf263/go-apk-version"
	debversion "github.com/knqyf263/go-deb-version"
	rpmversion "github.com/knqyf263/go-rpm-version"
)

// CompareDeb orders Debian versions per Debian policy §5.6.12. A string that
// is not a valid Debian version sorts by plain byte order, so a garbled
// listing can never panic the refresh job.
func CompareDeb(a, b string) int {
	va, errA := debversion.NewVersion(a)
	vb, errB := debversion.NewVersion(b)
	if errA != nil || errB != nil {
		// Byte order keeps the comparison antisymmetric for garbage.
		return strings.Compare(a, b)
	}
	return sign(va.Compare(vb))
}

// sign maps any integer to -1, 0 or 1.
func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}

// CompareRPM orders RPM "[epoch:]version[-release]" strings as rpm does
// (knqyf263/go-rpm-version: epoch numerically, absent or "(none)" = 0,
// then version and release with rpmvercmp; a missing release sorts
// before any release, as rpm's own EVR comparison does). pacman's vercmp
// uses the same scheme. TestCompareRPMAgainstRPM compares it with rpm.
func CompareRPM(a, b string) int {
	return sign(rpmversion.NewVersion(a).Compare(rpmversion.NewVersion(b)))
}

// CompareAPK orders Alpine package versions as apk-tools' version.c does
// (knqyf263/go-apk-version is a port of it): numeric components, the
// optional letter, suffixes (_alpha < _beta < _pre < _rc < none < _cvs <
// _svn < _git < _hg < _p), then the -rN package release. A string that
// is not an apk version sorts by plain byte order against a valid one,
// so a garbled listing cannot panic a scan.
func CompareAPK(a, b string) int {
	va, errA := apkversion.NewVersion(a)
	vb, errB := apkversion.NewVersion(b)
	if errA != nil || errB != nil {
		return strings.Compare(a, b)
	}
	return sign(va.Compare(vb))
}

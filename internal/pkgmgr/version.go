package pkgmgr

import (
	"strings"

	debversion "github.com/knqyf263/go-deb-version"
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

// CompareRPM orders RPM "[epoch:]version[-release]" strings: epoch
// numerically (absent = 0), then version and release with rpmvercmp. The
// release is compared only when both sides have one, as rpm does when a
// dependency omits it. pacman's vercmp uses the same scheme.
func CompareRPM(a, b string) int {
	ea, va, ra := splitEVR(a)
	eb, vb, rb := splitEVR(b)
	if c := compareDigits(ea, eb); c != 0 {
		return c
	}
	if c := RPMVerCmp(va, vb); c != 0 {
		return c
	}
	if ra == "" || rb == "" {
		return 0
	}
	return RPMVerCmp(ra, rb)
}

// splitEVR splits "epoch:version-release". A missing or non-numeric epoch is
// "0"; the release is what follows the last '-'.
func splitEVR(s string) (epoch, version, release string) {
	epoch = "0"
	if i := strings.IndexByte(s, ':'); i >= 0 {
		switch e := s[:i]; {
		case allDigits(e):
			epoch, s = e, s[i+1:]
		case e == "" || e == "(none)": // rpm --qf prints "(none)" for no epoch
			s = s[i+1:]
		}
	}
	if i := strings.LastIndexByte(s, '-'); i >= 0 {
		return epoch, s[:i], s[i+1:]
	}
	return epoch, s, ""
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
func isAlpha(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }

// compareDigits orders two digit strings of any length numerically.
func compareDigits(a, b string) int {
	a = strings.TrimLeft(a, "0")
	b = strings.TrimLeft(b, "0")
	if len(a) != len(b) {
		if len(a) > len(b) {
			return 1
		}
		return -1
	}
	return strings.Compare(a, b)
}

// RPMVerCmp is rpm's rpmvercmp (rpm ≥ 4.15, lib/rpmvercmp.c): compare
// alternating runs of digits and letters, separators ignored; digits beat
// letters; '~' sorts before anything (even the end: 1.0~rc1 < 1.0); '^'
// sorts after the end but before anything else (1.0 < 1.0^git1 < 1.0.1).
func RPMVerCmp(a, b string) int {
	if a == b {
		return 0
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		for i < len(a) && !isAlnum(a[i]) && a[i] != '~' && a[i] != '^' {
			i++
		}
		for j < len(b) && !isAlnum(b[j]) && b[j] != '~' && b[j] != '^' {
			j++
		}
		ca, cb := at(a, i), at(b, j)
		if ca == '~' || cb == '~' {
			if ca != '~' {
				return 1
			}
			if cb != '~' {
				return -1
			}
			i, j = i+1, j+1
			continue
		}
		if ca == '^' || cb == '^' {
			switch {
			case i >= len(a):
				return -1
			case j >= len(b):
				return 1
			case ca != '^':
				return 1
			case cb != '^':
				return -1
			}
			i, j = i+1, j+1
			continue
		}
		if i >= len(a) || j >= len(b) {
			break
		}
		si, sj := i, j
		isNum := isDigit(a[i])
		if isNum {
			for i < len(a) && isDigit(a[i]) {
				i++
			}
			for j < len(b) && isDigit(b[j]) {
				j++
			}
		} else {
			for i < len(a) && isAlpha(a[i]) {
				i++
			}
			for j < len(b) && isAlpha(b[j]) {
				j++
			}
		}
		// b's segment is of the other type (or empty): numbers are newer.
		if sj == j {
			if isNum {
				return 1
			}
			return -1
		}
		var c int
		if isNum {
			c = compareDigits(a[si:i], b[sj:j])
		} else {
			c = strings.Compare(a[si:i], b[sj:j])
		}
		if c != 0 {
			return c
		}
	}
	switch {
	case i >= len(a) && j >= len(b):
		return 0
	case i >= len(a):
		return -1
	}
	return 1
}

func isAlnum(c byte) bool { return isDigit(c) || isAlpha(c) }

// at returns s[i] or 0 past the end.
func at(s string, i int) byte {
	if i < len(s) {
		return s[i]
	}
	return 0
}

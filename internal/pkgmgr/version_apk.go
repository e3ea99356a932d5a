package pkgmgr

import "strings"

// apkSuffixRank orders Alpine version suffixes: pre-releases sort before
// the plain release, post-release markers after it (apk-tools version.c).
var apkSuffixRank = map[string]int{
	"alpha": 0, "beta": 1, "pre": 2, "rc": 3,
	// 4 is "no suffix"
	"cvs": 5, "svn": 6, "git": 7, "hg": 8, "p": 9,
}

// apkNoSuffix is the rank of a version without suffix.
const apkNoSuffix = 4

type apkVersion struct {
	nums     []string // dot-separated numeric components
	letter   byte     // optional single letter after the numbers (1.2a)
	suffixes [][2]string
	rev      string // the N of -rN
}

// parseAPK parses "1.2.3a_rc1_p2-r4"; ok is false for anything else.
func parseAPK(s string) (v apkVersion, ok bool) {
	if i := strings.LastIndex(s, "-r"); i >= 0 && allDigits(s[i+2:]) {
		v.rev, s = s[i+2:], s[:i]
	}
	main, suf, _ := strings.Cut(s, "_")
	if main == "" {
		return v, false
	}
	if c := main[len(main)-1]; isAlpha(c) {
		v.letter, main = c, main[:len(main)-1]
	}
	for _, n := range strings.Split(main, ".") {
		if !allDigits(n) {
			return v, false
		}
		v.nums = append(v.nums, n)
	}
	if suf != "" {
		for _, s := range strings.Split(suf, "_") {
			k := strings.TrimRight(s, "0123456789")
			if _, known := apkSuffixRank[k]; !known {
				return v, false
			}
			v.suffixes = append(v.suffixes, [2]string{k, s[len(k):]})
		}
	}
	return v, true
}

// CompareAPK orders Alpine package versions: numeric components, the
// optional letter, suffixes (_alpha < _beta < _pre < _rc < none < _cvs <
// _svn < _git < _hg < _p), then the -rN package release. Strings that are
// not apk versions fall back to CompareRPM.
func CompareAPK(a, b string) int {
	va, okA := parseAPK(a)
	vb, okB := parseAPK(b)
	if !okA || !okB {
		return CompareRPM(a, b)
	}
	for k := 0; k < max(len(va.nums), len(vb.nums)); k++ {
		switch {
		case k >= len(va.nums):
			return -1
		case k >= len(vb.nums):
			return 1
		}
		if c := compareDigits(va.nums[k], vb.nums[k]); c != 0 {
			return c
		}
	}
	if va.letter != vb.letter {
		if va.letter < vb.letter {
			return -1
		}
		return 1
	}
	for k := 0; k < max(len(va.suffixes), len(vb.suffixes)); k++ {
		ra, rb := apkNoSuffix, apkNoSuffix
		na, nb := "", ""
		if k < len(va.suffixes) {
			ra, na = apkSuffixRank[va.suffixes[k][0]], va.suffixes[k][1]
		}
		if k < len(vb.suffixes) {
			rb, nb = apkSuffixRank[vb.suffixes[k][0]], vb.suffixes[k][1]
		}
		if ra != rb {
			if ra < rb {
				return -1
			}
			return 1
		}
		if c := compareDigits(na, nb); c != 0 {
			return c
		}
	}
	return compareDigits(va.rev, vb.rev)
}

package password

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// minIdentityTerm is the shortest identity fragment that is looked for. Why:
// a two-letter first name ("Li") or e-mail label would reject a large share
// of good passwords by coincidence.
const minIdentityTerm = 3

// seqLen is the length from which a sequence counts: "abc" and "123" occur in
// plenty of good passwords, four in a row are a pattern.
const seqLen = 4

// maxRun is the length from which a run of one character counts as
// repetition ("aaaa", "1111"), and blockRepeats how often a block of 2-3
// characters must repeat back to back ("ababab", "abcabcabc").
const (
	maxRun       = 4
	blockRepeats = 3
	maxBlock     = 3
)

// class bits for tooFewClasses.
const (
	classUpper = 1 << iota
	classLower
	classDigit
	classSymbol
)

// tooFewClasses reports whether rs mixes too few character classes. Letters
// without case (CJK, Arabic, …) count as lower case; control and format
// characters count as no class (they break their own rule).
func tooFewClasses(rs []rune) bool {
	var seen int
	for _, r := range rs {
		switch {
		case isControl(r):
		case unicode.IsUpper(r) || unicode.IsTitle(r):
			seen |= classUpper
		case unicode.IsLetter(r):
			seen |= classLower
		case unicode.IsDigit(r):
			seen |= classDigit
		default:
			seen |= classSymbol
		}
	}
	n := 0
	for ; seen != 0; seen &= seen - 1 {
		n++
	}
	need := MinClasses
	if len(rs) >= LongLength {
		need = LongMinClasses
	}
	return n < need
}

// distinct counts the different runes of rs (case-sensitive).
func distinct(rs []rune) int {
	set := make(map[rune]struct{}, len(rs))
	for _, r := range rs {
		set[r] = struct{}{}
	}
	return len(set)
}

// identityTerms returns the folded fragments of id that must not occur in a
// password: the username, first and last name (whole and split at
// non-alphanumerics), the e-mail local part (whole and split at . _ - +) and
// every domain label except the top-level domain. Fragments shorter than
// minIdentityTerm are dropped.
func identityTerms(id Identity) []string {
	var terms []string
	add := func(s string) {
		s = strings.TrimSpace(s)
		if utf8.RuneCountInString(s) >= minIdentityTerm {
			terms = append(terms, fold(s))
		}
	}
	addSplit := func(s string) {
		add(s)
		parts := strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
		if len(parts) > 1 {
			for _, p := range parts {
				add(p)
			}
		}
	}
	addSplit(id.Username)
	addSplit(id.FirstName)
	addSplit(id.LastName)
	if local, domainPart, ok := strings.Cut(strings.TrimSpace(id.Email), "@"); ok || local != "" {
		addSplit(local)
		labels := strings.Split(domainPart, ".")
		if len(labels) > 1 {
			labels = labels[:len(labels)-1] // the TLD ("com", "org") identifies nobody
		}
		for _, l := range labels {
			add(l)
		}
	}
	return terms
}

// containsIdentity reports whether the folded password contains a folded
// identity fragment.
func containsIdentity(folded string, id Identity) bool {
	for _, t := range identityTerms(id) {
		if strings.Contains(folded, t) {
			return true
		}
	}
	return false
}

// dominatedByTerm reports whether a single obvious term (lists.terms)
// covers at least half of the password's characters, counting every
// (possibly overlapping) occurrence of that term: "Summer!Summer" and
// "xPassword2026" are dominated, "CorrectHorse-Battery" is not.
func dominatedByTerm(folded []rune) bool {
	n := len(folded)
	if n == 0 {
		return false
	}
	fs := string(folded)
	covered := make([]bool, n)
	for _, t := range lists.terms {
		if !strings.Contains(fs, t) {
			continue
		}
		clear(covered)
		tl := utf8.RuneCountInString(t)
		count := 0
		for off := 0; ; {
			i := strings.Index(fs[off:], t)
			if i < 0 {
				break
			}
			start := off + i
			rstart := utf8.RuneCountInString(fs[:start])
			for k := rstart; k < rstart+tl; k++ {
				if !covered[k] {
					covered[k] = true
					count++
				}
			}
			_, size := utf8.DecodeRuneInString(fs[start:])
			off = start + size
		}
		if 2*count >= n {
			return true
		}
	}
	return false
}

// isCommon reports whether the password, or its core after removing any
// leading and trailing digits, symbols and spaces ("!2026", "123"), folds to
// a listed common password. Every split of the non-letter prefix and suffix
// is tried, so leetspeak digits at the edges ("4dmin") still match.
func isCommon(rs, folded []rune) bool {
	n := len(rs)
	lead := 0
	for lead < n && !unicode.IsLetter(rs[lead]) {
		lead++
	}
	trail := 0
	for trail < n && !unicode.IsLetter(rs[n-1-trail]) {
		trail++
	}
	for i := 0; i <= lead && i < n; i++ {
		lo := max(i+lists.minLen, n-trail)
		hi := min(i+lists.maxLen, n)
		for j := lo; j <= hi; j++ {
			if _, ok := lists.common[string(folded[i:j])]; ok {
				return true
			}
		}
	}
	return false
}

// sequences are the predictable runs: alphabet, digits, the keyboard rows
// of QWERTY, QWERTZ and AZERTY, the shifted number rows (US and German) and
// the QWERTY/QWERTZ columns. Any seqLen window of one, forwards or
// backwards, counts.
var sequences = []string{
	"abcdefghijklmnopqrstuvwxyz",
	"0123456789",
	"1234567890",
	"qwertyuiop", "asdfghjkl", "zxcvbnm",
	"qwertzuiop", "yxcvbnm",
	"azertyuiop", "qsdfghjklm", "wxcvbn",
	"!@#$%^&*()", "!\"§$%&/()=",
	"1qaz", "2wsx", "3edc", "4rfv", "5tgb", "6yhn", "7ujm", "8ik,", "9ol.", "0p;/",
	"1qay", "6zhn",
}

// seqWindows holds every seqLen window of sequences, forwards and backwards.
var seqWindows = func() map[[seqLen]rune]struct{} {
	m := map[[seqLen]rune]struct{}{}
	for _, s := range sequences {
		rs := []rune(s)
		for range 2 {
			for i := 0; i+seqLen <= len(rs); i++ {
				m[[seqLen]rune(rs[i:i+seqLen])] = struct{}{}
			}
			for a, b := 0, len(rs)-1; a < b; a, b = a+1, b-1 {
				rs[a], rs[b] = rs[b], rs[a]
			}
		}
	}
	return m
}()

// hasSequence reports whether pw contains a seqLen window of a sequence,
// case-insensitively.
func hasSequence(pw string) bool {
	rs := []rune(strings.ToLower(pw))
	for i := 0; i+seqLen <= len(rs); i++ {
		if _, ok := seqWindows[[seqLen]rune(rs[i:i+seqLen])]; ok {
			return true
		}
	}
	return false
}

// hasRepetition reports a run of maxRun equal characters or a block of 2 to
// maxBlock characters repeated blockRepeats times back to back, comparing
// case-insensitively.
func hasRepetition(rs []rune) bool {
	lr := make([]rune, len(rs))
	for i, r := range rs {
		lr[i] = unicode.ToLower(r)
	}
	run := 1
	for i := 1; i < len(lr); i++ {
		if lr[i] == lr[i-1] {
			run++
			if run >= maxRun {
				return true
			}
		} else {
			run = 1
		}
	}
	for b := 2; b <= maxBlock; b++ {
		same := 0 // length of the current stretch where lr[i] == lr[i-b]
		for i := b; i < len(lr); i++ {
			if lr[i] == lr[i-b] {
				same++
				if same >= b*(blockRepeats-1) {
					return true
				}
			} else {
				same = 0
			}
		}
	}
	return false
}

// whitespaceEdge reports leading or trailing whitespace, which users cannot
// see and copy-paste tends to add or drop.
func whitespaceEdge(rs []rune) bool {
	return len(rs) > 0 && (unicode.IsSpace(rs[0]) || unicode.IsSpace(rs[len(rs)-1]))
}

// isControl reports control characters (Cc), invisible format characters
// (Cf: zero-width joiners, bidi overrides, BOM) and line/paragraph
// separators: they cannot be typed reliably and hide what the password is.
func isControl(r rune) bool {
	return unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp)
}

func hasControl(rs []rune) bool {
	for _, r := range rs {
		if isControl(r) {
			return true
		}
	}
	return false
}

// invalidEncoding reports invalid UTF-8 or U+FFFD: a JSON decoder replaces
// bad bytes with U+FFFD, so the stored password would differ from what the
// user typed.
func invalidEncoding(pw string) bool {
	return !utf8.ValidString(pw) || strings.ContainsRune(pw, utf8.RuneError)
}

package password

import (
	_ "embed"
	"strings"
	"unicode"
	"unicode/utf8"
)

// commonTxt is the embedded list of common and vendor-default passwords.
//
//go:embed common.txt
var commonTxt string

// termsTxt is the embedded list of obvious terms for dominated_by_term.
//
//go:embed terms.txt
var termsTxt string

// minListEntry is the shortest list entry that is used. Why: the length rule
// already rejects short passwords, and a three-letter core or term ("abc",
// "sex") would match far too much after leetspeak folding.
const minListEntry = 4

// minProductTerm is the shortest entry of terms.txt that is used. Why: the
// product name "lcm" has three letters and must still count; terms only
// dominate when they cover half the password, so a short term needs many
// repetitions to trigger.
const minProductTerm = 3

// wordlists holds the folded, de-duplicated lists, built once at init.
type wordlists struct {
	common         map[string]struct{} // folded common passwords
	minLen, maxLen int                 // rune-length range of common, to bound lookups
	terms          []string            // folded obvious terms
}

var lists = buildLists(commonTxt, termsTxt)

func buildLists(common, terms string) wordlists {
	w := wordlists{common: map[string]struct{}{}, minLen: 1 << 30}
	seenTerm := map[string]bool{}
	addTerm := func(f string) {
		if !seenTerm[f] {
			seenTerm[f] = true
			w.terms = append(w.terms, f)
		}
	}
	for _, e := range listLines(common) {
		n := utf8.RuneCountInString(e)
		if n < minListEntry {
			continue
		}
		f := fold(e)
		w.common[f] = struct{}{}
		w.minLen = min(w.minLen, n)
		w.maxLen = max(w.maxLen, n)
		if strings.IndexFunc(e, unicode.IsLetter) >= 0 {
			addTerm(f)
		}
	}
	for _, e := range listLines(terms) {
		if utf8.RuneCountInString(e) >= minProductTerm {
			addTerm(fold(e))
		}
	}
	return w
}

// listLines returns the trimmed, non-empty, non-comment lines of a list.
func listLines(s string) []string {
	var out []string
	for line := range strings.Lines(s) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		out = append(out, line)
	}
	return out
}

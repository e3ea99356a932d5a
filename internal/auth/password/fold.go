package password

import (
	"strings"
	"unicode"
)

// leet maps a lower-cased rune to its leetspeak "skeleton" letter. The
// mapping is applied to both sides of every comparison (password and list
// entry or identity term), so ambiguous substitutions are resolved by folding
// the letters together as well: "1", "!", "|", "l" and "i" all become "i",
// which makes "P4ssw0rd", "pa55word" and "password" the same skeleton.
var leet = map[rune]rune{
	'4': 'a', '@': 'a',
	'8': 'b',
	'3': 'e',
	'6': 'g', '9': 'g',
	'1': 'i', '!': 'i', '|': 'i', 'l': 'i',
	'0': 'o',
	'5': 's', '$': 's',
	'7': 't', '+': 't',
	'2': 'z',
}

// foldRune lower-cases r and maps it to its leetspeak skeleton.
func foldRune(r rune) rune {
	r = unicode.ToLower(r)
	if m, ok := leet[r]; ok {
		return m
	}
	return r
}

// fold returns the skeleton of s: one rune out for every rune in, so rune
// positions in the result match those of s.
func fold(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		b.WriteRune(foldRune(r))
	}
	return b.String()
}

// foldRunes is fold for a rune slice.
func foldRunes(rs []rune) []rune {
	out := make([]rune, len(rs))
	for i, r := range rs {
		out[i] = foldRune(r)
	}
	return out
}

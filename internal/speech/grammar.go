package speech

import (
	"strings"
	"unicode"

	"github.com/lcmproject/lcm/internal/domain"
)

// PhrasesGrammar builds a JSGF grammar that accepts exactly one of the
// phrases. Phrases are lower-cased and stripped of punctuation other than
// apostrophes; every word must be in the pocketsphinx dictionary, which
// Verify checks by running the grammar. Empty phrases are dropped.
func PhrasesGrammar(phrases []string) (string, error) {
	var alts []string
	seen := map[string]bool{}
	for _, p := range phrases {
		if n := normalizePhrase(p); n != "" && !seen[n] {
			seen[n] = true
			alts = append(alts, n)
		}
	}
	if len(alts) == 0 {
		return "", domain.Invalid(CodeInvalidSettings, "the phrase list holds no words")
	}
	var b strings.Builder
	b.WriteString("#JSGF V1.0;\ngrammar lcm;\npublic <phrase> = ")
	for i, a := range alts {
		if i > 0 {
			b.WriteString("\n  | ")
		}
		b.WriteString(a)
	}
	b.WriteString(";\n")
	return b.String(), nil
}

// normalizePhrase keeps letters, digits and apostrophes, lower case, single
// spaces: the tokens JSGF and cmudict share.
func normalizePhrase(p string) string {
	f := strings.FieldsFunc(strings.ToLower(p), func(r rune) bool {
		return !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '\'')
	})
	return strings.Join(f, " ")
}

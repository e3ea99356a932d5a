package password

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lcmproject/lcm/internal/domain"
)

// good is a 12-character password that passes every rule; tests derive
// failing variants from it.
const good = "Vq7#mZ2pLx9!"

func codes(v []Violation) []string {
	out := make([]string, len(v))
	for i, x := range v {
		out[i] = x.Code
	}
	return out
}

// longPassword returns a deterministic password of n runes that passes every
// rule (tried seed by seed until one does).
func longPassword(t *testing.T, n int) string {
	t.Helper()
	const alphabet = "ABCDEFGHJKMNPQRTUVWXYZabcdefghjkmnpqrtuvwxyz0123456789#%*-_=;:,.?"
	for seed := uint64(1); seed < 1000; seed++ {
		r := rand.New(rand.NewPCG(seed, 42))
		var b strings.Builder
		for range n {
			b.WriteByte(alphabet[r.IntN(len(alphabet))])
		}
		if Check(b.String(), Identity{}) == nil {
			return b.String()
		}
	}
	t.Fatalf("no passing password of length %d found", n)
	return ""
}

func TestCheckValidPasswords(t *testing.T) {
	for _, pw := range []string{
		good,
		"Xq9 mZ2pLx9!",                 // inner space is fine
		"Grüße-Ölfaß-7wk",              // multi-byte letters
		"Ünïcødé§Tëxt9",                // more multi-byte
		"correct horse battery staple", // 2 classes suffice from 20 characters
		"tr0ub4dor&3-kxw",
		"日本語のパスワードです9!", // uncased letters count as lower case
	} {
		t.Run(pw, func(t *testing.T) {
			assert.Empty(t, codes(Check(pw, Identity{})))
			assert.NoError(t, Validate(pw, Identity{}))
		})
	}
}

func TestCheckRules(t *testing.T) {
	id := Identity{Username: "jdoe42", FirstName: "Maria", LastName: "Li", Email: "anna.k@contoso.example.com"}
	tests := []struct {
		name string
		pw   string
		code string
		fail bool
	}{
		// too_short: counted in runes
		{"11 chars", "Vq7#mZ2pLx9", CodeTooShort, true},
		{"12 chars", "Vq7#mZ2pLx9!", CodeTooShort, false},
		{"11 runes, 12 bytes", "Vq7#mZ2pLxä", CodeTooShort, true},
		{"12 runes multi-byte", "Vq7#mZ2pLxäß", CodeTooShort, false},
		{"empty", "", CodeTooShort, true},

		// too_few_classes
		{"lower only", "vqhtmzkplxwe", CodeTooFewClasses, true},
		{"two classes at 12", "vq7hmz2plx9w", CodeTooFewClasses, true},
		{"three classes at 12", "vq7#mz2plx9w", CodeTooFewClasses, false},
		{"two classes at 19", "vq7hmz2plx9wr4kd8nf", CodeTooFewClasses, true},
		{"two classes at 20", "vq7hmz2plx9wr4kd8nfj", CodeTooFewClasses, false},
		{"one class at 20", "vqhtmzkplxwernfjdghk", CodeTooFewClasses, true},

		// too_few_distinct
		{"4 distinct", "Ab1!Ab1!Ab1!", CodeTooFewDistinct, true},
		{"5 distinct", "Ab1!xAb1!xAb", CodeTooFewDistinct, true},
		{"6 distinct", "Ab1!xyAb1!xy", CodeTooFewDistinct, false},

		// contains_identity
		{"username", "Xjdoe42#Zq9!", CodeContainsIdentity, true},
		{"username upper case", "XJDOE42#zq9!", CodeContainsIdentity, true},
		{"username leetspeak", "Xjd0e4z#Zq9!", CodeContainsIdentity, true},
		{"first name leetspeak", "9#mAR1a-Tkwz", CodeContainsIdentity, true},
		{"last name too short to count", "Vq7#mZ2pLix!", CodeContainsIdentity, false},
		{"email local part", "x7Q!anna#Zwy", CodeContainsIdentity, true},
		{"email domain label", "C0nt0so!9vQz#", CodeContainsIdentity, true},
		{"email second label", "x7Q!Example#Z", CodeContainsIdentity, true},
		{"tld ignored", "x7Q!com#Zwyv", CodeContainsIdentity, false},
		{"no identity", good, CodeContainsIdentity, false},

		// dominated_by_term
		{"common word over half", "Sunshine#7qZ", CodeDominatedByTerm, true},
		{"common word under half", "Sunshine#7qZwk4Rt", CodeDominatedByTerm, false},
		{"product name half", "lcm-Xq9#-lcm", CodeDominatedByTerm, true},
		{"product name under half", "lcm-Xq9#-lcmZ", CodeDominatedByTerm, false},
		{"month repeated", "M4rch!march!", CodeDominatedByTerm, true},
		{"vendor default repeated", "ubntubnt2026!", CodeDominatedByTerm, true},

		// common_password
		{"leet with year", "P4ssw0rd!2026", CodeCommonPassword, true},
		{"plain", "password", CodeCommonPassword, true},
		{"year prefix and suffix", "!!Admin2026!!", CodeCommonPassword, true},
		{"vendor default", "Raspberry#1985", CodeCommonPassword, true},
		{"leet at the edge", "4dm1n@2026#!", CodeCommonPassword, true},
		{"default with digits", "changeme123456", CodeCommonPassword, true},
		{"digits only", "123456789012", CodeCommonPassword, true},
		{"letters after the year", "Passworxd!2026", CodeCommonPassword, false},
		{"common word inside", "xAdmin2026!q", CodeCommonPassword, false},

		// sequence
		{"alphabet", "Xq9#abcdZ!7w", CodeSequence, true},
		{"alphabet backwards", "Xq9#dcbaZ!7w", CodeSequence, true},
		{"qwerty row", "Xq9#QWERZ!7w", CodeSequence, true},
		{"qwerty backwards", "Xq9#ytreZ!7w", CodeSequence, true},
		{"qwertz row", "Xq9#rtzuZ!7w", CodeSequence, true},
		{"azerty row", "Xq9#azerZ!7w", CodeSequence, true},
		{"digits", "Xq9#4567Z!pw", CodeSequence, true},
		{"digits backwards", "Xq9#4321Z!pw", CodeSequence, true},
		{"number row end", "Xq#7890Z!pwk", CodeSequence, true},
		{"shifted row", "Xq9!@#$Zmpw", CodeSequence, true},
		{"keyboard column", "1qaz#Xk9!Wmv", CodeSequence, true},
		{"three only", "Xq9#abcZ!7wm", CodeSequence, false},

		// repetition
		{"run of 4", "Xq9#aaaaZ!7w", CodeRepetition, true},
		{"run of 3", "Xq9#aaaZ!7wm", CodeRepetition, false},
		{"run of 4 mixed case", "XQ9#aAaAZ!7w", CodeRepetition, true},
		{"2-block three times", "Xq9#kmkmkmZ!", CodeRepetition, true},
		{"2-block twice", "Xq9#kmkmZ!7w", CodeRepetition, false},
		{"3-block three times", "Xq9#kmpkmpkmpZ", CodeRepetition, true},
		{"3-block twice", "Xq9#kmpkmpZ!w", CodeRepetition, false},
		{"symbol run", "Xq9#!!!!Zm7w", CodeRepetition, true},

		// whitespace_edge
		{"leading space", " Xq9#mZ2pLx9!", CodeWhitespaceEdge, true},
		{"trailing space", "Xq9#mZ2pLx9! ", CodeWhitespaceEdge, true},
		{"leading nbsp", "\u00a0Xq9#mZ2pLx9!", CodeWhitespaceEdge, true},
		{"inner space", "Xq9 mZ2pLx9!", CodeWhitespaceEdge, false},

		// control_character
		{"NUL", "Xq9#mZ\x002pLx9!", CodeControlCharacter, true},
		{"tab", "Xq9#mZ\t2pLx9!", CodeControlCharacter, true},
		{"newline", "Xq9#mZ2pLx9!\n", CodeControlCharacter, true},
		{"zero-width space", "Xq9#mZ\u200b2pLx9!", CodeControlCharacter, true},
		{"bidi override", "Xq9#mZ\u202e2pLx9!", CodeControlCharacter, true},
		{"line separator", "Xq9#mZ\u20282pLx9!", CodeControlCharacter, true},
		{"printable", good, CodeControlCharacter, false},

		// invalid_encoding
		{"invalid byte", "Xq9#mZ2pLx9!\xff", CodeInvalidEncoding, true},
		{"replacement char", "Xq9#mZ2pLx9!\uFFFD", CodeInvalidEncoding, true},
		{"valid", good, CodeInvalidEncoding, false},
	}
	for _, tt := range tests {
		t.Run(tt.code+"/"+tt.name, func(t *testing.T) {
			got := codes(Check(tt.pw, id))
			if tt.fail {
				assert.Contains(t, got, tt.code)
			} else {
				assert.NotContains(t, got, tt.code)
			}
		})
	}
}

func TestCheckLengthEdges(t *testing.T) {
	p200 := longPassword(t, MaxLength)
	require.Equal(t, 200, utf8.RuneCountInString(p200))
	assert.Empty(t, Check(p200, Identity{}))
	assert.Equal(t, []string{CodeTooLong}, codes(Check(p200+"k", Identity{})))

	// 200 runes of 2 bytes each (400 bytes) is still 200 characters.
	multi := []rune(p200)
	multi[0], multi[1] = 'ä', 'ö'
	assert.NotContains(t, codes(Check(string(multi), Identity{})), CodeTooLong)
	assert.Equal(t, []string{CodeTooLong}, codes(Check(string(multi)+"ü", Identity{})))

	// Huge inputs are cut short without running the other rules.
	assert.Equal(t, []string{CodeTooLong}, codes(Check(strings.Repeat("a", 1<<20), Identity{})))
}

func TestCheckOrderAndUnique(t *testing.T) {
	got := codes(Check("aaaa", Identity{}))
	for i := 1; i < len(got); i++ {
		assert.Less(t, slices.Index(Codes, got[i-1]), slices.Index(Codes, got[i]), "codes in Codes order: %v", got)
	}
	assert.Equal(t, CodeTooShort, got[0])
}

func TestValidate(t *testing.T) {
	err := Validate("P4ssw0rd!2026", Identity{})
	require.Error(t, err)
	assert.True(t, errors.Is(err, domain.ErrInvalid))
	var de *domain.Error
	require.True(t, errors.As(err, &de))
	assert.Equal(t, CodeCommonPassword, de.Code)
	details, ok := de.Details.([]Violation)
	require.True(t, ok)
	assert.Contains(t, codes(details), CodeCommonPassword)
	assert.NotContains(t, de.Message, "P4ssw0rd", "message must not echo the password")

	err = Validate("short", Identity{})
	require.True(t, errors.As(err, &de))
	assert.Equal(t, CodeTooShort, de.Code)
}

func TestEveryCodeHasMessageAndDoc(t *testing.T) {
	for _, c := range Codes {
		assert.NotEmpty(t, messages[c], c)
	}
}

func TestWordlistsLoaded(t *testing.T) {
	assert.Greater(t, len(lists.common), 250)
	assert.Contains(t, lists.terms, fold("lcm"))
	_, ok := lists.common[fold("ubnt")]
	assert.True(t, ok)
}

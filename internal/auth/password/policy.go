package password

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/lcmproject/lcm/internal/domain"
)

// Policy limits from the specification ("Limits" table).
const (
	// MinLength is the minimum length in characters (runes): the spec's floor.
	MinLength = 12
	// MaxLength is the maximum length in characters: the spec's ceiling; it
	// also bounds the work of the other rules and of hashing.
	MaxLength = 200
	// MinClasses is the number of character classes needed below
	// LongLength; three classes per the spec.
	MinClasses = 3
	// LongLength is the length from which LongMinClasses suffice: long
	// passphrases get their strength from length, not from symbols.
	LongLength = 20
	// LongMinClasses is the number of classes needed from LongLength on.
	LongMinClasses = 2
	// MinDistinct is the minimum number of distinct characters: the spec's
	// floor, which rules out "Aa1!Aa1!Aa1!"-style padding.
	MinDistinct = 6
)

// Machine-readable violation codes. They are part of the API: clients
// translate them, so never rename one.
const (
	CodeTooShort         = "too_short"
	CodeTooLong          = "too_long"
	CodeTooFewClasses    = "too_few_classes"
	CodeTooFewDistinct   = "too_few_distinct"
	CodeContainsIdentity = "contains_identity"
	CodeDominatedByTerm  = "dominated_by_term"
	CodeCommonPassword   = "common_password"
	CodeSequence         = "sequence"
	CodeRepetition       = "repetition"
	CodeWhitespaceEdge   = "whitespace_edge"
	CodeControlCharacter = "control_character"
	CodeInvalidEncoding  = "invalid_encoding"
)

// Codes lists every code [Check] can return, in the order it reports them.
// The order puts the most telling reason first, because Validate uses the
// first code: a leaked default password is a better explanation than a
// missing symbol.
var Codes = []string{
	CodeTooShort, CodeTooLong, CodeCommonPassword, CodeContainsIdentity,
	CodeDominatedByTerm, CodeSequence, CodeRepetition, CodeTooFewClasses,
	CodeTooFewDistinct, CodeWhitespaceEdge, CodeControlCharacter,
	CodeInvalidEncoding,
}

// Identity is what the policy knows about the account the password is for.
// Empty fields are ignored.
type Identity struct {
	Username  string
	FirstName string
	LastName  string
	Email     string
}

// Violation is one broken rule: a machine-readable code and an English
// message safe to show to the user (it never repeats the password).
type Violation struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Check returns every rule pw breaks, in the order of [Codes], or nil when
// pw satisfies the policy. A password longer than [MaxLength] is reported
// with too_long alone: the other rules are not worth running on input that
// has to change anyway, and skipping them bounds the work for huge inputs.
func Check(pw string, id Identity) []Violation {
	// A rune has at most utf8.UTFMax bytes, so this many bytes is too long
	// without counting.
	if len(pw) > MaxLength*utf8.UTFMax || utf8.RuneCountInString(pw) > MaxLength {
		return []Violation{violation(CodeTooLong)}
	}
	rs := []rune(pw)
	var out []Violation
	add := func(code string, broken bool) {
		if broken {
			out = append(out, violation(code))
		}
	}
	folded := foldRunes(rs)
	add(CodeTooShort, len(rs) < MinLength)
	add(CodeCommonPassword, isCommon(rs, folded))
	add(CodeContainsIdentity, containsIdentity(string(folded), id))
	add(CodeDominatedByTerm, dominatedByTerm(folded))
	add(CodeSequence, hasSequence(pw))
	add(CodeRepetition, hasRepetition(rs))
	add(CodeTooFewClasses, tooFewClasses(rs))
	add(CodeTooFewDistinct, distinct(rs) < MinDistinct)
	add(CodeWhitespaceEdge, whitespaceEdge(rs))
	add(CodeControlCharacter, hasControl(rs))
	add(CodeInvalidEncoding, invalidEncoding(pw))
	return out
}

// Validate checks pw and returns nil or a *domain.Error of kind
// domain.ErrInvalid whose Code is the first violation's code, and whose
// Details is the full []Violation.
func Validate(pw string, id Identity) error {
	v := Check(pw, id)
	if len(v) == 0 {
		return nil
	}
	msgs := make([]string, len(v))
	for i, x := range v {
		msgs[i] = x.Message
	}
	return &domain.Error{
		Kind:    domain.ErrInvalid,
		Code:    v[0].Code,
		Message: "password rejected: " + strings.Join(msgs, "; "),
		Details: v,
	}
}

// messages holds the user-facing text per code.
var messages = map[string]string{
	CodeTooShort:         fmt.Sprintf("must be at least %d characters long", MinLength),
	CodeTooLong:          fmt.Sprintf("must be at most %d characters long", MaxLength),
	CodeTooFewClasses:    fmt.Sprintf("must mix at least %d of upper case, lower case, digits and symbols (%d from %d characters)", MinClasses, LongMinClasses, LongLength),
	CodeTooFewDistinct:   fmt.Sprintf("must contain at least %d different characters", MinDistinct),
	CodeContainsIdentity: "must not contain the user name, first or last name, or part of the e-mail address",
	CodeDominatedByTerm:  "must not consist mostly of a common word or the product name",
	CodeCommonPassword:   "is a well-known or default password",
	CodeSequence:         "must not contain keyboard, alphabet or digit sequences of 4 or more",
	CodeRepetition:       "must not repeat a character 4 times or a short block 3 times",
	CodeWhitespaceEdge:   "must not start or end with whitespace",
	CodeControlCharacter: "must not contain control or invisible formatting characters",
	CodeInvalidEncoding:  "contains invalid or replaced (U+FFFD) characters",
}

func violation(code string) Violation { return Violation{Code: code, Message: messages[code]} }

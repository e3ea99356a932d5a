package httpapi

import (
	"fmt"
	"unicode/utf8"
)

// Codes of a JSON body whose text is refused before it is decoded.
const (
	codeInvalidUTF8 = "invalid_utf8"
	codeNULChar     = "nul_character"
)

// jsonTextProblem checks what encoding/json would silently change or let
// through in a request body's strings: bytes that are not UTF-8 (decoded
// as U+FFFD, so "a\xffb" would be stored as "a�b" while the same in a path
// is a 400), an escaped lone surrogate (also decoded as U+FFFD), and the
// NUL character (\u0000), which no name, text or identifier of the API
// carries and which PostgreSQL cannot store in text. It returns a code and
// message for the 400, or "" when the text is fine; a body that is not
// JSON at all is left to the decoder's syntax error.
func jsonTextProblem(raw []byte) (code, msg string) {
	if !utf8.Valid(raw) {
		off := 0
		for off < len(raw) {
			r, n := utf8.DecodeRune(raw[off:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			off += n
		}
		return codeInvalidUTF8, fmt.Sprintf("the request body is not valid UTF-8 (byte %d): JSON text must be UTF-8", off)
	}
	inString := false
	for i := 0; i < len(raw); i++ {
		b := raw[i]
		if !inString {
			inString = b == '"'
			continue
		}
		switch b {
		case '"':
			inString = false
		case '\\':
			if i+1 >= len(raw) {
				return "", ""
			}
			if raw[i+1] != 'u' {
				i++ // \" \\ \/ \b \f \n \r \t (or a syntax error)
				continue
			}
			r, ok := hex4(raw, i+2)
			if !ok {
				return "", ""
			}
			switch {
			case r == 0:
				return codeNULChar, fmt.Sprintf("a string in the request body contains the NUL character \\u0000 (byte %d)", i)
			case r >= 0xD800 && r < 0xDC00:
				if i+11 < len(raw) && raw[i+6] == '\\' && raw[i+7] == 'u' {
					if lo, ok := hex4(raw, i+8); ok && lo >= 0xDC00 && lo < 0xE000 {
						i += 11
						continue
					}
				}
				return codeInvalidUTF8, fmt.Sprintf("a string in the request body has an unpaired surrogate escape (byte %d): not valid UTF-8", i)
			case r >= 0xDC00 && r < 0xE000:
				return codeInvalidUTF8, fmt.Sprintf("a string in the request body has an unpaired surrogate escape (byte %d): not valid UTF-8", i)
			}
			i += 5
		}
	}
	return "", ""
}

// hex4 reads the four hex digits of a \u escape at raw[at:].
func hex4(raw []byte, at int) (rune, bool) {
	if at+4 > len(raw) {
		return 0, false
	}
	var r rune
	for _, c := range raw[at : at+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c-'a') + 10
		case c >= 'A' && c <= 'F':
			r |= rune(c-'A') + 10
		default:
			return 0, false
		}
	}
	return r, true
}

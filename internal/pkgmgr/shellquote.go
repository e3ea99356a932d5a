package pkgmgr

import "strings"

// Quote returns s as one POSIX shell word. Strings made only of characters
// no shell treats specially are returned as they are (keeps commands
// readable in job logs); anything else is wrapped in single quotes, each
// embedded single quote closing the quoted run, appearing backslash-escaped
// and reopening it. A NUL byte cannot travel in a shell
// argument at all: callers validate names first, which rejects it.
func Quote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for i := 0; i < len(s); i++ {
		if !isSafe(s[i]) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// isSafe lists bytes that are literal in every position of a POSIX shell
// word. '=' and '~' are excluded on purpose: a leading "~" expands and a
// leading "x=" turns a word into an assignment.
func isSafe(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("_@%+:,./-", c) >= 0
}

// QuoteAll quotes each word and joins them with spaces.
func QuoteAll(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = Quote(w)
	}
	return strings.Join(q, " ")
}

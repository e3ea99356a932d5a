package pkgmgr

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lcmproject/lcm/internal/testutil"
)

var quoteCases = []string{
	"", "a", "libstdc++6", "a b", "it's", "''", `"`, "$HOME", "$(id)", "`id`", "a;b", "a&&b",
	"~root", "x=1", "-rf", "*", "?", "[a]", "{a,b}", "a\nb", "a\tb", `\`, "é", "!", "#c",
}

func TestQuote(t *testing.T) {
	require.Equal(t, "libstdc++6", Quote("libstdc++6"))
	require.Equal(t, "''", Quote(""))
	require.Equal(t, `'it'\''s'`, Quote("it's"))
	require.Equal(t, "'~root'", Quote("~root"))
	require.Equal(t, "'x=1'", Quote("x=1"))
	require.Equal(t, "a 'b c'", QuoteAll([]string{"a", "b c"}))
}

// TestQuoteRealShell has sh print each quoted word back.
func TestQuoteRealShell(t *testing.T) {
	sh := testutil.RequireTool(t, "sh")
	for _, s := range quoteCases {
		out, err := exec.Command(sh, "-c", "printf '%s' "+Quote(s)).Output()
		require.NoError(t, err, s)
		require.Equal(t, s, string(out))
	}
}

// unquoteSh is a minimal POSIX word parser for one word built of unquoted
// safe bytes, single-quoted runs and backslash escapes: enough to check
// Quote without spawning a shell per fuzz input.
func unquoteSh(w string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(w); i++ {
		switch c := w[i]; {
		case c == '\'':
			j := strings.IndexByte(w[i+1:], '\'')
			if j < 0 {
				return "", false
			}
			b.WriteString(w[i+1 : i+1+j])
			i += j + 1
		case c == '\\':
			if i+1 >= len(w) {
				return "", false
			}
			b.WriteByte(w[i+1])
			i++
		case isSafe(c):
			b.WriteByte(c)
		default:
			return "", false
		}
	}
	return b.String(), true
}

func FuzzQuote(f *testing.F) {
	for _, s := range quoteCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q := Quote(s)
		got, ok := unquoteSh(q)
		if !ok || got != s {
			t.Fatalf("Quote(%q) = %q does not read back (got %q, ok %v)", s, q, got, ok)
		}
		if s != "" && q[0] != '\'' && (s[0] == '~' || strings.ContainsAny(s, " \t\n$`\"\\;&|<>*?[]{}()!#=")) {
			t.Fatalf("Quote(%q) = %q left special characters bare", s, q)
		}
	})
}

package httpapi

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestLogPathIsBounded: a megabyte of path becomes one short, valid line.
func TestLogPathIsBounded(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     string
	}{
		{"short", "/api/v1/servers", "/api/v1/servers"},
		{"at the cap", "/" + strings.Repeat("a", maxLoggedPath-1), "/" + strings.Repeat("a", maxLoggedPath-1)},
		{"a megabyte", "/" + strings.Repeat("a", 1<<20), "/" + strings.Repeat("a", maxLoggedPath-1) + "…(1048577 bytes)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := logPath(c.in); got != c.want {
				t.Fatalf("got %d bytes %.40q…, want %d bytes", len(got), got, len(c.want))
			}
		})
	}
	// A cut in the middle of a rune leaves valid UTF-8.
	in := "/" + strings.Repeat("é", 400)
	if got := logPath(in); !utf8.ValidString(got) || len(got) > maxLoggedPath+20 {
		t.Fatalf("cut path: valid %v, %d bytes", utf8.ValidString(got), len(got))
	}
}

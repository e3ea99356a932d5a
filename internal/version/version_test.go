package version

import (
	"os"
	"strings"
	"testing"
)

func TestCompute(t *testing.T) {
	tests := []struct {
		name       string
		sv, b, c   string
		vcs        vcsStamp
		wantCommit string
		wantDirty  bool
		wantString string
	}{
		{"ldflags", "1.2.3", "42", "abc1234", vcsStamp{}, "abc1234", false, "lcm-api 1.2.3 (Build 42, abc1234)"},
		{"ldflags dirty", "1.2.3", "42", "abc1234-dirty", vcsStamp{}, "abc1234-dirty", true, "lcm-api 1.2.3 (Build 42, abc1234-dirty)"},
		{"vcs fallback", "", "", "", vcsStamp{revision: "0123456789abcdef", modified: true, ok: true}, "0123456-dirty", true, "lcm-api 0.1.0 (Build 0, 0123456-dirty)"},
		{"nothing", "", "", "", vcsStamp{}, "unknown", false, "lcm-api 0.1.0 (Build 0, unknown)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			i := compute(tt.sv, tt.b, tt.c, "", func() vcsStamp { return tt.vcs })
			if i.Commit != tt.wantCommit || i.Dirty != tt.wantDirty {
				t.Fatalf("commit=%q dirty=%v, want %q %v", i.Commit, i.Dirty, tt.wantCommit, tt.wantDirty)
			}
			if got := i.String("lcm-api"); got != tt.wantString {
				t.Fatalf("String = %q, want %q", got, tt.wantString)
			}
		})
	}
}

func TestFallbackMatchesVERSIONFile(t *testing.T) {
	b, err := os.ReadFile("../../VERSION")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(b)); got != fallbackSemver {
		t.Fatalf("VERSION says %q but fallbackSemver is %q", got, fallbackSemver)
	}
}

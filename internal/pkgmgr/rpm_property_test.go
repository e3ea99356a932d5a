package pkgmgr_test

import (
	"bufio"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lcmproject/lcm/internal/pkgmgr"
	"github.com/lcmproject/lcm/internal/testutil"
)

// genRPMVersion generates RPM [epoch:]version[-release] strings biased
// towards the hard cases: tildes and carets, letters against digits,
// leading zeros, separators of every kind, and real-world releases
// (el9_4, module+el8…, SUSE's lp155/150500).
func genRPMVersion(r *rand.Rand) string {
	part := func(alphabet string, n int) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			b.WriteByte(alphabet[r.Intn(len(alphabet))])
		}
		return b.String()
	}
	v := part("0123456789", 1)
	for i, n := 0, r.Intn(6); i < n; i++ {
		switch r.Intn(8) {
		case 0:
			v += part("0123456789", 1+r.Intn(3))
		case 1:
			v += "." + part("0123456789", 1+r.Intn(2))
		case 2:
			v += "~" + part("abrc", r.Intn(3))
		case 3:
			v += "^" + part("git0123", r.Intn(4))
		case 4:
			v += part("abpz", 1)
		case 5:
			v += "_" + part("0123", 1)
		case 6:
			v += "+" + part("ab1", 1)
		case 7:
			v += "0" + part("12", 1)
		}
	}
	if r.Intn(10) < 3 {
		v = fmt.Sprintf("%d:%s", r.Intn(3), v)
	}
	if r.Intn(10) < 7 {
		v += "-" + []string{"1", "2", "10", "1.el9", "1.el9_4", "3.el8_10.1", "0.rc1", "1.fc39",
			"lp155.2.1", "150500.3.2", "1.module+el8.4.0+570+c2eaf144", "27.el9_0"}[r.Intn(12)]
	}
	return v
}

// TestCompareRPMAgainstRPM compares CompareRPM with rpm's own ordering
// (rpm 4.18's Lua rpm.ver objects, which parse epoch:version-release and
// compare them as rpm does for packages) on thousands of generated pairs:
// zero disagreements allowed. One rpm process answers every pair.
func TestCompareRPMAgainstRPM(t *testing.T) {
	rpm := testutil.RequireTool(t, "rpm")
	r := rand.New(rand.NewSource(20261125))
	const n = 5000
	pairs := make([][2]string, 0, n)
	for len(pairs) < n {
		a := genRPMVersion(r)
		var b string
		switch r.Intn(4) {
		case 0:
			b = genRPMVersion(r)
		case 1:
			b = a
			if r.Intn(2) == 0 && !strings.Contains(a, ":") {
				b = "0:" + a
			}
		default: // close: same stem, a mutated tail
			b = a[:r.Intn(len(a))+1] + string("~^.0a1_"[r.Intn(7)]) + genRPMVersion(r)[:1]
		}
		if strings.Count(b, ":") > 1 || strings.HasSuffix(b, ":") || strings.HasSuffix(b, "-") || strings.Count(b, "-") > 1 {
			b = a
		}
		pairs = append(pairs, [2]string{a, b})
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "pairs")
	var sb strings.Builder
	for _, p := range pairs {
		fmt.Fprintf(&sb, "%s %s\n", p[0], p[1])
	}
	if err := os.WriteFile(in, []byte(sb.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	script := `%{lua: for l in io.lines("` + in + `") do
	  local a, b = l:match("^(%S+) (%S+)$")
	  local ok, res = pcall(function()
	    local x, y = rpm.ver(a), rpm.ver(b)
	    if x < y then return -1 elseif x == y then return 0 else return 1 end
	  end)
	  io.write(ok and tostring(res) or "invalid", "\n")
	end}`
	out, err := exec.Command(rpm, "--eval", script).Output()
	if err != nil {
		t.Fatalf("rpm --eval: %v", err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	i, compared, disagree := 0, 0, 0
	for sc.Scan() && i < len(pairs) {
		line := strings.TrimSpace(sc.Text())
		if line == "" && i == len(pairs) {
			break
		}
		p := pairs[i]
		i++
		if line == "invalid" {
			continue
		}
		compared++
		var want int
		if _, err := fmt.Sscan(line, &want); err != nil {
			t.Fatalf("rpm answered %q for %q", line, p)
		}
		if got := pkgmgr.CompareRPM(p[0], p[1]); got != want {
			disagree++
			if disagree <= 20 {
				t.Errorf("CompareRPM(%q, %q) = %d, rpm says %d", p[0], p[1], got, want)
			}
		}
	}
	if i != len(pairs) {
		t.Fatalf("rpm answered %d of %d pairs", i, len(pairs))
	}
	if compared < n*9/10 {
		t.Fatalf("only %d of %d pairs were valid for rpm", compared, n)
	}
	t.Logf("%d pairs compared with rpm %s, %d disagreements", compared, rpmVersion(rpm), disagree)
}

func rpmVersion(rpm string) string {
	out, _ := exec.Command(rpm, "--version").Output()
	return strings.TrimSpace(strings.TrimPrefix(string(out), "RPM version "))
}

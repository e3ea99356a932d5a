package vulndb_test

import (
	"bufio"
	"fmt"
	"math/rand"
	"os/exec"
	"strings"
	"testing"

	"github.com/lcmproject/lcm/internal/pkgmgr"
	"github.com/lcmproject/lcm/internal/testutil"
)

// genDebVersion generates valid Debian versions biased towards the hard
// cases: epochs, tildes, plus signs, letters against digits, leading
// zeros, empty and multi-dash revisions.
func genDebVersion(r *rand.Rand) string {
	part := func(alphabet string, n int) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			b.WriteByte(alphabet[r.Intn(len(alphabet))])
		}
		return b.String()
	}
	upstream := func() string {
		var b strings.Builder
		b.WriteByte("0123456789"[r.Intn(10)])
		for i, n := 0, r.Intn(6); i < n; i++ {
			switch r.Intn(6) {
			case 0:
				b.WriteString(part("0123456789", 1+r.Intn(3)))
			case 1:
				b.WriteString("." + part("0123456789", 1+r.Intn(2)))
			case 2:
				b.WriteString("~" + part("abrc", r.Intn(3)))
			case 3:
				b.WriteString("+" + part("abdegu", 1+r.Intn(3)))
			case 4:
				b.WriteString(part("abpz", 1))
			case 5:
				b.WriteString(part("0", 1+r.Intn(2)) + part("123", 1))
			}
		}
		return b.String()
	}
	v := upstream()
	if r.Intn(3) == 0 {
		v = fmt.Sprintf("%d:%s", r.Intn(3), v)
	}
	switch r.Intn(4) {
	case 0, 1:
		rev := part("0123456789", 1+r.Intn(2))
		if r.Intn(2) == 0 {
			rev += []string{"+deb12u", "~deb12u", "ubuntu0.", "+b", "~bpo12+", "."}[r.Intn(6)] + part("0123456789", 1)
		}
		v += "-" + rev
	case 2:
		v += "-" + upstream() + "-" + part("0123456789", 1) // a dash inside the upstream version
	}
	return v
}

// TestCompareDebAgainstDpkg compares CompareDeb (knqyf263/go-deb-version)
// with `dpkg --compare-versions` on thousands of generated pairs: zero
// disagreements allowed. Pairs are generated close to each other (same
// stem, mutated tails) so that the order is decided late.
func TestCompareDebAgainstDpkg(t *testing.T) {
	if testing.Short() {
		t.Skip("runs dpkg a few thousand times")
	}
	testutil.RequireTool(t, "dpkg")
	r := rand.New(rand.NewSource(20261124))
	const n = 3000
	pairs := make([][2]string, 0, n)
	for len(pairs) < n {
		a := genDebVersion(r)
		var b string
		switch r.Intn(3) {
		case 0:
			b = genDebVersion(r)
		case 1:
			b = a // equal, and equal-but-spelled-differently below
			if r.Intn(2) == 0 && !strings.Contains(a, ":") {
				b = "0:" + a
			}
		default:
			b = a[:r.Intn(len(a))+1] + string("~+.0a1"[r.Intn(6)]) + genDebVersion(r)[:1]
			b = strings.TrimRight(b, "-")
			if strings.Count(b, ":") > 1 || strings.HasSuffix(b, ":") {
				b = a
			}
		}
		pairs = append(pairs, [2]string{a, b})
	}
	// One shell runs dpkg per pair; it prints -1, 0 or 1.
	var in strings.Builder
	for _, p := range pairs {
		fmt.Fprintf(&in, "%s %s\n", p[0], p[1])
	}
	// dpkg accepts some strings policy forbids (an upstream version not
	// starting with a digit) with a warning on stderr; such pairs are not
	// counted, since no archive carries them.
	cmd := exec.Command("sh", "-c", `while read a b; do
		if w=$(dpkg --compare-versions "$a" lt "$b" 2>&1); then r=-1; else r=; fi
		if [ -n "$w" ]; then echo invalid; continue; fi
		if [ -z "$r" ]; then
			if dpkg --compare-versions "$a" eq "$b"; then r=0; else r=1; fi
		fi
		echo $r; done`)
	cmd.Stdin = strings.NewReader(in.String())
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	i, compared, disagree := 0, 0, 0
	for sc.Scan() {
		p := pairs[i]
		i++
		if sc.Text() == "invalid" {
			continue // dpkg refused a generated string; not a comparison
		}
		compared++
		var want int
		fmt.Sscan(sc.Text(), &want)
		if got := pkgmgr.CompareDeb(p[0], p[1]); got != want {
			disagree++
			if disagree <= 20 {
				t.Errorf("CompareDeb(%q, %q) = %d, dpkg says %d", p[0], p[1], got, want)
			}
		}
	}
	if i != len(pairs) {
		t.Fatalf("dpkg answered %d of %d pairs", i, len(pairs))
	}
	if compared < n*9/10 {
		t.Fatalf("only %d of %d pairs were valid for dpkg", compared, n)
	}
	t.Logf("%d pairs compared with dpkg, %d disagreements", compared, disagree)
}

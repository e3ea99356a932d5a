package fleetsim

import (
	"reflect"
	"strings"
	"testing"
)

func TestNormalize(t *testing.T) {
	tests := []struct {
		in       string
		cmd      string
		sudo     bool
		argv     []string
		wantSudo bool
	}{
		{in: "id -un", cmd: "id -un"},
		{in: "sudo -n true", cmd: "true", wantSudo: true},
		{in: "sudo -S -p '' sh -c 'echo hi' lcm-join 'a b' c", cmd: "echo hi", argv: []string{"lcm-join", "a b", "c"}, wantSudo: true},
		{in: "sudo -u root -- env DEBIAN_FRONTEND=noninteractive NEEDRESTART_MODE=a apt-get -y -q upgrade", cmd: "apt-get -y -q upgrade", wantSudo: true},
		{in: "LC_ALL=C apt-get -s -o Debug::NoLocking=1 dist-upgrade", cmd: "apt-get -s -o Debug::NoLocking=1 dist-upgrade"},
		{in: "/bin/sh -c 'sudo -n cat /etc/sudoers.d/lcm'", cmd: "cat /etc/sudoers.d/lcm", argv: []string{}, wantSudo: true},
		{in: "  hostname  ", cmd: "hostname"},
		{in: "sudo", cmd: "", wantSudo: true},
		{in: "A=1", cmd: "A=1"},
	}
	for _, tt := range tests {
		cmd, sudo, argv := normalize(tt.in, tt.sudo)
		if cmd != tt.cmd || sudo != tt.wantSudo || !reflect.DeepEqual(argv, tt.argv) {
			t.Errorf("normalize(%q) = %q, %v, %q; want %q, %v, %q", tt.in, cmd, sudo, argv, tt.cmd, tt.wantSudo, tt.argv)
		}
	}
}

func TestSplitList(t *testing.T) {
	tests := []struct {
		in   string
		want []listPart
	}{
		{"id -un", []listPart{{"id -un", ""}}},
		{"id -un && sudo -n true && sudo -n cat /etc/sudoers.d/lcm", []listPart{{"id -un", "&&"}, {"sudo -n true", "&&"}, {"sudo -n cat /etc/sudoers.d/lcm", ""}}},
		{`sudo -n rm -f /etc/sudoers.d/lcm; rm -f "$HOME/.ssh/authorized_keys" && echo 'lcm: a; b && c'`,
			[]listPart{{"sudo -n rm -f /etc/sudoers.d/lcm", ";"}, {`rm -f "$HOME/.ssh/authorized_keys"`, "&&"}, {"echo 'lcm: a; b && c'", ""}}},
		{"false || echo x", []listPart{{"false", "||"}, {"echo x", ""}}},
		{"x=$(a && b); echo $x", []listPart{{"x=$(a && b)", ";"}, {"echo $x", ""}}},
		{"sleep 1 &", []listPart{{"sleep 1 &", ""}}},
		{"if true; then echo; fi", nil},
		{"a;\n;b", []listPart{{"a", ";"}, {"b", ""}}},
		// Connectivity's check: a brace group is one part.
		{"id -un && { sudo -n true 2>/dev/null || sudo -n /usr/local/lib/lcm/lcm-helper version >/dev/null; }",
			[]listPart{{"id -un", "&&"}, {"{ sudo -n true 2>/dev/null || sudo -n /usr/local/lib/lcm/lcm-helper version >/dev/null; }", ""}}},
	}
	for _, tt := range tests {
		if got := splitList(tt.in); !reflect.DeepEqual(got, tt.want) && !(len(got) == 0 && len(tt.want) == 0) {
			t.Errorf("splitList(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// FuzzShell: the simulator's shell parsing never panics on any input, and
// a list's parts are non-empty pieces of the input.
func FuzzShell(f *testing.F) {
	for _, s := range []string{"id -un && sudo -n true", "sudo -S -p '' sh -c 'x' a 'b c'", `a "b\" c" ; d || e`, "x=$(a;b)", "'unterminated", "sudo -u", "sh -c", "env A=1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cmd, _, _ := normalize(s, false)
		_ = splitWords(cmd)
		_, _ = cutWord(s)
		for _, p := range splitList(s) {
			if p.text == "" || !strings.Contains(s, p.text) {
				t.Fatalf("part %q of %q", p.text, s)
			}
		}
	})
}

package sshdcfg

import (
	"os"
	"strings"
	"testing"
)

func read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// sshd-T-debian12.txt is `sshd -T -C user=lcm,…` of a Debian 12 test host
// (OpenSSH 9.2), recorded.
func TestParseEffectiveRecorded(t *testing.T) {
	e, err := ParseEffective(read(t, "sshd-T-debian12.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"passwordauthentication": "yes", "permitrootlogin": "without-password",
		"port": "22", "pubkeyauthentication": "yes", "usepam": "no"} {
		if got := e.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if got := e.Lines("PasswordAuthentication", "port"); len(got) != 2 || got[0] != "passwordauthentication yes" || got[1] != "port 22" {
		t.Errorf("Lines = %q", got)
	}
}

func TestParseEffectiveRefusesForeignOutput(t *testing.T) {
	for _, in := range []string{"", "\n\n", "sshd: command not found", "Bad configuration option: Foo=bar", "port: 22"} {
		if _, err := ParseEffective(in); err == nil {
			t.Errorf("%q parsed", in)
		}
	}
}

// dump-debian12.txt is DumpScript's output on a Debian 12 test host.
func TestParseDumpAndTraceRecorded(t *testing.T) {
	files, err := ParseDump(read(t, "dump-debian12.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || files[1].Path != DropInDir+"/zz-lcm-testhost.conf" {
		t.Fatalf("files: %d %v", len(files), files)
	}
	if !HasDropInInclude(files[0].Content) {
		t.Fatal("Debian's main file includes the drop-ins")
	}
	tr := Trace(files, "PasswordAuthentication")
	w, ok := Winner(tr)
	if !ok || w.Path != DropInDir+"/zz-lcm-testhost.conf" || w.Value != "yes" {
		t.Fatalf("winner %+v %v (trace %v)", w, ok, tr)
	}
	// KbdInteractiveAuthentication is set in the main file after the Include.
	tr = Trace(files, "kbdinteractiveauthentication")
	if w, ok := Winner(tr); !ok || w.Path != MainPath || w.Value != "no" {
		t.Fatalf("kbd winner %+v", w)
	}
}

func TestTrace(t *testing.T) {
	main := "# comment\nPasswordAuthentication=yes\nInclude sshd_config.d/*.conf\nPasswordAuthentication no\nMatch User alice\n  PasswordAuthentication \"yes\"\nMatch all\nPermitRootLogin no\n"
	files := []File{{Path: MainPath, Content: main},
		{Path: DropInDir + "/60-lcm-hardening.conf", Content: "PasswordAuthentication no\n"},
		{Path: DropInDir + "/10-lcm-ssh.conf", Content: "PermitRootLogin prohibit-password\n"},
		{Path: "/etc/other.conf", Content: "PasswordAuthentication yes\n"}}
	tr := Trace(files, "passwordauthentication")
	want := []string{
		MainPath + ":2: PasswordAuthentication=yes",
		DropInDir + "/60-lcm-hardening.conf:1: PasswordAuthentication no",
		MainPath + ":4: PasswordAuthentication no",
		MainPath + `:6: PasswordAuthentication "yes" (inside "Match User alice")`,
	}
	if len(tr) != len(want) {
		t.Fatalf("trace %v", tr)
	}
	for i := range want {
		if tr[i].String() != want[i] {
			t.Errorf("%d: %s, want %s", i, tr[i], want[i])
		}
	}
	if w, _ := Winner(tr); w.Line != 2 || w.Value != "yes" {
		t.Errorf("winner %+v", w)
	}
	// The drop-ins are read in name order: 10- before 60-.
	tr = Trace(files, "permitrootlogin")
	if w, _ := Winner(tr); w.Path != DropInDir+"/10-lcm-ssh.conf" {
		t.Errorf("root winner %+v", w)
	}
	if _, ok := Winner(Trace(files, "port")); ok {
		t.Error("no line sets port")
	}
}

func TestEditAndRevert(t *testing.T) {
	tests := []struct {
		name, main  string
		want        map[string]string
		out         string
		changes     int
		keepInclude bool
	}{
		{"earlier global line and Match block", "PasswordAuthentication yes\nInclude /etc/ssh/sshd_config.d/*.conf\nPasswordAuthentication yes\nMatch Address 10.0.0.0/8\n  PasswordAuthentication yes\n",
			map[string]string{"passwordauthentication": "no"},
			"#lcm-disabled:harden# PasswordAuthentication yes\nInclude /etc/ssh/sshd_config.d/*.conf\nPasswordAuthentication yes\nMatch Address 10.0.0.0/8\n#lcm-disabled:harden#   PasswordAuthentication yes\n", 2, true},
		{"no Include: added on top, global lines stay", "PasswordAuthentication yes\nUsePAM yes\n",
			map[string]string{"passwordauthentication": "no"},
			"Include /etc/ssh/sshd_config.d/*.conf # lcm-added\nPasswordAuthentication yes\nUsePAM yes\n", 1, false},
		{"same value is left alone", "KbdInteractiveAuthentication no\nInclude /etc/ssh/sshd_config.d/*.conf\n",
			map[string]string{"kbdinteractiveauthentication": "no"}, "KbdInteractiveAuthentication no\nInclude /etc/ssh/sshd_config.d/*.conf\n", 0, true},
		{"Include only inside a Match block does not count", "Match User bob\nInclude /etc/ssh/sshd_config.d/*.conf\n",
			map[string]string{"permitrootlogin": "no"},
			"Include /etc/ssh/sshd_config.d/*.conf # lcm-added\nMatch User bob\nInclude /etc/ssh/sshd_config.d/*.conf\n", 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ch := Edit(tt.main, "harden", tt.want)
			if got != tt.out || len(ch) != tt.changes {
				t.Fatalf("Edit =\n%s\nchanges %v", got, ch)
			}
			back, _ := Revert(got, "harden", !tt.keepInclude)
			if back != tt.main {
				t.Fatalf("Revert =\n%q\nwant\n%q", back, tt.main)
			}
			if HasMarks(back) {
				t.Fatal("marks left")
			}
		})
	}
	// Reverting one feature keeps another's marks.
	m, _ := Edit("PermitRootLogin yes\nPasswordAuthentication yes\nInclude /etc/ssh/sshd_config.d/*.conf\n", "root-login", map[string]string{"permitrootlogin": "no"})
	m, _ = Edit(m, "harden", map[string]string{"passwordauthentication": "no"})
	r, ch := Revert(m, "harden", false)
	if len(ch) != 1 || !strings.HasPrefix(r, "#lcm-disabled:root-login# PermitRootLogin yes\nPasswordAuthentication yes\n") || !HasMarks(r) {
		t.Fatalf("revert of one feature:\n%s %v", r, ch)
	}
}

func FuzzParseEffective(f *testing.F) {
	b, _ := os.ReadFile("testdata/sshd-T-debian12.txt")
	f.Add(string(b))
	f.Add("port 22\nport 2222\n")
	f.Add("\x00 \n")
	f.Fuzz(func(t *testing.T, s string) {
		e, err := ParseEffective(s)
		if err == nil && len(e) == 0 {
			t.Fatal("no error and no settings")
		}
		for k := range e {
			if !validKeyword(k) {
				t.Fatalf("bad keyword %q", k)
			}
		}
	})
}

func FuzzDumpTraceEdit(f *testing.F) {
	b, _ := os.ReadFile("testdata/dump-debian12.txt")
	f.Add(string(b), "passwordauthentication")
	f.Add("==> lcm-file /etc/ssh/sshd_config <==\nInclude /etc/ssh/sshd_config\nMatch\nInclude *\n", "include")
	f.Fuzz(func(t *testing.T, dump, kw string) {
		files, err := ParseDump(dump)
		if err != nil {
			return
		}
		for _, s := range Trace(files, kw) {
			if s.Line < 1 || s.Path == "" {
				t.Fatalf("bad setting %+v", s)
			}
		}
		main := files[0].Content
		edited, ch := Edit(main, "harden", map[string]string{strings.ToLower(kw): "no"})
		if ch == nil && edited != main {
			t.Fatal("unchanged edit changed the file")
		}
		if !HasDropInInclude(edited) {
			t.Fatalf("after Edit the drop-ins must be included:\n%s", edited)
		}
		if back, _ := Revert(edited, "harden", !HasDropInInclude(main)); !HasMarks(main) && back != main {
			t.Fatalf("Revert(Edit(x)) != x:\n%q\n%q", back, main)
		}
	})
}

// TestEditJudgesItsMarksAgain: root login set back to what an earlier
// main-file line says restores that line (the marked edit is undone, not
// left behind); a setting that still conflicts keeps it marked; another
// feature's marks are never touched.
func TestEditJudgesItsMarksAgain(t *testing.T) {
	main := "PermitRootLogin prohibit-password\n#lcm-disabled:harden# PasswordAuthentication yes\nInclude /etc/ssh/sshd_config.d/*.conf\n"
	no, ch := Edit(main, "root-login", map[string]string{"permitrootlogin": "no"})
	if len(ch) != 1 || !strings.HasPrefix(no, "#lcm-disabled:root-login# PermitRootLogin prohibit-password\n") {
		t.Fatalf("forbid: %q %q", no, ch)
	}
	if again, ch := Edit(no, "root-login", map[string]string{"permitrootlogin": "no"}); ch != nil || again != no {
		t.Fatalf("forbid again changed %q %q", again, ch)
	}
	back, ch := Edit(no, "root-login", map[string]string{"permitrootlogin": "prohibit-password"})
	if back != main || len(ch) != 1 || !strings.Contains(ch[0], "restored") {
		t.Fatalf("set back: %q %q", back, ch)
	}
	// "yes" conflicts with both: the line stays marked.
	yes := strings.Replace(no, "prohibit-password", "yes", 1)
	if got, ch := Edit(yes, "root-login", map[string]string{"permitrootlogin": "prohibit-password"}); ch != nil || got != yes {
		t.Fatalf("still conflicting: %q %q", got, ch)
	}
}

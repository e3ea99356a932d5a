package helper

import (
	"bytes"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	spec := "user=lcm,host=127.0.0.1,addr=127.0.0.1,laddr=127.0.0.9,lport=22"
	ok := []struct {
		args []string
		want Command
	}{
		{[]string{"version"}, Command{Op: OpVersion}},
		{[]string{"sudo-mode", "restricted"}, Command{Op: OpSudoMode, Arg: "restricted"}},
		{[]string{"sudo-mode", "full"}, Command{Op: OpSudoMode, Arg: "full"}},
		{[]string{"sshd-effective", spec}, Command{Op: OpSSHDEffective, Arg: spec}},
		{[]string{"sshd-effective", "user=root,host=web-1.example.org,addr=::1,laddr=::1,lport=2222"}, Command{Op: OpSSHDEffective, Arg: "user=root,host=web-1.example.org,addr=::1,laddr=::1,lport=2222"}},
		{[]string{"sshd-dropin", "write", "60-lcm-hardening.conf"}, Command{Op: OpSSHDDropIn, Action: "write", Arg: "60-lcm-hardening.conf"}},
		{[]string{"sshd-dropin", "remove", "10-lcm-ssh.conf"}, Command{Op: OpSSHDDropIn, Action: "remove", Arg: "10-lcm-ssh.conf"}},
		{[]string{"sshd-reload"}, Command{Op: OpSSHDReload}},
		{[]string{"sshd-dump"}, Command{Op: OpSSHDDump}},
		{[]string{"sshd-read", "sshd_config"}, Command{Op: OpSSHDRead, Arg: "sshd_config"}},
		{[]string{"sudoers-profile", "write", "web-admins"}, Command{Op: OpSudoersProf, Action: "write", Arg: "web-admins"}},
		{[]string{"linux-user", "disable", "alice"}, Command{Op: OpLinuxUser, Action: "disable", Arg: "alice"}},
		{[]string{"linux-user-scan"}, Command{Op: OpLinuxUserScan}},
		{[]string{"firewalld", "enable"}, Command{Op: OpFirewalld, Action: "enable"}},
		{[]string{"firewalld", "disable"}, Command{Op: OpFirewalld, Action: "disable"}},
		{[]string{"ssh-socket", "set", "22,2222"}, Command{Op: OpSSHSocket, Action: "set", Arg: "22,2222"}},
		{[]string{"ssh-socket", "set", "2222"}, Command{Op: OpSSHSocket, Action: "set", Arg: "2222"}},
		{[]string{"ssh-socket", "remove"}, Command{Op: OpSSHSocket, Action: "remove"}},
		{[]string{"ssh-socket", "show"}, Command{Op: OpSSHSocket, Action: "show"}},
		{[]string{"authorized-keys", "write", "alice"}, Command{Op: OpAuthKeys, Action: "write", Arg: "alice"}},
		{[]string{"authorized-keys", "show", "bob-2"}, Command{Op: OpAuthKeys, Action: "show", Arg: "bob-2"}},
	}
	for _, tt := range ok {
		got, err := Parse(tt.args)
		if err != nil || got != tt.want {
			t.Errorf("Parse(%q) = %+v, %v", tt.args, got, err)
		}
	}
	bad := [][]string{
		nil, {""}, {"sh"}, {"version", "x"}, {"sudo-mode"}, {"sudo-mode", "root"}, {"sudo-mode", "full", "x"},
		{"sshd-effective", "user=lcm"}, {"sshd-effective", spec + ",user=x"}, {"sshd-effective", strings.Replace(spec, "lport=22", "lport=022", 1)},
		{"sshd-effective", strings.Replace(spec, "user=lcm", "user=lcm;id", 1)}, {"sshd-effective", strings.Replace(spec, "addr=127.0.0.1", "addr=localhost", 1)},
		{"sshd-effective", spec + ",rdomain=x"}, {"sshd-effective", strings.Replace(spec, "host=127.0.0.1", "host=-o", 1)},
		{"sshd-dropin", "write", "../../shadow"}, {"sshd-dropin", "write", "50-cloud-init.conf"}, {"sshd-dropin", "append", "10-lcm-ssh.conf"},
		{"sshd-read", "/etc/shadow"}, {"sshd-read", "../sshd_config"},
		{"sudoers-profile", "write", "../lcm"}, {"sudoers-profile", "write", "Admins"}, {"sudoers-profile", "write", strings.Repeat("a", 33)},
		{"sudoers-profile", "write", "a\nb"}, {"--help"}, {"version\x00"},
		{"linux-user-scan", ""}, {"linux-user-scan", "alice"}, {"linux-user-scan", "--all"}, {"linux-user-scan", "/etc/shadow"},
		{"linux-user-scan", "passwd", "alice"}, {"linux-user-scan\n"}, {"Linux-User-Scan"},
		{"firewalld"}, {"firewalld", "restart"}, {"firewalld", "enable", "sshd"}, {"firewalld", "mask"}, {"firewalld", "--now"},
		{"ssh-socket"}, {"ssh-socket", "set"}, {"ssh-socket", "set", "0"}, {"ssh-socket", "set", "65536"}, {"ssh-socket", "set", "022"},
		{"ssh-socket", "set", "22,22"}, {"ssh-socket", "set", "22,23,24"}, {"ssh-socket", "set", "22 2222"}, {"ssh-socket", "set", "+22"},
		{"ssh-socket", "set", "22,"}, {"ssh-socket", "remove", "22"}, {"ssh-socket", "show", "x"}, {"ssh-socket", "write", "22"},
		{"ssh-socket", "set", "22", "x"},
		{"authorized-keys", "write"}, {"authorized-keys", "write", "root"}, {"authorized-keys", "write", "lcm"}, {"authorized-keys", "append", "alice"},
		{"authorized-keys", "write", "../alice"}, {"authorized-keys", "write", "Alice"}, {"authorized-keys", "show", "www-data"},
		{"authorized-keys", "write", "alice", "bob"}, {"authorized-keys", "write", "-r"},
	}
	for _, args := range bad {
		if c, err := Parse(args); err == nil {
			t.Errorf("Parse(%q) accepted: %+v", args, c)
		}
	}
}

func TestMainRefusesWithExit2(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Main([]string{"rm", "-rf", "/"}, nil, &out, &errb); code != 2 || !strings.Contains(errb.String(), `refused: unknown subcommand "rm"`) {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	out.Reset()
	if code := Main([]string{"version"}, nil, &out, &errb); code != 0 || !strings.HasPrefix(out.String(), "lcm-helper ") || !strings.HasSuffix(out.String(), " protocol "+Protocol+"\n") {
		t.Fatalf("version: exit %d %q", code, out.String())
	}
}

func TestCheckProfileSudoers(t *testing.T) {
	good := "# profile web\n%lcm-prof-web ALL=(root) NOPASSWD: /usr/bin/systemctl restart nginx --no-pager, /usr/bin/journalctl -u nginx --no-pager\n"
	if err := CheckProfileSudoers("web", good); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]string{
		"ALL as command":   "%lcm-prof-web ALL=(root) NOPASSWD: ALL\n",
		"other group":      "%lcm-prof-db ALL=(root) NOPASSWD: /usr/bin/id\n",
		"a user":           "alice ALL=(root) NOPASSWD: /usr/bin/id\n",
		"relative":         "%lcm-prof-web ALL=(root) NOPASSWD: systemctl\n",
		"wildcard":         "%lcm-prof-web ALL=(root) NOPASSWD: /usr/bin/systemctl restart *\n",
		"metachar":         "%lcm-prof-web ALL=(root) NOPASSWD: /usr/bin/id;sh\n",
		"runas ALL":        "%lcm-prof-web ALL=(ALL) NOPASSWD: /usr/bin/id\n",
		"no rule":          "# nothing\n",
		"defaults":         "Defaults !env_reset\n%lcm-prof-web ALL=(root) NOPASSWD: /usr/bin/id\n",
		"binary":           "%lcm-prof-web ALL=(root) NOPASSWD: /usr/bin/id\x00\n",
		"trailing ALL arg": "%lcm-prof-web ALL=(root) NOPASSWD: /usr/bin/sudo ALL\n",
	} {
		if err := CheckProfileSudoers("web", c); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
}

func TestCheckDropIn(t *testing.T) {
	if err := CheckDropIn("# c\nPasswordAuthentication no\n"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"Include /tmp/x.conf\n", "Match User x\n PasswordAuthentication yes\n", "  match=all\n", "a\x00"} {
		if err := CheckDropIn(c); err == nil {
			t.Errorf("%q accepted", c)
		}
	}
}

func TestRestrictedSudoers(t *testing.T) {
	s, err := RestrictedSudoers("lcm", []string{"/usr/bin/apt-get", "/usr/bin/dpkg", HelperPath})
	if err != nil || !strings.Contains(s, "\nlcm ALL=(root) NOPASSWD:SETENV: /usr/bin/apt-get, /usr/bin/dpkg, /usr/local/sbin/lcm-helper\n") || strings.Contains(s, " ALL\n") {
		t.Fatalf("%v\n%s", err, s)
	}
	for _, p := range [][]string{nil, {"apt-get"}, {"/usr/bin/a b"}, {"/usr/bin/*"}, {"/usr/bin/x,ALL"}} {
		if _, err := RestrictedSudoers("lcm", p); err == nil {
			t.Errorf("%q accepted", p)
		}
	}
	if _, err := RestrictedSudoers("lcm ALL", []string{"/x"}); err == nil {
		t.Error("bad user accepted")
	}
}

func FuzzParse(f *testing.F) {
	f.Add("sshd-effective", "user=lcm,host=h,addr=127.0.0.1,laddr=127.0.0.1,lport=22", "")
	f.Add("sudoers-profile", "write", "web")
	f.Add("sshd-dropin", "remove", "10-lcm-ssh.conf")
	f.Add("sudo-mode", "restricted", "")
	f.Add("linux-user", "apply", "alice")
	f.Add("firewalld", "enable", "")
	f.Add("firewalld", "stop", "")
	f.Add("linux-user-scan", "", "")
	f.Add("linux-user-scan", "--all", "/etc/shadow")
	f.Add("ssh-socket", "set", "22,2222")
	f.Add("ssh-socket", "set", "22,22")
	f.Add("authorized-keys", "write", "alice")
	f.Add("authorized-keys", "show", "root")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		for _, args := range [][]string{{a}, {a, b}, {a, b, c}} {
			cmd, err := Parse(args)
			if err != nil {
				continue
			}
			// Whatever passes names only LCM's own files and safe values.
			switch cmd.Op {
			case OpSSHDDropIn:
				if !DropIns[cmd.Arg] {
					t.Fatalf("drop-in %q", cmd.Arg)
				}
			case OpSudoersProf:
				if strings.ContainsAny(cmd.Arg, "/. \n") {
					t.Fatalf("slug %q", cmd.Arg)
				}
			case OpSSHDEffective:
				if strings.ContainsAny(cmd.Arg, " ;'\"$`\n") || strings.HasPrefix(cmd.Arg, "-") {
					t.Fatalf("spec %q", cmd.Arg)
				}
			case OpSSHDRead:
				if _, ok := ReadableFiles[cmd.Arg]; !ok {
					t.Fatalf("read %q", cmd.Arg)
				}
			case OpSSHSocket:
				if cmd.Action == "set" {
					ps, err := ParsePorts(cmd.Arg)
					if err != nil || len(ps) == 0 || len(ps) > MaxSocketPorts || strings.ContainsAny(cmd.Arg, " \n-+") {
						t.Fatalf("ports %q", cmd.Arg)
					}
				}
			case OpAuthKeys:
				if (cmd.Action != "write" && cmd.Action != "show") || ValidLinuxUsername(cmd.Arg) != nil {
					t.Fatalf("authorized-keys %q %q", cmd.Action, cmd.Arg)
				}
			case OpLinuxUser:
				if !LinuxUserOps[cmd.Action] || ValidLinuxUsername(cmd.Arg) != nil {
					t.Fatalf("linux-user %q %q", cmd.Action, cmd.Arg)
				}
			case OpVersion, OpSSHDReload, OpSSHDDump, OpLinuxUserScan:
				// No argument at all.
				if len(args) != 1 || cmd.Action != "" || cmd.Arg != "" {
					t.Fatalf("%s took %q", cmd.Op, args[1:])
				}
			}
		}
	})
}

func FuzzCheckProfileSudoers(f *testing.F) {
	f.Add("web", "%lcm-prof-web ALL=(root) NOPASSWD: /usr/bin/id\n")
	f.Fuzz(func(t *testing.T, slug, content string) {
		if !slugRe.MatchString(slug) || CheckProfileSudoers(slug, content) != nil {
			return
		}
		for _, l := range strings.Split(content, "\n") {
			l = strings.TrimSpace(l)
			if l == "" || strings.HasPrefix(l, "#") {
				continue
			}
			if !strings.HasPrefix(l, "%lcm-prof-"+slug+" ") || strings.Contains(l, " ALL\n") || strings.HasSuffix(l, " ALL") || strings.Contains(l, "NOPASSWD: ALL") {
				t.Fatalf("accepted %q", l)
			}
		}
	})
}

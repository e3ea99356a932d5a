package helper

import (
	"bytes"
	"strings"
	"testing"
)

const (
	testKey      = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIELfqNdfKRsc025S7F083pQvV3iUSasxyW6NyfpUDoNr alice@test"
	testSHA512   = "$6$VgXaOmdVwqsLjXWq$/sS1UwUGVkFkqdPrjr7mXQQjww22utwnW5vQbVmniKCdAVdU3n2.tnP3/Wu0P7a42quyCK0qU27K6wEBcCH0G0"
	testYescrypt = "$y$j9T$F5Jx5fExrKuPp53xLKQ..1$X3DX6M94c7o.9agCG9G317fhZg9SqC.5i5rd.RhAtQ7"
)

var testShells = ParseShells("# /etc/shells: valid login shells\n/bin/sh\n/bin/bash\n/usr/bin/bash\n/bin/dash\n")

func goodInput() LinuxUserInput {
	return LinuxUserInput{FullName: "Alice Example", Shell: "/bin/bash", Keys: []string{testKey}, PasswordHash: testSHA512,
		Group: "lcm-prof-ops", ManagedGroups: []string{"lcm-prof-ops", "lcm-prof-web", "sudo"},
		ACLs: []LinuxUserACL{{Group: "lcm-prof-ops", Path: "/srv/share", Perms: "rwx"}, {Group: "lcm-prof-ops", Path: "/etc/nginx", Perms: "r"}}}
}

func TestCheckLinuxUser(t *testing.T) {
	if err := CheckLinuxUser("apply", "alice", goodInput(), testShells); err != nil {
		t.Fatal(err)
	}
	for _, ok := range []func(*LinuxUserInput){
		func(in *LinuxUserInput) { in.PasswordHash = testYescrypt },
		func(in *LinuxUserInput) { in.PasswordHash = "" },
		func(in *LinuxUserInput) { in.Shell = "" },
		func(in *LinuxUserInput) { in.Group = "sudo" },
		func(in *LinuxUserInput) { in.Keys = nil },
		func(in *LinuxUserInput) { in.FullName = "Zoë Ñandú-Smith" },
	} {
		in := goodInput()
		ok(&in)
		if err := CheckLinuxUser("apply", "alice", in, testShells); err != nil {
			t.Errorf("%+v refused: %v", in, err)
		}
	}
	bad := map[string]func(*LinuxUserInput){
		"shell not in /etc/shells": func(in *LinuxUserInput) { in.Shell = "/usr/bin/python3" },
		"shell with args":          func(in *LinuxUserInput) { in.Shell = "/bin/sh -c id" },
		"shell relative":           func(in *LinuxUserInput) { in.Shell = "bash" },
		"shell dotted":             func(in *LinuxUserInput) { in.Shell = "/bin/../bin/bash" },
		"gecos colon":              func(in *LinuxUserInput) { in.FullName = "a:b" },
		"gecos comma":              func(in *LinuxUserInput) { in.FullName = "a,b" },
		"gecos newline":            func(in *LinuxUserInput) { in.FullName = "a\nroot::0:0::/:/bin/sh" },
		"gecos long":               func(in *LinuxUserInput) { in.FullName = strings.Repeat("a", 129) },
		"key newline":              func(in *LinuxUserInput) { in.Keys = []string{testKey + "\nssh-ed25519 AAAA x"} },
		"key options":              func(in *LinuxUserInput) { in.Keys = []string{`command="id" ` + testKey} },
		"key type":                 func(in *LinuxUserInput) { in.Keys = []string{"ssh-dss AAAAB3NzaC1kc3MAAACBAP x"} },
		"key blob type":            func(in *LinuxUserInput) { in.Keys = []string{"ssh-rsa" + testKey[len("ssh-ed25519"):]} },
		"key not base64":           func(in *LinuxUserInput) { in.Keys = []string{"ssh-ed25519 !!!! x"} },
		"key only type":            func(in *LinuxUserInput) { in.Keys = []string{"ssh-ed25519"} },
		"hash md5":                 func(in *LinuxUserInput) { in.PasswordHash = "$1$abc$0123456789abcdefghijkl" },
		"hash locked":              func(in *LinuxUserInput) { in.PasswordHash = "!" + testSHA512 },
		"hash star":                func(in *LinuxUserInput) { in.PasswordHash = "*" },
		"hash colon":               func(in *LinuxUserInput) { in.PasswordHash = testSHA512 + ":0:0" },
		"hash newline":             func(in *LinuxUserInput) { in.PasswordHash = testSHA512 + "\nroot:x" },
		"hash short":               func(in *LinuxUserInput) { in.PasswordHash = testSHA512[:len(testSHA512)-1] },
		"group root":               func(in *LinuxUserInput) { in.Group = "root" },
		"group shadow":             func(in *LinuxUserInput) { in.Group = "shadow" },
		"group docker":             func(in *LinuxUserInput) { in.Group = "docker" },
		"group slug":               func(in *LinuxUserInput) { in.Group = "lcm-prof-" },
		"managed group disk":       func(in *LinuxUserInput) { in.ManagedGroups = []string{"disk"} },
		"acl group":                func(in *LinuxUserInput) { in.ACLs = []LinuxUserACL{{Group: "sudo", Path: "/srv/x", Perms: "r"}} },
		"acl root":                 func(in *LinuxUserInput) { in.ACLs = []LinuxUserACL{{Group: "lcm-prof-ops", Path: "/", Perms: "r"}} },
		"acl etc":                  func(in *LinuxUserInput) { in.ACLs = []LinuxUserACL{{Group: "lcm-prof-ops", Path: "/etc", Perms: "r"}} },
		"acl sudoers.d": func(in *LinuxUserInput) {
			in.ACLs = []LinuxUserACL{{Group: "lcm-prof-ops", Path: "/etc/sudoers.d", Perms: "rw"}}
		},
		"acl usr/bin": func(in *LinuxUserInput) {
			in.ACLs = []LinuxUserACL{{Group: "lcm-prof-ops", Path: "/usr/bin/x", Perms: "rw"}}
		},
		"acl dotdot": func(in *LinuxUserInput) {
			in.ACLs = []LinuxUserACL{{Group: "lcm-prof-ops", Path: "/srv/../etc", Perms: "r"}}
		},
		"acl perms": func(in *LinuxUserInput) {
			in.ACLs = []LinuxUserACL{{Group: "lcm-prof-ops", Path: "/srv/x", Perms: "w"}}
		},
	}
	for name, f := range bad {
		in := goodInput()
		f(&in)
		if err := CheckLinuxUser("apply", "alice", in, testShells); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
	for _, u := range []string{"root", "Alice", "a;b", "-rf", "lcm", "lcm-admin", "systemd-x", "_apt", "www-data", "postgres", strings.Repeat("a", 33), ""} {
		if err := CheckLinuxUser("apply", u, goodInput(), testShells); err == nil {
			t.Errorf("user name %q accepted", u)
		}
	}
	if err := CheckLinuxUser("chmod", "alice", goodInput(), testShells); err == nil {
		t.Error("op chmod accepted")
	}
}

func TestParseLinuxUserInput(t *testing.T) {
	if _, err := ParseLinuxUserInput([]byte(`{"full_name":"A","keys":["x"],"remove_home":true}`)); err != nil {
		t.Fatal(err)
	}
	for _, raw := range []string{``, `[]`, `{"shell":"/bin/sh","command":"id"}`, `{} {}`, `{"remove_home":"yes"}`, `{"full_name":"` + strings.Repeat("a", MaxInput) + `"}`} {
		if _, err := ParseLinuxUserInput([]byte(raw)); err == nil {
			t.Errorf("%.60q accepted", raw)
		}
	}
}

func TestParseLinuxUser(t *testing.T) {
	c, err := Parse([]string{"linux-user", "apply", "alice"})
	if err != nil || c != (Command{Op: OpLinuxUser, Action: "apply", Arg: "alice"}) {
		t.Fatalf("%+v %v", c, err)
	}
	for _, args := range [][]string{{"linux-user", "apply"}, {"linux-user", "chown", "alice"}, {"linux-user", "apply", "root"},
		{"linux-user", "remove", "lcm"}, {"linux-user", "apply", "../x"}, {"linux-user", "apply", "alice", "x"}} {
		if _, err := Parse(args); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
	// Refused before anything runs: exit 2 (not root here, the refusal
	// comes first).
	var out, errb bytes.Buffer
	if code := Main([]string{"linux-user", "apply", "root"}, strings.NewReader("{}"), &out, &errb); code != 2 {
		t.Fatalf("exit %d %s", code, errb.String())
	}
}

func TestKeysFile(t *testing.T) {
	own := "ssh-ed25519 AAAAown own@laptop\n"
	block := KeysBegin + "\na\nb\n" + KeysEnd + "\n"
	for _, tt := range []struct {
		existing string
		keys     []string
		want     string
	}{
		{"", nil, ""},
		{"", []string{"b", "a"}, block},
		{own, []string{"b", "a"}, own + block},
		{own + block, []string{"a", "b"}, own + block},
		{own + block, nil, own},
		{block + own, []string{"b", "a"}, own + block},
		{own + "\n\n", []string{"a", "b"}, own + block},
		{KeysBegin + "\nold\n" + KeysEnd + "\n", nil, ""},
	} {
		if got := KeysFile(tt.existing, tt.keys); got != tt.want {
			t.Errorf("KeysFile(%q, %q) = %q, want %q", tt.existing, tt.keys, got, tt.want)
		}
	}
}

func TestCheckProfileSudoersRendered(t *testing.T) {
	// What internal/privilege renders: run-as users, sudoedit, "" for no
	// arguments, escaped ':' and '='.
	good := `# Managed by LCM: privilege profile "Ops" (group lcm-prof-ops). Changes here are overwritten.
%lcm-prof-ops ALL=(root) NOPASSWD: /usr/bin/systemctl --no-pager status ssh
%lcm-prof-ops ALL=(root) NOPASSWD: sudoedit /etc/motd
%lcm-prof-ops ALL=(postgres) NOPASSWD: /usr/bin/pg_dump ""
%lcm-prof-ops ALL=(root) NOPASSWD: /usr/bin/journalctl --no-pager --since\=today -u a\:b
`
	if err := CheckProfileSudoers("ops", good); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{
		"%lcm-prof-ops ALL=(postgres) NOPASSWD: sudoedit /etc/motd\n",
		"%lcm-prof-ops ALL=(root) NOPASSWD: sudoedit /etc/motd /etc/shadow\n",
		"%lcm-prof-ops ALL=(root) NOPASSWD: sudoedit motd\n",
		"%lcm-prof-ops ALL=(root:root) NOPASSWD: /usr/bin/id\n",
		"%lcm-prof-ops ALL=(root) NOPASSWD: /usr/bin/id \\;sh\n",
	} {
		if err := CheckProfileSudoers("ops", c); err == nil {
			t.Errorf("%q accepted", c)
		}
	}
}

// FuzzCheckLinuxUser: whatever passes the validator is safe to hand to
// useradd, usermod, chpasswd, gpasswd and setfacl and to write into
// passwd, shadow and authorized_keys.
func FuzzCheckLinuxUser(f *testing.F) {
	f.Add("alice", "Alice Example", "/bin/bash", testKey, testSHA512, "lcm-prof-ops", "/srv/share")
	f.Add("alice", "", "", testKey, testYescrypt, "sudo", "/var/www/site")
	f.Add("root", "x", "/bin/sh", testKey, "", "", "")
	f.Add("-o", "a:b", "/bin/sh -c id", testKey+"\nssh-ed25519 AAAA evil", "!", "shadow", "/")
	f.Add("Alice", "a,b", "bash", `command="sh" `+testKey, "$1$x$y", "lcm-prof-", "/etc/../etc/shadow")
	f.Add("lcm", "a\x00b", "/usr/sbin/nologin", "ssh-rsa AAAA\r", "$6$x$short", "wheel", "/etc/sudoers.d")
	f.Add("bob", "Bob", "/bin/dash", "sk-ssh-ed25519@openssh.com AAAA", testSHA512+"\n", "lcm-prof-web", "/srv/x/../y")
	f.Fuzz(func(t *testing.T, user, gecos, shell, key, hash, group, aclPath string) {
		in := LinuxUserInput{FullName: gecos, Shell: shell, Keys: []string{key}, PasswordHash: hash, Group: group,
			ACLs: []LinuxUserACL{{Group: "lcm-prof-ops", Path: aclPath, Perms: "r"}}}
		if CheckLinuxUser("apply", user, in, testShells) != nil {
			return
		}
		if !userRe.MatchString(user) || user == "root" || strings.HasPrefix(user, "lcm") || strings.HasPrefix(user, "-") {
			t.Fatalf("user %q", user)
		}
		if strings.ContainsAny(gecos, ":,\n\r\x00") {
			t.Fatalf("gecos %q", gecos)
		}
		if shell != "" && !testShells[shell] {
			t.Fatalf("shell %q", shell)
		}
		if strings.ContainsAny(key, "\n\r\x00") || strings.HasPrefix(key, "command=") || !keyTypes[strings.Fields(key)[0]] {
			t.Fatalf("key %q", key)
		}
		if hash != "" && (strings.ContainsAny(hash, ":\n!* ") || !strings.HasPrefix(hash, "$6$") && !strings.HasPrefix(hash, "$y$")) {
			t.Fatalf("hash %q", hash)
		}
		if group != "" && group != "sudo" && group != "wheel" && !strings.HasPrefix(group, "lcm-prof-") {
			t.Fatalf("group %q", group)
		}
		if aclPath == "/" || strings.Contains(aclPath, "..") || !strings.HasPrefix(aclPath, "/") || strings.HasPrefix(aclPath, "/etc/sudoers.d") {
			t.Fatalf("ACL path %q", aclPath)
		}
	})
}

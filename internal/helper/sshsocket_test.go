package helper

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/lcmproject/lcm/internal/testutil"
)

func TestParsePorts(t *testing.T) {
	for in, want := range map[string][]int{"22": {22}, "22,2222": {22, 2222}, "65535,1": {65535, 1}} {
		if got, err := ParsePorts(in); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%q: %v %v", in, got, err)
		}
	}
	for _, in := range []string{"", "0", "65536", "022", "22,22", "1,2,3", " 22", "22,", ",22", "-1", "+2", "0x16", "2e2"} {
		if got, err := ParsePorts(in); err == nil {
			t.Errorf("%q accepted: %v", in, got)
		}
	}
}

// TestParseSocketListen reads systemctl show's Listen property as systemd
// prints it: one "Listen=" line per address (systemd 252 and later), the
// older form with several on one line, IPv6 and wildcard forms.
func TestParseSocketListen(t *testing.T) {
	for in, want := range map[string][]int{
		"Listen=0.0.0.0:22 (Stream)\nListen=[::]:22 (Stream)\n":                               {22},
		"Listen=0.0.0.0:22 (Stream)\nListen=[::]:22 (Stream)\nListen=0.0.0.0:2222 (Stream)\n": {22, 2222},
		"Listen=[::]:2222 (Stream)\n":                                                         {2222},
		"Listen=[::]:22 (Stream) 0.0.0.0:2222 (Stream)\n":                                     {22, 2222},
		"Listen=\n":                       nil,
		"Listen=/run/foo.sock (Stream)\n": nil,
		"Listen=192.0.2.1:2200 (Stream)\nListen=[2001:db8::1]:2200 (Stream)\nListen=99999 (Stream)": {2200},
	} {
		if got := ParseSocketListen(in); !reflect.DeepEqual(got, want) {
			t.Errorf("%q: %v, want %v", in, got, want)
		}
	}
}

// TestSSHSocketDropInWithSystemd loads LCM's ssh.socket drop-in into a real
// systemd (systemd-analyze verify runs the manager in test mode and dumps
// the unit) over the ssh.socket units of Debian 12 and Ubuntu 24.04
// (testdata, copied from their openssh-server packages): the socket then
// listens on exactly the ports LCM wrote, on IPv4 and IPv6, whatever the
// unit listed. It needs the systemd package (scripts/test.sh installs it).
func TestSSHSocketDropInWithSystemd(t *testing.T) {
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		testutil.Unavailable(t, "systemd-analyze (package systemd) is not installed")
	}
	for _, unit := range []string{"ssh.socket.debian12", "ssh.socket.ubuntu2404"} {
		for _, ports := range [][]int{{22, 2222}, {2222}, {443}} {
			t.Run(unit+"/"+strings.Trim(strings.Join(strings.Fields(fmtInts(ports)), ","), "[]"), func(t *testing.T) {
				root := t.TempDir()
				lib, etc := filepath.Join(root, "lib"), filepath.Join(root, "etc")
				if err := os.MkdirAll(filepath.Join(etc, "ssh.socket.d"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.MkdirAll(lib, 0o755); err != nil {
					t.Fatal(err)
				}
				u, err := os.ReadFile(filepath.Join("testdata", unit))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(lib, "ssh.socket"), u, 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(lib, "ssh.service"), []byte("[Service]\nExecStart=/usr/sbin/sshd -D\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(etc, "ssh.socket.d", filepath.Base(SSHSocketDropInPath)), []byte(SSHSocketDropIn(ports)), 0o644); err != nil {
					t.Fatal(err)
				}
				cmd := exec.Command(sa, "verify", "ssh.socket")
				cmd.Dir = root
				cmd.Env = append(os.Environ(), "SYSTEMD_LOG_LEVEL=debug", "SYSTEMD_LOG_COLOR=0", "SYSTEMD_UNIT_PATH="+etc+":"+lib+":")
				out, _ := cmd.CombinedOutput() // verify complains about the missing sysinit.target; the dump is what counts
				got := listenOf(string(out))
				var want []string
				for _, p := range ports {
					want = append(want, "0.0.0.0:"+strconv.Itoa(p), "[::]:"+strconv.Itoa(p))
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("systemd loaded ListenStream %q, want %q\n%s", got, want, out)
				}
				if !strings.Contains(string(out), "BindIPv6Only: ipv6-only") || !strings.Contains(string(out), "DropIn Path: "+filepath.Join(etc, "ssh.socket.d", "lcm-port.conf")) {
					t.Fatalf("drop-in not loaded as written:\n%s", out)
				}
			})
		}
	}
}

var listenRe = regexp.MustCompile(`(?m)^\s+ListenStream: (\S+)$`)

func listenOf(dump string) []string {
	var out []string
	for _, m := range listenRe.FindAllStringSubmatch(dump, -1) {
		out = append(out, m[1])
	}
	return out
}

func fmtInts(ps []int) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = strconv.Itoa(p)
	}
	return strings.Join(s, " ")
}

func TestParseKeyLines(t *testing.T) {
	keys, err := ParseKeyLines([]byte(testKey + "\n\n" + strings.Replace(testKey, "alice@test", "second", 1) + "\n"))
	if err != nil || len(keys) != 2 {
		t.Fatalf("%q %v", keys, err)
	}
	if keys, err := ParseKeyLines(nil); err != nil || len(keys) != 0 {
		t.Fatalf("empty input: %q %v", keys, err)
	}
	for name, in := range map[string]string{
		"option":          `command="/bin/sh" ` + testKey,
		"carriage return": testKey + "\r\n",
		"white space":     testKey + "\n  \n",
		"not a key":       "hello world",
		"wrong blob type": "ssh-rsa " + strings.Fields(testKey)[1],
		"NUL":             testKey + "\x00",
		"too many":        strings.Repeat(testKey+"\n", maxKeys+1),
		"too long":        strings.Repeat("a", MaxInput+1),
	} {
		if keys, err := ParseKeyLines([]byte(in)); err == nil {
			t.Errorf("%s accepted: %q", name, keys)
		}
	}
}

func TestBlockKeys(t *testing.T) {
	content := "ssh-ed25519 AAAA own\n" + KeysBegin + "\n" + testKey + "\n" + KeysEnd + "\nssh-ed25519 BBBB own2\n"
	if got := BlockKeys(content); !reflect.DeepEqual(got, []string{testKey}) {
		t.Fatalf("%q", got)
	}
	if got := BlockKeys(KeysFile(content, nil)); len(got) != 0 {
		t.Fatalf("emptied block: %q", got)
	}
}

// FuzzParseKeyLines: whatever passes is a list of single, option-free key
// lines of a known type that KeysFile puts back as they are.
func FuzzParseKeyLines(f *testing.F) {
	f.Add([]byte(testKey + "\n"))
	f.Add([]byte("command=\"sh\" " + testKey))
	f.Add([]byte(testKey + "\r\n" + KeysEnd + "\n"))
	f.Add([]byte(KeysBegin + "\n" + testKey + "\n" + KeysEnd))
	f.Add([]byte("ssh-ed25519 AAAA\x00"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		keys, err := ParseKeyLines(raw)
		if err != nil {
			return
		}
		for _, k := range keys {
			if CheckKeyLine(k) != nil || strings.ContainsAny(k, "\n\r\x00") || k == KeysBegin || k == KeysEnd {
				t.Fatalf("accepted %q", k)
			}
		}
		if got := BlockKeys(KeysFile("", keys)); len(got) != len(keys) {
			t.Fatalf("round trip %q -> %q", keys, got)
		}
	})
}

// FuzzParsePorts: accepted ports are one or two distinct 1–65535 values
// that render back to the input.
func FuzzParsePorts(f *testing.F) {
	for _, s := range []string{"22", "22,2222", "22,22", "0", "65536", "022", "1,2,3", "-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ps, err := ParsePorts(s)
		if err != nil {
			return
		}
		if len(ps) == 0 || len(ps) > MaxSocketPorts || strings.ReplaceAll(fmtInts(ps), " ", ",") != s {
			t.Fatalf("%q -> %v", s, ps)
		}
		for _, p := range ps {
			if p < 1 || p > 65535 {
				t.Fatalf("%q -> %v", s, ps)
			}
		}
		if d := SSHSocketDropIn(ps); strings.Count(d, "\nListenStream=") != 1+2*len(ps) {
			t.Fatalf("drop-in %q", d)
		}
	})
}

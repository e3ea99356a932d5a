package helper

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestLinuxUserScanReproducesScript: fed the inputs behind the full-mode
// script's recorded output (internal/actions/testdata, recorded on test
// host 9), linux-user-scan prints the same bytes. The shadow input carries
// full hashes and the other fields; only the first character and the
// expiry may come out.
func TestLinuxUserScanReproducesScript(t *testing.T) {
	raw, err := os.ReadFile("../actions/testdata/linux_user_scan.txt")
	if err != nil {
		t.Fatal(err)
	}
	sec := map[string]string{}
	cur := ""
	for _, l := range records(string(raw)) {
		if s, ok := strings.CutPrefix(l, "### "); ok {
			cur = s
			continue
		}
		sec[cur] += l + "\n"
	}
	var shadow strings.Builder
	for _, l := range records(sec["shadow"]) {
		f := strings.Split(l, ":")
		pw := f[1]
		if pw != "" {
			pw += "6$salt$" + strings.Repeat("h", 43)
		}
		shadow.WriteString(f[0] + ":" + pw + ":19000:0:99999:7::" + f[2] + ":\n")
	}
	managed := map[string]bool{}
	for _, n := range records(sec["managed"]) {
		managed[n] = true
	}
	homes := map[string]bool{}
	for _, l := range records(sec["passwd"]) {
		f := strings.Split(l, ":")
		if managed[f[0]] {
			homes[f[5]] = true
		}
	}
	defs := filepath.Join(t.TempDir(), "login.defs")
	if err := os.WriteFile(defs, []byte("# UID_MIN 5\nMAIL_DIR /var/mail\nUID_MIN\t\t\t "+strings.TrimSpace(sec["uidmin"])+"\nUID_MAX 60000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	defer func(n func(string, io.Writer) (string, error), l func(io.Writer), k func(string) bool, d string) {
		nssList, scanLastlog, keysManaged, loginDefs = n, l, k, d
	}(nssList, scanLastlog, keysManaged, loginDefs)
	nssList = func(db string, _ io.Writer) (string, error) {
		return map[string]string{"passwd": sec["passwd"], "shadow": shadow.String(), "group": sec["groups"]}[db], nil
	}
	scanLastlog = func(w io.Writer) { io.WriteString(w, sec["lastlog"]) }
	keysManaged = func(home string) bool { return homes[home] }
	loginDefs = defs

	var out, errb bytes.Buffer
	if err := linuxUserScan(&out, &errb); err != nil {
		t.Fatal(err)
	}
	if out.String() != string(raw) {
		t.Fatalf("helper scan differs from the script's:\n%s\n--- script ---\n%s", out.String(), raw)
	}
	if strings.Contains(out.String(), "$salt$") {
		t.Fatal("a hash reached the scan output")
	}
}

func TestScanShadowAndUIDMin(t *testing.T) {
	in := "alice:$6$salt$hash:19000:0:99999:7:::\nbob:!$y$j9T$x:19000:0:99999:7::1:\nsvc:*:19000::::::\nshort\nempty::1\n"
	if got, want := ScanShadow(in), "alice:$:\nbob:!:1\nsvc:*:\nshort::\nempty::\n"; got != want {
		t.Fatalf("ScanShadow = %q, want %q", got, want)
	}
	if got := ScanUIDMin("UID_MIN 500\n#UID_MIN 1\n  UID_MIN\t1000 x\nUID_MIN\n"); got != "500\n1000\n\n" {
		t.Fatalf("ScanUIDMin = %q", got)
	}
	if ScanShadow("") != "" || ScanUIDMin("") != "" {
		t.Fatal("empty input printed something")
	}
}

// TestHomeHoldsKeyBlock: the marker line counts in a regular key file; a
// key file or ~/.ssh behind a symbolic link, a FIFO, a marker that is not
// the whole line do not.
func TestHomeHoldsKeyBlock(t *testing.T) {
	mk := func(content string) string {
		home := t.TempDir()
		os.Mkdir(home+"/.ssh", 0o700)
		os.WriteFile(home+"/.ssh/authorized_keys", []byte(content), 0o600)
		return home
	}
	good := mk("ssh-ed25519 AAAA own\n" + KeysBegin + "\nssh-ed25519 AAAA x\n" + KeysEnd)
	if !homeHoldsKeyBlock(good) {
		t.Fatal("key block not seen")
	}
	if homeHoldsKeyBlock(mk("# "+KeysBegin+"\n")) || homeHoldsKeyBlock(mk(KeysBegin+" \n")) || homeHoldsKeyBlock(t.TempDir()) || homeHoldsKeyBlock("") {
		t.Fatal("block seen where there is none")
	}
	linkKeys := t.TempDir()
	os.Mkdir(linkKeys+"/.ssh", 0o700)
	os.Symlink(good+"/.ssh/authorized_keys", linkKeys+"/.ssh/authorized_keys")
	linkDir := t.TempDir()
	os.Symlink(good+"/.ssh", linkDir+"/.ssh")
	fifo := t.TempDir()
	os.Mkdir(fifo+"/.ssh", 0o700)
	if err := syscall.Mkfifo(fifo+"/.ssh/authorized_keys", 0o600); err != nil {
		t.Fatal(err)
	}
	for name, home := range map[string]string{"linked file": linkKeys, "linked .ssh": linkDir, "fifo": fifo} {
		if homeHoldsKeyBlock(home) {
			t.Errorf("%s counted as managed", name)
		}
	}
}

func TestLinuxUserScanRefusesArguments(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Main([]string{"linux-user-scan", "alice"}, nil, &out, &errb); code != 2 || !strings.Contains(errb.String(), "takes 0 argument(s)") || out.Len() != 0 {
		t.Fatalf("exit %d %q %q", code, out.String(), errb.String())
	}
}

package debpkg

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/testutil"
)

// debHost is test host 13 (docs/testing.md), reached with ssh and scp
// over the test key.
type debHost struct {
	t    *testing.T
	h    testutil.TestHost
	opts []string
}

func newDebHost(t *testing.T) *debHost {
	need(t, "ssh", "scp", "go")
	h := testutil.TestHostAt(t, 13)
	testutil.LockTestHost(t, h)
	kh := filepath.Join(t.TempDir(), "known_hosts")
	var lines []string
	for _, k := range h.HostKeys {
		lines = append(lines, h.Host+" "+k)
	}
	if err := os.WriteFile(kh, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := &debHost{t: t, h: h, opts: []string{"-i", h.KeyPath, "-o", "UserKnownHostsFile=" + kh,
		"-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "-o", "ConnectTimeout=20", "-P", fmt.Sprint(h.Port)}}
	testutil.ResetTestHost(t, h)
	t.Cleanup(func() { testutil.ResetTestHost(t, h) })
	return d
}

// sh runs a shell command as root on the host and returns its output
// (stdout and stderr) and whether it exited 0.
func (d *debHost) sh(cmd string) (string, bool) {
	d.t.Helper()
	args := append([]string{}, d.opts...)
	for i := range args {
		if args[i] == "-P" { // ssh spells the port -p
			args[i] = "-p"
		}
	}
	args = append(args, "root@"+d.h.Host, cmd)
	out, err := exec.Command("ssh", args...).CombinedOutput()
	return string(out), err == nil
}

func (d *debHost) must(cmd string) string {
	d.t.Helper()
	out, ok := d.sh(cmd)
	if !ok {
		d.t.Fatalf("on test host: %s\n%s", cmd, out)
	}
	return strings.TrimSpace(out)
}

func (d *debHost) copy(files ...string) {
	d.t.Helper()
	args := append(append([]string{}, d.opts...), files...)
	args = append(args, "root@"+d.h.Host+":/root/")
	if out, err := exec.Command("scp", args...).CombinedOutput(); err != nil {
		d.t.Fatalf("scp: %v\n%s", err, out)
	}
}

// realBin gathers real lcm-api, lcm-worker and lcm-agent binaries: the
// ones `make build` left next to $LCM_API_BIN (scripts/test.sh), else
// built here (the go build cache makes repeated runs cheap).
func realBin(t *testing.T) string {
	dir := t.TempDir()
	root := repoRoot(t)
	copyFile := func(src, dst string) bool {
		b, err := os.ReadFile(src)
		if err != nil {
			return false
		}
		if err := os.WriteFile(dst, b, 0o755); err != nil {
			t.Fatal(err)
		}
		return true
	}
	copyFile(testutil.APIBinary(t), filepath.Join(dir, "lcm-api"))
	built := ""
	if p := os.Getenv("LCM_API_BIN"); p != "" {
		built = filepath.Dir(p)
	}
	for _, b := range []string{"worker", "agent", "helper-linux-amd64", "helper-linux-arm64"} {
		if built != "" && copyFile(filepath.Join(built, "lcm-"+b), filepath.Join(dir, "lcm-"+b)) {
			continue
		}
		pkg, goarch := "./cmd/"+b, runtime.GOARCH
		if arch, ok := strings.CutPrefix(b, "helper-linux-"); ok {
			pkg, goarch = "./cmd/helper", arch
		}
		cmd := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(dir, "lcm-"+b), pkg)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+goarch)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	return dir
}

// TestPackagesOnDebianHost installs the real packages on a Debian test
// host with dpkg -i (no systemd runs there, as in a container): accounts,
// directories, modes, the self-management handover, the units; then an
// upgrade from the previous version keeps the data and the key; the
// installation-time opt-out; and dpkg --purge. The installed lcm-api runs
// as its service account before and after the upgrade and reads its data
// back.
func TestPackagesOnDebianHost(t *testing.T) {
	d := newDebHost(t)
	bin := realBin(t)
	dist := t.TempDir()
	mtime := time.Now()
	old, err := Build(Options{Repo: repoRoot(t), Bin: bin, Out: filepath.Join(dist, "old"), Version: "1.2.0-beta.1", MTime: mtime})
	if err != nil {
		t.Fatal(err)
	}
	cur, err := Build(Options{Repo: repoRoot(t), Bin: bin, Out: filepath.Join(dist, "new"), Version: "1.2.0", MTime: mtime})
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, p := range append(old, cur...) {
		paths = append(paths, p.Path)
	}
	d.copy(paths...)
	deb := func(p Package) string { return "'/root/" + filepath.Base(p.Path) + "'" }

	// Fresh installation of the previous version, all three packages.
	out := d.must("dpkg -i " + deb(old[0]) + " " + deb(old[1]) + " " + deb(old[2]) + " 2>&1")
	t.Logf("dpkg -i:\n%s", out)
	if !strings.Contains(out, "systemd is not running") {
		t.Errorf("postinst did not say how to start without systemd:\n%s", out)
	}
	for _, n := range Names {
		if v := d.must("dpkg-query -W -f '${Status} ${Version}' " + n); v != "install ok installed 1.2.0~beta.1" {
			t.Errorf("%s: %q", n, v)
		}
	}
	// Accounts: the service accounts are system accounts without a login
	// shell; the management account logs in with its key only.
	for _, u := range []string{"lcm-api", "lcm-worker"} {
		f := strings.Split(d.must("getent passwd "+u), ":")
		if len(f) != 7 || f[6] != "/usr/sbin/nologin" {
			t.Errorf("account %s: %v", u, f)
		}
		if uid := d.must("id -u " + u); len(uid) > 3 {
			t.Errorf("account %s is not a system account (uid %s)", u, uid)
		}
	}
	if pw := d.must("getent shadow lcm | cut -d: -f2"); pw != "*" {
		t.Errorf("management account password field %q, want *", pw)
	}
	// Files and modes.
	for path, want := range map[string]string{
		"/usr/lib/lcm/lcm-api":                       "755 root root",
		"/usr/lib/lcm/lcm-worker":                    "755 root root",
		"/usr/lib/lcm/lcm-helper-linux-amd64":        "755 root root",
		"/usr/lib/lcm-worker/lcm-helper-linux-arm64": "755 root root",
		"/usr/bin/lcm-agent":                         "755 root root",
		"/lib/systemd/system/lcm-api.service":        "644 root root",
		"/lib/systemd/system/lcm-worker.service":     "644 root root",
		"/lib/systemd/system/lcm-agent.service":      "644 root root",
		"/var/lib/lcm":                               "700 lcm-api lcm-api",
		"/etc/lcm":                                   "700 lcm-api lcm-api",
		"/var/lib/lcm/selfmanage.key":                "600 lcm-api lcm-api",
		"/etc/sudoers.d/lcm":                         "440 root root",
		"/home/lcm/.ssh/authorized_keys":             "600 lcm lcm",
		"/etc/lcm-agent":                             "700 root root",
		"/etc/lcm-worker":                            "750 root lcm-worker",
	} {
		if got := d.must("stat -c '%a %U %G' " + path); got != want {
			t.Errorf("%s: %s, want %s", path, got, want)
		}
	}
	if _, ok := d.sh("test ! -e /var/lib/lcm/selfmanage.disabled"); !ok {
		t.Error("opt-out marker written without opt-out")
	}
	d.must("visudo -c")
	// The handover key is the private half of the management key.
	pub := d.must("ssh-keygen -y -f /var/lib/lcm/selfmanage.key | cut -d' ' -f1,2")
	if ak := d.must("grep ' lcm-management$' /home/lcm/.ssh/authorized_keys | cut -d' ' -f1,2"); ak != pub {
		t.Errorf("authorized key %q does not match the handover key %q", ak, pub)
	}
	// The binaries run on the host.
	if v := d.must("/usr/lib/lcm/lcm-api -version"); !strings.HasPrefix(v, "lcm-api ") {
		t.Errorf("lcm-api -version: %q", v)
	}
	// The units are installed, parse, and name an installed executable and
	// an existing account; deb-systemd-helper recorded lcm-api as enabled,
	// the worker and the agent (which need configuration first) not.
	for _, u := range []string{"lcm-api", "lcm-worker", "lcm-agent"} {
		unit := parseUnit(t, u, d.must("cat /lib/systemd/system/"+u+".service"))
		exe := strings.Fields(unit["Service"]["ExecStart"][0])[0]
		d.must("test -x " + exe)
		if users := unit["Service"]["User"]; len(users) == 1 {
			d.must("id " + users[0])
		}
		if got := unit["Install"]["WantedBy"]; len(got) != 1 || got[0] != "multi-user.target" {
			t.Errorf("%s: WantedBy %v", u, got)
		}
		_, enabled := d.sh("test -L /etc/systemd/system/multi-user.target.wants/" + u + ".service")
		if enabled != (u == "lcm-api") {
			t.Errorf("%s: enabled = %v", u, enabled)
		}
	}

	// The installed lcm-api runs as lcm-api from its unit's ExecStart (no
	// systemd here: started directly), consumes the handover on its first
	// start, and gets data: a user and an API key; its TLS key is stored
	// encrypted under lcm.key.
	port := serviceConfig(t, d)
	svc := startService(t, d, port, "lcm-api-1.log")
	first := svc.output()
	pw := adminPasswordRe.FindStringSubmatch(first)
	tlsSHA := tlsSHARe.FindStringSubmatch(first)
	if pw == nil || tlsSHA == nil {
		t.Fatalf("first start printed no admin password or TLS fingerprint:\n%s", first)
	}
	tok := svc.login(t, "admin", pw[1])
	if code := svc.do(t, "POST", "/api/v1/users", tok, map[string]any{"username": "keeper", "first_name": "Kept", "last_name": "Data",
		"email": "keeper@example.test", "password": "Tq8#vLz2!pR9wXc4", "roles": []string{"manager"}}, nil); code != http.StatusCreated {
		t.Fatalf("create user on the host: %d", code)
	}
	var key struct{ Key string }
	if code := svc.do(t, "POST", "/api/v1/apikeys", tok, map[string]any{"name": "kept", "scope": "read"}, &key); code != http.StatusCreated {
		t.Fatalf("create api key on the host: %d", code)
	}
	if _, ok := d.sh("test ! -e /var/lib/lcm/selfmanage.key"); !ok {
		t.Errorf("lcm-api's first start left the handover file:\n%s", first)
	}
	svc.stop(t)
	files := d.must("stat -c '%n %a %U' /var/lib/lcm /var/lib/lcm/lcm.db /var/lib/lcm/lcm.key /etc/lcm/config.json")

	// The upgrade keeps the data, the key and the configuration, and hands
	// over no new key.
	out = d.must("dpkg -i " + deb(cur[0]) + " " + deb(cur[1]) + " " + deb(cur[2]) + " 2>&1")
	t.Logf("upgrade:\n%s", out)
	for _, n := range Names {
		if v := d.must("dpkg-query -W -f '${Version}' " + n); v != "1.2.0" {
			t.Errorf("%s after upgrade: %q", n, v)
		}
	}
	if got := d.must("stat -c '%n %a %U' /var/lib/lcm /var/lib/lcm/lcm.db /var/lib/lcm/lcm.key /etc/lcm/config.json"); got != files ||
		!strings.Contains(got, "/var/lib/lcm 700 lcm-api") || !strings.Contains(got, "/var/lib/lcm/lcm.key 600 lcm-api") {
		t.Errorf("data files after upgrade:\n%s\nbefore:\n%s", got, files)
	}
	if _, ok := d.sh("test ! -e /var/lib/lcm/selfmanage.key"); !ok {
		t.Error("the upgrade handed over a new key")
	}
	// The upgraded lcm-api reads it all back: the same admin, the user,
	// the API key, and the TLS key decrypted (the same certificate).
	svc = startService(t, d, port, "lcm-api-2.log")
	second := svc.output()
	if adminPasswordRe.MatchString(second) {
		t.Errorf("the upgraded lcm-api created a new admin:\n%s", second)
	}
	if m := tlsSHARe.FindStringSubmatch(second); m == nil || m[1] != tlsSHA[1] {
		t.Errorf("TLS certificate after the upgrade %v, want %s", m, tlsSHA[1])
	}
	tok = svc.login(t, "admin", pw[1])
	var users []struct{ Username string }
	svc.do(t, "GET", "/api/v1/users", tok, nil, &users)
	kept := false
	for _, u := range users {
		kept = kept || u.Username == "keeper"
	}
	if !kept {
		t.Errorf("the user created before the upgrade is gone: %+v", users)
	}
	if code := svc.do(t, "GET", "/api/v1/servers", key.Key, nil, nil); code != http.StatusOK {
		t.Errorf("the API key created before the upgrade: %d", code)
	}
	svc.stop(t)
	if n := d.must("grep -c ' lcm-management$' /home/lcm/.ssh/authorized_keys"); n != "1" {
		t.Errorf("%s management keys after upgrade", n)
	}

	// Remove keeps the data; purge removes data, configuration, the sudo
	// rule and the management key, and keeps the accounts.
	d.must("dpkg --remove lcm lcm-worker lcm-agent")
	d.must("test -f /var/lib/lcm/lcm.db && test ! -e /usr/lib/lcm/lcm-api")
	d.must("dpkg --purge lcm lcm-worker lcm-agent")
	for _, p := range []string{"/var/lib/lcm", "/etc/lcm", "/etc/sudoers.d/lcm", "/usr/lib/lcm", "/lib/systemd/system/lcm-api.service", "/etc/lcm-agent", "/etc/lcm-worker",
		"/etc/systemd/system/multi-user.target.wants/lcm-api.service"} {
		if _, ok := d.sh("test ! -e " + p); !ok {
			t.Errorf("%s survived the purge", p)
		}
	}
	if st, _ := d.sh("dpkg-query -W -f '${Status}' lcm"); strings.Contains(st, "installed") && !strings.Contains(st, "not-installed") {
		t.Errorf("lcm after purge: %s", st)
	}
	if n, _ := d.sh("grep -c ' lcm-management$' /home/lcm/.ssh/authorized_keys"); strings.TrimSpace(n) != "0" {
		t.Errorf("management key after purge: %s", n)
	}
	d.must("id lcm-api && id lcm")

	// The installation-time opt-out: no handover, no sudo rule, the marker;
	// an upgrade keeps the choice.
	d.must("userdel -r lcm")
	out = d.must("LCM_NO_SELF_MANAGE=1 dpkg -i " + deb(old[0]) + " 2>&1")
	if !strings.Contains(out, "opted out") {
		t.Errorf("opt-out not reported:\n%s", out)
	}
	d.must("test -f /var/lib/lcm/selfmanage.disabled && test ! -e /var/lib/lcm/selfmanage.key && test ! -e /etc/sudoers.d/lcm && ! id lcm")
	out = d.must("dpkg -i " + deb(cur[0]) + " 2>&1")
	if !strings.Contains(out, "stays opted out") {
		t.Errorf("upgrade forgot the opt-out:\n%s", out)
	}
	d.must("test -f /var/lib/lcm/selfmanage.disabled && test ! -e /var/lib/lcm/selfmanage.key && test ! -e /etc/sudoers.d/lcm && ! id lcm")
	d.must("dpkg --purge lcm")
}

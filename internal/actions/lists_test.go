package actions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/fleetsim"
	"github.com/lcmproject/lcm/internal/pkgmgr"
	"github.com/lcmproject/lcm/internal/remote"
	"github.com/lcmproject/lcm/internal/sshexec"
)

// recordedUpdateFailure is apt's answer, recorded on a Debian test host,
// to RefreshLists with a source that refuses connections.
func recordedUpdateFailure(t *testing.T) (stdout, stderr string) {
	t.Helper()
	o, err := os.ReadFile("../pkgmgr/testdata/apt_update_broken_source.stdout.txt")
	if err != nil {
		t.Fatal(err)
	}
	e, err := os.ReadFile("../pkgmgr/testdata/apt_update_broken_source.stderr.txt")
	if err != nil {
		t.Fatal(err)
	}
	return string(o), string(e)
}

// simHost starts one simulated Debian host whose apt-get update fails with
// the recorded output when failUpdate is set, and records the commands it
// ran (normalized: no sudo -n, no LC_ALL=C).
func simHost(t *testing.T, failUpdate bool) (remote.Executor, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var cmds []string
	table := fleetsim.DefaultTable()
	fleetsim.HandleRefresh(table, fleetsim.RefreshOptions{Upgradable: 5, Security: 2})
	if failUpdate {
		stdout, stderr := recordedUpdateFailure(t)
		table.Pin(fleetsim.IsListRefresh,
			func(ctx context.Context, r *fleetsim.Request) int {
				r.Stdout.Write([]byte(stdout))
				r.Stderr.Write([]byte(stderr))
				return 100
			})
	}
	f, err := fleetsim.Start(fleetsim.Config{N: 1, Packages: 50, Responders: table, OnExec: func(_ *fleetsim.Instance, cmd string) {
		mu.Lock()
		cmds = append(cmds, cmd)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	inst := f.Instances[0]
	ex, err := sshexec.Dial(context.Background(), sshexec.Target{Addr: inst.Addr, User: "lcm", Password: "x", HostKey: inst.AuthorizedHostKey()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ex.Close() })
	return ex, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), cmds...)
	}
}

// index returns the position of the first command containing sub, or -1.
func index(cmds []string, sub string) int {
	for i, c := range cmds {
		if strings.Contains(c, sub) {
			return i
		}
	}
	return -1
}

// TestListsRefreshedBeforeInstalling: every action that decides what to
// install, and the refresh job, refresh the lists first and say how old
// they were; actions that install nothing do not.
func TestListsRefreshedBeforeInstalling(t *testing.T) {
	const update = "Error-Mode=any update"
	run := func(t *testing.T, kind domain.JobKind, params any) (string, []string) {
		ex, cmds := simHost(t, false)
		var out bytes.Buffer
		env := &Env{Exec: ex, Out: &out}
		env.Creds.PackageFamily = "apt"
		if params != nil {
			env.Params, _ = json.Marshal(params)
		}
		a, err := For(kind)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := a.(DataAction).RunData(context.Background(), env); err != nil {
			t.Fatalf("%s: %v\n%s", kind, err, out.String())
		}
		return out.String(), cmds()
	}
	for _, c := range []struct {
		name    string
		kind    domain.JobKind
		params  any
		then    string // the command that must come after the refresh
		refresh bool
	}{
		{"upgrade-security", domain.JobUpgradeSecurity, nil, "install --only-upgrade --no-remove $pkgs", true},
		{"upgrade-all", domain.JobPackageAction, PackageParams{Action: PkgUpgradeAll}, "upgrade --with-new-pkgs", true},
		{"update", domain.JobPackageAction, PackageParams{Action: PkgUpdate, Names: []string{"openssl"}}, "install --only-upgrade --no-remove openssl", true},
		{"refresh job", domain.JobRefresh, nil, "apt-get -s", true},
		{"refresh-lists", domain.JobPackageAction, PackageParams{Action: PkgRefreshLists}, "apt-get -s", true},
		{"remove", domain.JobPackageAction, PackageParams{Action: PkgRemove, Names: []string{"tree"}}, "remove tree", false},
		{"hold", domain.JobPackageAction, PackageParams{Action: PkgHold, Names: []string{"tree"}}, "apt-mark hold tree", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, cmds := run(t, c.kind, c.params)
			u, then := index(cmds, update), index(cmds, c.then)
			if then < 0 {
				t.Fatalf("%q never ran: %q", c.then, cmds)
			}
			if !c.refresh {
				if u >= 0 || strings.Contains(out, "package lists are") {
					t.Fatalf("lists refreshed for %s:\n%s", c.name, out)
				}
				return
			}
			if u < 0 || u > then {
				t.Fatalf("lists refreshed at %d, %q at %d: %q", u, c.then, then, cmds)
			}
			if index(cmds[u+1:], update) >= 0 {
				t.Fatalf("lists refreshed twice: %q", cmds)
			}
			for _, want := range []string{"lcm: package lists are 2d 0h old (newest of 2 index files from ", "oldest 9d 0h old)",
				"lcm: refreshing every configured apt source (apt-get update)", "Hit:2 http://deb.debian.org/debian-security", "lcm: package lists refreshed in "} {
				if !strings.Contains(out, want) {
					t.Fatalf("output lacks %q:\n%s", want, out)
				}
			}
		})
	}
}

// TestFailedListRefreshFailsTheJob: a list refresh that fails (here apt's
// recorded answer to a source that refuses connections) fails the job with
// apt's message, and the upgrade never runs: no "no security updates".
func TestFailedListRefreshFailsTheJob(t *testing.T) {
	for _, c := range []struct {
		kind   domain.JobKind
		params any
		never  string
	}{
		{domain.JobUpgradeSecurity, nil, "sim=$("},
		{domain.JobPackageAction, PackageParams{Action: PkgUpgradeAll}, "upgrade --with-new-pkgs"},
		{domain.JobPackageAction, PackageParams{Action: PkgUpdate, Names: []string{"openssl"}}, "install --only-upgrade"},
		{domain.JobPackageAction, PackageParams{Action: PkgRefreshLists}, "\x00"},
		{domain.JobRefresh, nil, "apt-get -s"},
	} {
		t.Run(string(c.kind)+"/"+strings.Trim(string(mustJSON(c.params)), "{}"), func(t *testing.T) {
			ex, cmds := simHost(t, true)
			var out bytes.Buffer
			env := &Env{Exec: ex, Out: &out}
			env.Creds.PackageFamily = "apt"
			if c.params != nil {
				env.Params = mustJSON(c.params)
			}
			a, _ := For(c.kind)
			r, _, err := a.(DataAction).RunData(context.Background(), env)
			var failed *Failed
			if !errors.As(err, &failed) {
				t.Fatalf("err = %v, want a failed job\n%s", err, out.String())
			}
			for _, want := range []string{"package lists could not be refreshed (apt exited with code 100)",
				"E: Failed to fetch http://127.0.0.1:9/debian/dists/bookworm/InRelease  Could not connect to 127.0.0.1:9",
				"E: Some index files failed to download"} {
				if !strings.Contains(failed.Reason, want) {
					t.Fatalf("reason %q lacks %q", failed.Reason, want)
				}
			}
			if c.kind != domain.JobRefresh && r.ExitCode != 100 {
				t.Fatalf("exit code %d, want apt's 100", r.ExitCode)
			}
			if strings.Contains(out.String(), "no security updates") || index(cmds(), c.never) >= 0 {
				t.Fatalf("the action went on after the failed refresh: %q\n%s", cmds(), out.String())
			}
		})
	}
}

func mustJSON(v any) []byte {
	if v == nil {
		return nil
	}
	b, _ := json.Marshal(v)
	return b
}

func TestManagerMessage(t *testing.T) {
	stdout, stderr := recordedUpdateFailure(t)
	got := managerMessage(stderr, stdout)
	want := "E: Failed to fetch http://127.0.0.1:9/debian/dists/bookworm/InRelease  Could not connect to 127.0.0.1:9 (127.0.0.1). - connect (111: Connection refused); " +
		"E: Some index files failed to download. They have been ignored, or old ones used instead."
	if got != want {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	for _, c := range []struct{ stderr, stdout, want string }{
		// dnf 4 with a dead repository
		{"Errors during downloading metadata for repository 'epel':\n  - Curl error (7): Couldn't connect to server\nError: Failed to download metadata for repo 'epel': Cannot download repomd.xml\n", "",
			"Errors during downloading metadata for repository 'epel':; Error: Failed to download metadata for repo 'epel': Cannot download repomd.xml"},
		// pacman
		{"error: failed retrieving file 'core.db' from mirror : Could not resolve host\nerror: failed to synchronize all databases (download library error)\n", "",
			"error: failed retrieving file 'core.db' from mirror : Could not resolve host; error: failed to synchronize all databases (download library error)"},
		// sudo without a rule: the last stderr line
		{"sudo: a password is required\n", "", "sudo: a password is required"},
		{"", "fetch http://dl-cdn.alpinelinux.org/alpine/v3.20/main/x86_64/APKINDEX.tar.gz\n2 unavailable, 0 stale; 0 distinct packages available\n",
			"fetch http://dl-cdn.alpinelinux.org/alpine/v3.20/main/x86_64/APKINDEX.tar.gz; 2 unavailable, 0 stale; 0 distinct packages available"},
		{"", "", "no output"},
	} {
		if got := managerMessage(c.stderr, c.stdout); got != c.want {
			t.Errorf("got %q\nwant %q", got, c.want)
		}
	}
}

func TestDescribeListsAge(t *testing.T) {
	a, _ := pkgmgr.ParseListsAge([]byte("1795529059\n1795528636\n1795528636\n1795000000\n"))
	if got := describeListsAge(a, nil); got != "package lists are 7m old (newest of 3 index files from 2026-11-24 13:57 UTC, oldest 6d 2h old)" {
		t.Fatal(got)
	}
	a, _ = pkgmgr.ParseListsAge([]byte("1795529059\n"))
	if got := describeListsAge(a, nil); got != "no package lists on the server yet" {
		t.Fatal(got)
	}
	if got := describeListsAge(pkgmgr.ListsAge{}, errors.New("exit code 1")); got != "package lists age unknown (exit code 1)" {
		t.Fatal(got)
	}
}

func TestTailBuffer(t *testing.T) {
	b := &tailBuffer{max: 8}
	b.Write([]byte("hello "))
	b.Write([]byte("world!"))
	if b.String() != "o world!" {
		t.Fatalf("%q", b.String())
	}
}

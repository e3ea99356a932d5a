package actions

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/pkgmgr"
	"github.com/lcmproject/lcm/internal/remote"
	"github.com/lcmproject/lcm/internal/sshexec"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/aptrepo"
)

// staleListsHost is test host 7 (127.0.0.8), the list-refresh area's
// host, with apt pointed at a repository only this test serves
// (aptrepo.StartStaleProbe: lcm-stale-probe 1.0 in bookworm, 1.1 in
// bookworm-security) and 1.0 installed: one security update is pending
// whatever Debian has published, and no apt command needs the network.
// The host's own sources and lists come back with the reset.
func staleListsHost(t *testing.T) (remote.Executor, testutil.TestHost) {
	t.Helper()
	testutil.LockTestHostAt(t, 7)
	h := testutil.TestHostAt(t, 7)
	testutil.ResetTestHost(t, h)
	t.Cleanup(func() { testutil.ResetTestHost(t, h) })
	cl, err := sshexec.Dial(context.Background(), sshexec.Target{Addr: h.Addr, User: "root", Signer: h.Signer(t), HostKey: h.HostKeys[0]})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	repo := aptrepo.StartStaleProbe(t)
	onHost(t, cl, repo.OnlySourceScript(aptrepo.StaleProbe+"="+aptrepo.StaleProbeRelease), 5*time.Minute)
	return cl, h
}

// onHost runs a setup or check command on the test host as root and
// returns its stdout; a failure ends the test.
func onHost(t *testing.T, ex remote.Executor, cmd string, timeout time.Duration) string {
	t.Helper()
	var out, errb bytes.Buffer
	res, err := ex.Run(context.Background(), remote.Command{Cmd: cmd, Stdout: &out, Stderr: &errb, Timeout: timeout})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("%s: exit %d %v\n%s%s", cmd, res.ExitCode, err, out.String(), errb.String())
	}
	return out.String()
}

// securityPending is the host's own answer, not LCM's: after
// refreshLists, the packages `apt-get -s dist-upgrade` would take from a
// -security suite (ParseAptSimulate's Security flag; the "Inst" lines of
// the simulation, counted again by grep for the record).
func securityPending(t *testing.T, ex remote.Executor, refreshLists bool) []string {
	t.Helper()
	cmd := "LC_ALL=C apt-get -s dist-upgrade"
	if refreshLists {
		cmd = "apt-get -q update >/dev/null && " + cmd
	}
	sim := onHost(t, ex, cmd, 10*time.Minute)
	ups, err := pkgmgr.ParseAptSimulate([]byte(sim))
	if err != nil {
		t.Fatalf("simulation unreadable: %v\n%s", err, sim)
	}
	var names []string
	grep := 0
	for _, line := range strings.Split(sim, "\n") {
		if strings.HasPrefix(line, "Inst ") && strings.Contains(line, "-security") {
			grep++
		}
	}
	for _, u := range ups {
		if u.Security {
			names = append(names, u.Name)
		}
	}
	if grep != len(names) {
		t.Fatalf("%d Inst lines from a -security suite, parser flags %d: %v\n%s", grep, len(names), names, sim)
	}
	slices.Sort(names)
	return names
}

// makeListsStale turns the host's package lists into those of a server
// whose last `apt-get update` predates the security suite's newest
// releases: the security suite's index is gone (as if those releases were
// not published yet when the lists were fetched) and every remaining list
// is 10 days old. apt's binary caches are dropped so nothing remembers the
// fresh state.
const makeListsStale = `set -e
rm -f /var/lib/apt/lists/*security* /var/cache/apt/pkgcache.bin /var/cache/apt/srcpkgcache.bin
find /var/lib/apt/lists -maxdepth 1 -type f -exec touch -d '10 days ago' {} +`

// brokenSource is an apt source whose connection is refused at once: a
// loopback address no test host or server uses (hosts end at
// 127.0.0.251), port 9 (discard), where nothing listens. Not 127.0.0.1:
// after a refused connection apt gives up on every source of that host
// ("Could not resolve '127.0.0.1'"), and the test's repository is there;
// only the broken source is to fail.
const brokenSource = "http://127.0.0.254:9/debian"

// aptJob runs a job kind's action the way the worker does (For, RunData)
// on the host as a server of the apt family.
func aptJob(t *testing.T, ex remote.Executor, kind domain.JobKind) (Result, RefreshData, string, error) {
	t.Helper()
	var out bytes.Buffer
	env := &Env{Exec: ex, Out: &out}
	env.Creds.PackageFamily = string(pkgmgr.FamilyAPT)
	a, err := For(kind)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	r, data, err := a.(DataAction).RunData(ctx, env)
	var d RefreshData
	if len(data) > 0 {
		if d, err2 := DecodeRefresh(data); err2 == nil {
			return r, d, out.String(), err
		}
		t.Fatalf("%s: payload unreadable", kind)
	}
	return r, d, out.String(), err
}

// probeVersion is the installed version of the probe package, by dpkg
// and by the file the package carries.
func probeVersion(t *testing.T, ex remote.Executor) string {
	t.Helper()
	v := onHost(t, ex, "dpkg-query -W -f='${Version}' "+aptrepo.StaleProbe, time.Minute)
	if file := strings.TrimSpace(onHost(t, ex, "cat /usr/share/"+aptrepo.StaleProbe+"/version", time.Minute)); file != v {
		t.Fatalf("dpkg says %s %s, its file says %s", aptrepo.StaleProbe, v, file)
	}
	return v
}

func securityNames(inv pkgmgr.Inventory) []string {
	var names []string
	for _, u := range inv.Upgradable {
		if u.Security {
			names = append(names, u.Name)
		}
	}
	slices.Sort(names)
	return names
}

// TestSecurityUpgradeOnStaleListsOnTestHost is issue 24's proof on a real
// Debian 12 host: with package lists a few days old that do not know the
// security suite's newest release, (1) the refresh job's security count
// is what the host itself reports after its own apt-get update, (2) a list
// refresh that fails fails the security upgrade with apt's message and
// installs nothing, and (3) the security upgrade leaves zero pending
// security updates by the host's own fresh apt-get update + simulation.
// The suites are the test's own (staleListsHost), so the outcome does not
// depend on what Debian's security suite holds that day.
func TestSecurityUpgradeOnStaleListsOnTestHost(t *testing.T) {
	ex, _ := staleListsHost(t)

	// The host has exactly the probe's security update pending, named by
	// apt as Debian's own security suite is.
	pending := securityPending(t, ex, true)
	if !slices.Equal(pending, []string{aptrepo.StaleProbe}) {
		t.Fatalf("pending security updates %v, want exactly %s", pending, aptrepo.StaleProbe)
	}
	inst := "Inst " + aptrepo.StaleProbe + " [" + aptrepo.StaleProbeRelease + "] (" + aptrepo.StaleProbeSecurity +
		" Debian-Security:12/bookworm-security [all])"
	if sim := onHost(t, ex, "LC_ALL=C apt-get -s dist-upgrade", time.Minute); !strings.Contains(sim, inst) {
		t.Fatalf("the simulation lacks %q:\n%s", inst, sim)
	}

	// Stale lists hide it: this is what an upgrade without a list
	// refresh decided from ("lcm: no security updates").
	onHost(t, ex, makeListsStale, time.Minute)
	if stale := securityPending(t, ex, false); len(stale) != 0 {
		t.Fatalf("stale lists still show security updates: %v", stale)
	}

	// (1) The refresh job refreshes the lists first: its security count
	// equals the host's own after apt-get update.
	r, d, out, err := aptJob(t, ex, domain.JobRefresh)
	if err != nil {
		t.Fatalf("refresh job: %v\n%s", err, out)
	}
	for _, want := range []string{"lcm: package lists are 10d 0h old", "lcm: refreshing every configured apt source (apt-get update)",
		"bookworm-security InRelease", "lcm: package lists refreshed in "} {
		if !strings.Contains(out, want) {
			t.Fatalf("refresh job output lacks %q:\n%s", want, out)
		}
	}
	inventory := securityNames(d.Inventory)
	host := securityPending(t, ex, true)
	if r.Message != "inventory refreshed" || len(inventory) == 0 || !slices.Equal(inventory, host) {
		t.Fatalf("inventory security updates %v, the host reports %v (result %+v)\n%s", inventory, host, r, out)
	}

	// (2) A broken source beside the working ones: the refresh fails on
	// it alone, the job fails with apt's message, nothing is upgraded.
	onHost(t, ex, makeListsStale+"\necho 'deb "+brokenSource+" bookworm main' > /etc/apt/sources.list.d/lcm-test-broken.list", time.Minute)
	versions := onHost(t, ex, "dpkg-query -W "+strings.Join(pending, " "), time.Minute)
	_, _, out, err = aptJob(t, ex, domain.JobUpgradeSecurity)
	var failed *Failed
	if !errors.As(err, &failed) || !strings.Contains(failed.Reason, "package lists could not be refreshed (apt exited with code 100)") ||
		!strings.Contains(failed.Reason, "E: Failed to fetch "+brokenSource+"/dists/bookworm/InRelease") ||
		strings.Contains(failed.Reason, "bookworm-security InRelease") {
		t.Fatalf("upgrade-security with a broken source: err %v\n%s", err, out)
	}
	if strings.Contains(out, "no security updates") || strings.Contains(out, "lcm: security updates:") {
		t.Fatalf("the upgrade went on after the failed refresh:\n%s", out)
	}
	if now := onHost(t, ex, "dpkg-query -W "+strings.Join(pending, " "), time.Minute); now != versions {
		t.Fatalf("packages changed after a failed refresh:\nbefore %s\nafter %s", versions, now)
	}
	if v := probeVersion(t, ex); v != aptrepo.StaleProbeRelease {
		t.Fatalf("%s %s installed after a failed refresh", aptrepo.StaleProbe, v)
	}
	t.Logf("failed refresh: %s", failed.Reason)

	// (3) Stale lists again, the source repaired: the security upgrade
	// refreshes, upgrades, and the host itself then finds nothing left.
	onHost(t, ex, "rm -f /etc/apt/sources.list.d/lcm-test-broken.list\n"+makeListsStale, time.Minute)
	r, d, out, err = aptJob(t, ex, domain.JobUpgradeSecurity)
	if err != nil {
		t.Fatalf("upgrade-security: %v\n%s", err, out)
	}
	for _, want := range []string{"lcm: package lists are 10d 0h old", "lcm: refreshing every configured apt source (apt-get update)",
		"lcm: package lists refreshed in ", "lcm: security updates: "} {
		if !strings.Contains(out, want) {
			t.Fatalf("upgrade-security output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "no security updates") {
		t.Fatalf("upgrade-security found nothing on stale lists:\n%s", out)
	}
	if left := securityNames(d.Inventory); len(left) != 0 || r.Message != "security updates installed" {
		t.Fatalf("after upgrade-security the inventory lists %v (result %+v)", left, r)
	}
	if left := securityPending(t, ex, true); len(left) != 0 {
		t.Fatalf("after upgrade-security the host's own apt-get update + simulation still shows security updates: %v\n%s", left, out)
	}
	if v := probeVersion(t, ex); v != aptrepo.StaleProbeSecurity {
		t.Fatalf("after upgrade-security %s %s is installed, want %s\n%s", aptrepo.StaleProbe, v, aptrepo.StaleProbeSecurity, out)
	}
	var said []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "lcm: ") {
			said = append(said, l)
		}
	}
	t.Logf("upgrade-security on stale lists:\n%s", strings.Join(said, "\n"))
}

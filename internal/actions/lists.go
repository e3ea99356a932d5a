package actions

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/pkgmgr"
	"github.com/lcmproject/lcm/internal/remote"
)

// List refresh deadlines: a refresh downloads every repository's index
// (tens of MB for Debian main on a first run, seconds to minutes); apt
// waits up to 120 s for the lock and retries a dead mirror for a while.
const (
	listsTimeout = 20 * time.Minute
	listsIdle    = 5 * time.Minute
)

// installs reports whether an action decides what to install from the
// package lists: those run with fresh lists only.
func (a PkgAction) installs() bool {
	return a == PkgUpgradeAll || a == PkgUpgradeSecurity || a == PkgUpdate
}

// RefreshWhat names what a manager's list refresh covers, as the job
// output says it (the demo simulator prints the same words).
func RefreshWhat(m pkgmgr.Manager) string { return refreshWhat(m) }

// RefreshesLists reports whether a job refreshes the package lists before
// it decides anything: the refresh job, the security upgrade and the
// package actions refresh-lists, upgrade-all and update. pacman's
// upgrade-all refreshes inside its -Syu instead (PacmanSyu).
func RefreshesLists(kind domain.JobKind, action PkgAction) bool {
	return kind == domain.JobRefresh || kind == domain.JobUpgradeSecurity ||
		kind == domain.JobPackageAction && (action == PkgRefreshLists || action.installs())
}

// PacmanSyu is what a pacman upgrade-all prints instead of a separate
// list refresh.
const PacmanSyu = "lcm: pacman -Syu refreshes the system's sync databases together with the upgrade"

// refreshWhat names what a manager's list refresh covers, for the output.
func refreshWhat(m pkgmgr.Manager) string {
	switch m.Name() {
	case "apt":
		return "every configured apt source (apt-get update)"
	case "dnf":
		return "every enabled repository (dnf makecache --refresh)"
	case "yum":
		return "every enabled repository (yum clean expire-cache, yum makecache)"
	case "zypper":
		return "every enabled repository (zypper refresh)"
	case "apk":
		return "every configured repository (apk update)"
	case "pacman":
		return "LCM's private copy of the sync databases (pacman -Sy --dbpath …; the system's databases are synced only together with an upgrade, -Syu)"
	}
	return m.Name() + " package lists"
}

// reportListsAge prints how old the package lists are. It never fails the
// job: an unreadable age is reported as unknown.
func reportListsAge(ctx context.Context, ex remote.Executor, out io.Writer, m pkgmgr.Manager) {
	raw, code, err := capture(ctx, ex, io.Discard, remote.Command{Cmd: m.ListsAge(), Timeout: shortTimeout})
	var a pkgmgr.ListsAge
	if err == nil && code != 0 {
		err = fmt.Errorf("exit code %d", code)
	}
	if err == nil {
		a, err = pkgmgr.ParseListsAge([]byte(raw))
	}
	fmt.Fprintln(out, "lcm: "+describeListsAge(a, err))
}

// DescribeListsAge renders a lists age (or the error reading it) as the
// job output says it.
func DescribeListsAge(a pkgmgr.ListsAge, err error) string { return describeListsAge(a, err) }

// describeListsAge renders a lists age for the job output.
func describeListsAge(a pkgmgr.ListsAge, err error) string {
	switch {
	case err != nil:
		return fmt.Sprintf("package lists age unknown (%v)", err)
	case a.Files == 0:
		return "no package lists on the server yet"
	case a.Files == 1:
		return fmt.Sprintf("package lists are %s old (index file from %s)", pkgmgr.HumanAge(a.Age()), a.Newest.Format("2006-01-02 15:04 UTC"))
	}
	return fmt.Sprintf("package lists are %s old (newest of %d index files from %s, oldest %s old)",
		pkgmgr.HumanAge(a.Age()), a.Files, a.Newest.Format("2006-01-02 15:04 UTC"), pkgmgr.HumanAge(a.Now.Sub(a.Oldest)))
}

// RefreshLists reports how old the package lists are, then brings them up
// to date. A refresh that fails (mirror down, no network, a broken source)
// is an error carrying the package manager's own message: an action must
// never decide what to install from lists it could not refresh.
func RefreshLists(ctx context.Context, ex remote.Executor, out io.Writer, m pkgmgr.Manager) (int, error) {
	reportListsAge(ctx, ex, out, m)
	fmt.Fprintf(out, "lcm: refreshing %s\n", refreshWhat(m))
	stdout, stderr := &tailBuffer{max: 16 << 10}, &tailBuffer{max: 16 << 10}
	start := time.Now()
	code, err := run(ctx, ex, out, remote.Command{Cmd: m.RefreshLists(), Timeout: listsTimeout, IdleTimeout: listsIdle,
		Stdout: io.MultiWriter(out, stdout), Stderr: io.MultiWriter(out, stderr)})
	if err != nil {
		return code, err
	}
	if code != 0 {
		return code, failf("package lists could not be refreshed (%s exited with code %d): %s",
			m.Name(), code, managerMessage(stderr.String(), stdout.String()))
	}
	fmt.Fprintf(out, "lcm: package lists refreshed in %s\n", time.Since(start).Round(100*time.Millisecond))
	return 0, nil
}

// prepareLists runs before an action that decides what to install. pacman
// refreshes inside the upgrade itself (-Syu: a sync without the upgrade is
// a partial upgrade), so there only the age is reported.
func prepareLists(ctx context.Context, ex remote.Executor, out io.Writer, m pkgmgr.Manager, action PkgAction) (int, error) {
	if m.Family() == pkgmgr.FamilyPacman && action == PkgUpgradeAll {
		reportListsAge(ctx, ex, out, m)
		fmt.Fprintln(out, PacmanSyu)
		return 0, nil
	}
	return RefreshLists(ctx, ex, out, m)
}

// managerMessage picks the package manager's error from a failed
// refresh: the error and warning lines of stderr (apt's "E:"/"W:", dnf's
// "Error:", zypper's "Problem …", pacman's "error:", apk's "ERROR:"/
// "WARNING:"), else the last lines of stderr, else of stdout.
func managerMessage(stderr, stdout string) string {
	var picked []string
	for _, l := range strings.Split(stderr, "\n") {
		t := strings.TrimSpace(l)
		lt := strings.ToLower(t)
		for _, p := range []string{"e:", "w:", "err:", "error", "warning", "problem", "failed", "some of the repositories", "could not", "cannot"} {
			if strings.HasPrefix(lt, p) {
				picked = append(picked, t)
				break
			}
		}
	}
	if len(picked) == 0 {
		picked = lastLines(stderr, 5)
	}
	if len(picked) == 0 {
		picked = lastLines(stdout, 5)
	}
	if len(picked) == 0 {
		return "no output"
	}
	msg := strings.Join(picked, "; ")
	if len(msg) > 2000 {
		msg = msg[:2000] + " …"
	}
	return msg
}

// lastLines returns the last n non-blank lines of s, trimmed.
func lastLines(s string, n int) []string {
	var ls []string
	for _, l := range strings.Split(s, "\n") {
		if t := strings.TrimSpace(l); t != "" {
			ls = append(ls, t)
		}
	}
	return ls[max(0, len(ls)-n):]
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.b) }

package fleetsim

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Request is one command as a responder sees it.
type Request struct {
	Instance *Instance
	Config   *Config
	Cmd      string   // with sudo, env assignments, sh -c and LCM's wrapper stripped
	Args     []string // strings.Fields(Cmd)
	Argv     []string // a `sh -c` script's positional arguments ($0, $1, …)
	User     string   // the SSH login user
	Sudo     bool
	Stdin    io.Reader
	Stdout   io.Writer
	Stderr   io.Writer
	Rand     *rand.Rand
}

// Responder answers one command and returns its exit code. It must return
// promptly once ctx is done (the client aborted).
type Responder func(ctx context.Context, r *Request) int

// Table maps command shapes to responders. Later registrations win, so a
// feature can register answers for its own commands (the facts script,
// package lists) over the defaults. Pinned registrations (Pin) are tried
// before all others. Safe for concurrent use.
type Table struct {
	mu       sync.RWMutex
	pinned   []tableEntry
	entries  []tableEntry
	fallback Responder
}

type tableEntry struct {
	match  func(cmd string) bool
	r      Responder
	byName bool // registered by Handle: a simple command, never a whole list
}

// Handle registers r for commands whose first word is name, or that start
// with name when name contains a space ("apt-get upgrade").
func (t *Table) Handle(name string, r Responder) {
	t.add(tableEntry{match: func(cmd string) bool {
		if strings.Contains(name, " ") {
			return strings.HasPrefix(cmd, name)
		}
		first, _, _ := strings.Cut(cmd, " ")
		return first == name
	}, r: r, byName: true})
}

// HandleFunc registers r for commands match accepts. Such a matcher sees
// the whole normalised command line first, before it is split into a list
// of simple commands, so it can recognise a script by its structure.
func (t *Table) HandleFunc(match func(cmd string) bool, r Responder) {
	t.add(tableEntry{match: match, r: r})
}

func (t *Table) add(e tableEntry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.entries = append(t.entries, e)
}

// lookupScript returns the latest pinned responder matching the whole
// line, else the latest HandleFunc responder.
func (t *Table) lookupScript(cmd string) (Responder, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	for j := len(t.pinned) - 1; j >= 0; j-- {
		if t.pinned[j].match(cmd) {
			return t.pinned[j].r, true
		}
	}
	for j := len(t.entries) - 1; j >= 0; j-- {
		if e := t.entries[j]; !e.byName && e.match(cmd) {
			return e.r, true
		}
	}
	return nil, false
}

// Pin registers r for commands match accepts ahead of every HandleFunc
// registration: the default table pins the package-list age and refresh
// that precede every upgrade, so a test's catch-all for "apt-get" keeps
// answering only the upgrade it simulates. A later Pin wins over an
// earlier one (a test failing the list refresh pins its own answer).
func (t *Table) Pin(match func(cmd string) bool, r Responder) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pinned = append(t.pinned, tableEntry{match: match, r: r})
}

// Lookup returns the responder for cmd: the latest matching pinned
// registration, else the latest matching registration, else the fallback.
func (t *Table) Lookup(cmd string) Responder {
	t.mu.RLock()
	defer t.mu.RUnlock()
	for j := len(t.pinned) - 1; j >= 0; j-- {
		if t.pinned[j].match(cmd) {
			return t.pinned[j].r
		}
	}
	for j := len(t.entries) - 1; j >= 0; j-- {
		if t.entries[j].match(cmd) {
			return t.entries[j].r
		}
	}
	if t.fallback != nil {
		return t.fallback
	}
	return respondEcho
}

// DefaultTable answers the commands LCM sends to a Debian 12 host.
func DefaultTable() *Table {
	t := &Table{fallback: respondEcho}
	// Generic first: later, more specific registrations win.
	t.Handle("cat", respondCat)
	t.Handle("true", simple(func(*Request) (string, int) { return "", 0 }))
	t.Handle("false", simple(func(*Request) (string, int) { return "", 1 }))
	t.Handle("hostname", simple(func(r *Request) (string, int) { return r.Instance.Hostname + "\n", 0 }))
	t.Handle("uname", simple(respondUname))
	t.Handle("cat /etc/os-release", simple(func(*Request) (string, int) { return osRelease, 0 }))
	t.Handle("cat /etc/debian_version", simple(func(*Request) (string, int) { return "12.9\n", 0 }))
	t.Handle("id", simple(respondID))
	t.Handle("dpkg-query", simple(respondDpkgQuery))
	t.Handle("sleep", respondSleep)
	for _, name := range []string{"apt-get", "apt", "unattended-upgrade"} {
		t.Handle(name, respondApt)
	}
	// The package lists: two days old (two index files, the oldest nine
	// days), refreshed with a Hit line per suite.
	t.Pin(IsListsAge, simple(func(r *Request) (string, int) {
		now := time.Now().Unix()
		return fmt.Sprintf("%d\n%d\n%d\n", now, now-2*86400, now-9*86400), 0
	}))
	t.Pin(IsListRefresh, simple(func(r *Request) (string, int) {
		return "Hit:1 http://deb.debian.org/debian bookworm InRelease\nHit:2 http://deb.debian.org/debian-security bookworm-security InRelease\nReading package lists...\n", 0
	}))
	// The container collector (which the refresh job runs): a simulated
	// host has neither docker nor podman, so it prints nothing.
	t.HandleFunc(IsContainerCollect, simple(func(*Request) (string, int) { return "", 0 }))
	return t
}

// containerMarker is the section header of LCM's container collector
// (containers.Script; repeated here so the simulator stays free of LCM's
// packages). No other command LCM sends contains it.
const containerMarker = "@@lcm %s %s %s"

// IsContainerCollect reports whether cmd is LCM's container collector.
func IsContainerCollect(cmd string) bool { return strings.Contains(cmd, containerMarker) }

// IsListsAge reports whether cmd is LCM's package-lists age probe
// (pkgmgr's ListsAge).
func IsListsAge(cmd string) bool { return strings.HasPrefix(cmd, "date +%s; stat -c %Y") }

// IsListRefresh reports whether cmd is apt's list refresh (pkgmgr's
// APT.RefreshLists: "env … apt-get … update").
func IsListRefresh(cmd string) bool {
	return strings.Contains(cmd, "apt-get") && strings.HasSuffix(cmd, " update")
}

// simple adapts an instant answer: it waits Config.Latency, then writes.
func simple(answer func(*Request) (string, int)) Responder {
	return func(ctx context.Context, r *Request) int {
		if !sleepCtx(ctx, r.Config.Latency) {
			return 137
		}
		out, code := answer(r)
		_, _ = io.WriteString(r.Stdout, out)
		return code
	}
}

func respondEcho(ctx context.Context, r *Request) int {
	if !sleepCtx(ctx, r.Config.Latency) {
		return 137
	}
	if len(r.Args) > 0 && r.Args[0] == "echo" {
		_, _ = io.WriteString(r.Stdout, strings.Join(splitWords(strings.TrimPrefix(r.Cmd, "echo")), " ")+"\n")
		return 0
	}
	_, _ = io.WriteString(r.Stdout, r.Cmd+"\n")
	return 0
}

// respondSleep sleeps its argument (not Config.Latency), like sleep(1).
func respondSleep(ctx context.Context, r *Request) int {
	d := time.Duration(0)
	if len(r.Args) > 1 {
		if s, err := strconv.ParseFloat(strings.TrimSuffix(r.Args[1], "s"), 64); err == nil {
			d = time.Duration(s * float64(time.Second))
		}
	}
	if !sleepCtx(ctx, d) {
		return 137
	}
	return 0
}

func respondUname(r *Request) (string, int) {
	const release, machine = "6.1.0-31-amd64", "x86_64"
	flags := strings.Join(r.Args[1:], "")
	switch {
	case strings.Contains(flags, "a"):
		return fmt.Sprintf("Linux %s %s #1 SMP PREEMPT_DYNAMIC Debian 6.1.128-1 (2025-02-07) %s GNU/Linux\n", r.Instance.Hostname, release, machine), 0
	case strings.Contains(flags, "r"):
		return release + "\n", 0
	case strings.Contains(flags, "m"):
		return machine + "\n", 0
	case strings.Contains(flags, "n"):
		return r.Instance.Hostname + "\n", 0
	default:
		return "Linux\n", 0
	}
}

const osRelease = `PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"
NAME="Debian GNU/Linux"
VERSION_ID="12"
VERSION="12 (bookworm)"
VERSION_CODENAME=bookworm
ID=debian
HOME_URL="https://www.debian.org/"
SUPPORT_URL="https://www.debian.org/support"
BUG_REPORT_URL="https://bugs.debian.org/"
`

func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

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
	Cmd      string   // with sudo, LC_ALL=C and LCM's wrapper stripped
	Args     []string // strings.Fields(Cmd)
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
// package lists) over the defaults. Safe for concurrent use.
type Table struct {
	mu       sync.RWMutex
	entries  []tableEntry
	fallback Responder
}

type tableEntry struct {
	match func(cmd string) bool
	r     Responder
}

// Handle registers r for commands whose first word is name, or that start
// with name when name contains a space ("apt-get upgrade").
func (t *Table) Handle(name string, r Responder) {
	t.HandleFunc(func(cmd string) bool {
		if strings.Contains(name, " ") {
			return strings.HasPrefix(cmd, name)
		}
		first, _, _ := strings.Cut(cmd, " ")
		return first == name
	}, r)
}

// HandleFunc registers r for commands match accepts.
func (t *Table) HandleFunc(match func(cmd string) bool, r Responder) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.entries = append(t.entries, tableEntry{match: match, r: r})
}

// Lookup returns the responder for cmd: the latest matching registration,
// else the fallback.
func (t *Table) Lookup(cmd string) Responder {
	t.mu.RLock()
	defer t.mu.RUnlock()
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
	t.Handle("cat", func(ctx context.Context, r *Request) int {
		if len(r.Args) > 1 {
			return respondEcho(ctx, r)
		}
		_, _ = io.Copy(r.Stdout, r.Stdin)
		return 0
	})
	t.Handle("true", simple(func(*Request) (string, int) { return "", 0 }))
	t.Handle("false", simple(func(*Request) (string, int) { return "", 1 }))
	t.Handle("hostname", simple(func(r *Request) (string, int) { return r.Instance.Hostname + "\n", 0 }))
	t.Handle("uname", simple(respondUname))
	t.Handle("cat /etc/os-release", simple(func(*Request) (string, int) { return osRelease, 0 }))
	t.Handle("cat /etc/debian_version", simple(func(*Request) (string, int) { return "12.9\n", 0 }))
	t.Handle("id", simple(func(r *Request) (string, int) {
		if r.Sudo {
			return "uid=0(root) gid=0(root) groups=0(root)\n", 0
		}
		return "uid=1000(lcm) gid=1000(lcm) groups=1000(lcm),27(sudo)\n", 0
	}))
	t.Handle("dpkg-query", simple(respondDpkgQuery))
	t.Handle("sleep", respondSleep)
	for _, name := range []string{"apt-get", "apt", "unattended-upgrade"} {
		t.Handle(name, respondApt)
	}
	return t
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

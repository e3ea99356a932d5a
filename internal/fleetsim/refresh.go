package fleetsim

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	"strings"
	"sync"
)

// debian12Facts is a recorded facts.Script() output of a Debian 12
// container (a copy of internal/facts/testdata/debian12_container.txt);
// its "name=vm" hostname line is replaced by the instance's hostname.
//
//go:embed data/debian12_facts.txt
var debian12Facts string

// factsMarker is a line only the facts collector contains (its section
// header printer), so the match survives LCM's wrapping and quoting.
const factsMarker = "==lcm:section"

// RefreshOptions shape the answers to a refresh job's package listing.
type RefreshOptions struct {
	// Upgradable is how many of the installed packages apt-get -s lists as
	// upgradable (default 40); the first Security of them come from the
	// security archive (default 12).
	Upgradable int
	Security   int
}

// HandleRefresh registers on t what LCM's refresh job runs on an APT host:
// the facts collector (recorded Debian 12 output), dpkg-query with any
// -f format (Config.Packages packages, rendered once per format and
// cached), and `apt-get -s … upgrade|dist-upgrade` (Inst/Conf lines); the
// default table answers the package lists' age and refresh. The
// answers are instant apart from Config.Latency.
func HandleRefresh(t *Table, o RefreshOptions) {
	if o.Upgradable <= 0 {
		o.Upgradable = 40
	}
	if o.Security < 0 || o.Security > o.Upgradable {
		o.Security = 0
	} else if o.Security == 0 {
		o.Security = min(12, o.Upgradable)
	}
	var cache sync.Map // key → rendered output
	cached := func(key string, render func() string) string {
		if v, ok := cache.Load(key); ok {
			return v.(string)
		}
		v, _ := cache.LoadOrStore(key, render())
		return v.(string)
	}
	t.Handle("dpkg-query", func(ctx context.Context, r *Request) int {
		if !sleepCtx(ctx, r.Config.Latency) {
			return 137
		}
		format := dpkgFormat(r.Cmd)
		n, up := r.Config.Packages, r.Instance.Upgraded()
		_, _ = io.WriteString(r.Stdout, cached(fmt.Sprintf("dpkg/%d/%d/%s", n, up, format), func() string { return renderDpkg(format, n, up) }))
		return 0
	})
	// No package is held on a simulated server.
	t.HandleFunc(func(cmd string) bool { return strings.Contains(cmd, "apt-mark showhold") }, func(ctx context.Context, r *Request) int { return 0 })
	t.HandleFunc(func(cmd string) bool {
		return strings.HasPrefix(cmd, "apt-get -s") || strings.HasPrefix(cmd, "apt-get --simulate")
	}, func(ctx context.Context, r *Request) int {
		if !sleepCtx(ctx, r.Config.Latency) {
			return 137
		}
		n, up := min(o.Upgradable, r.Config.Packages), r.Instance.Upgraded()
		_, _ = io.WriteString(r.Stdout, cached(fmt.Sprintf("sim/%d/%d", n, up), func() string { return renderAptSimulate(n, o.Security, up) }))
		return 0
	})
	t.HandleFunc(func(cmd string) bool { return strings.Contains(cmd, factsMarker) }, simple(func(r *Request) (string, int) {
		return strings.Replace(debian12Facts, "\nname=vm\n", "\nname="+r.Instance.Hostname+"\n", 1), 0
	}))
}

// dpkgFormat extracts dpkg-query's -f/--showformat argument (default:
// dpkg-query -W's "name\tversion").
func dpkgFormat(cmd string) string {
	format := "${Package}\t${Version}\n"
	words := splitWords(cmd)
	for j, a := range words {
		switch {
		case (a == "-f" || a == "--showformat") && j+1 < len(words):
			format = words[j+1]
		case strings.HasPrefix(a, "-f="):
			format = strings.TrimPrefix(a, "-f=")
		case strings.HasPrefix(a, "--showformat="):
			format = strings.TrimPrefix(a, "--showformat=")
		}
	}
	return strings.NewReplacer(`\t`, "\t", `\n`, "\n").Replace(format)
}

// renderDpkg lists n packages in format; the first upgraded of them at
// their upgraded version.
func renderDpkg(format string, n, upgraded int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		p := packageAt(i)
		if i < upgraded {
			p.version += ".1"
		}
		b.WriteString(strings.NewReplacer(
			"${Package}", p.name, "${binary:Package}", p.name+":"+p.arch, "${Version}", p.version,
			"${Architecture}", p.arch, "${Status}", "install ok installed",
			"${db:Status-Abbrev}", "ii ", "${Source}", p.source, "${source:Package}", p.source,
			"${source:Version}", p.version, "${Installed-Size}", fmt.Sprint(100+i%900),
		).Replace(format))
	}
	return b.String()
}

// renderAptSimulate prints `apt-get -s dist-upgrade` output upgrading the
// first n installed packages, the first sec of them from bookworm-security,
// except the first done of them, which are upgraded already.
func renderAptSimulate(n, sec, done int) string {
	var b strings.Builder
	b.WriteString("Reading package lists...\nBuilding dependency tree...\nReading state information...\nCalculating upgrade...\n")
	if done >= n {
		b.WriteString("0 upgraded, 0 newly installed, 0 to remove and 0 not upgraded.\n")
		return b.String()
	}
	b.WriteString("The following packages will be upgraded:\n")
	for i := done; i < n; i++ {
		b.WriteString("  " + packageAt(i).name + "\n")
	}
	fmt.Fprintf(&b, "%d upgraded, 0 newly installed, 0 to remove and 0 not upgraded.\n", n-done)
	origin := func(i int) string {
		if i < sec {
			return "Debian:12.12/stable, Debian-Security:12/stable-security [amd64]"
		}
		return "Debian:12.12/stable [amd64]"
	}
	for i := done; i < n; i++ {
		p := packageAt(i)
		fmt.Fprintf(&b, "Inst %s [%s] (%s %s)\n", p.name, p.version, p.version+".1", origin(i))
	}
	for i := done; i < n; i++ {
		p := packageAt(i)
		fmt.Fprintf(&b, "Conf %s (%s %s)\n", p.name, p.version+".1", origin(i))
	}
	return b.String()
}

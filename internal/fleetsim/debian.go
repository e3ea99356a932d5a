package fleetsim

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// package names the simulated hosts have installed (cycled and numbered
// past the list's end).
var basePackages = []string{
	"adduser", "apt", "base-files", "base-passwd", "bash", "bsdutils", "ca-certificates",
	"coreutils", "curl", "dash", "debconf", "debian-archive-keyring", "diffutils", "dpkg",
	"e2fsprogs", "findutils", "gcc-12-base", "gpgv", "grep", "gzip", "hostname", "init-system-helpers",
	"libc-bin", "libc6", "libcurl4", "libssl3", "libsystemd0", "libudev1", "login", "mount",
	"ncurses-base", "openssh-client", "openssh-server", "openssl", "passwd", "perl-base",
	"procps", "sed", "sudo", "systemd", "systemd-sysv", "sysvinit-utils", "tar", "tzdata",
	"util-linux", "zlib1g",
}

type pkg struct{ name, version, arch, source string }

func packageAt(i int) pkg {
	name := basePackages[i%len(basePackages)]
	if i >= len(basePackages) {
		name = fmt.Sprintf("%s-extra%d", name, i/len(basePackages))
	}
	return pkg{name: name, version: fmt.Sprintf("1.%d.%d-1+deb12u1", i%7, i%13), arch: "amd64", source: name}
}

// respondDpkgQuery lists Config.Packages packages. A -f/--showformat
// format string is rendered (${Package}, ${Version}, ${Architecture},
// ${Status}, ${db:Status-Abbrev}, ${Source}, ${Installed-Size}, \t, \n);
// otherwise it prints `dpkg-query -W` style "name\tversion" lines.
func respondDpkgQuery(r *Request) (string, int) {
	format := "${Package}\t${Version}\n"
	words := splitWords(r.Cmd)
	for j, a := range words {
		switch {
		case (a == "-f" || a == "--showformat") && j+1 < len(words):
			format = words[j+1]
		case strings.HasPrefix(a, "--showformat="):
			format = strings.TrimPrefix(a, "--showformat=")
		}
	}
	format = strings.NewReplacer(`\t`, "\t", `\n`, "\n").Replace(format)
	var b strings.Builder
	for i := 0; i < r.Config.Packages; i++ {
		p := packageAt(i)
		b.WriteString(strings.NewReplacer(
			"${Package}", p.name, "${binary:Package}", p.name+":"+p.arch, "${Version}", p.version,
			"${Architecture}", p.arch, "${Status}", "install ok installed",
			"${db:Status-Abbrev}", "ii ", "${Source}", p.source, "${Installed-Size}", fmt.Sprint(100+i%900),
		).Replace(format))
	}
	return b.String(), 0
}

// respondApt streams apt-get style console output (Get:/Unpacking/Setting
// up lines, Config.OutputBytes in total) spread over Config.Latency in ten
// chunks; with probability Config.FailRate it fails like apt with exit 100.
func respondApt(ctx context.Context, r *Request) int {
	lines := aptLines(r.Config.OutputBytes)
	const chunks = 10
	step := r.Config.Latency / chunks
	per := (len(lines) + chunks - 1) / chunks
	fail := r.Config.FailRate > 0 && r.Rand.Float64() < r.Config.FailRate
	for c := 0; c < chunks; c++ {
		if !sleepCtx(ctx, step) {
			return 137
		}
		lo, hi := min(c*per, len(lines)), min((c+1)*per, len(lines))
		if fail && c == chunks/2 {
			_, _ = io.WriteString(r.Stdout, strings.Join(lines[lo:hi], ""))
			_, _ = io.WriteString(r.Stderr, "E: Failed to fetch http://deb.debian.org/debian-security/pool/updates/main/o/openssl/libssl3_3.0.15-1~deb12u1_amd64.deb  Connection failed [IP: 151.101.2.132 80]\n"+
				"E: Unable to fetch some archives, maybe run apt-get update or try with --fix-missing?\n")
			return 100
		}
		_, _ = io.WriteString(r.Stdout, strings.Join(lines[lo:hi], ""))
	}
	return 0
}

// aptLines builds about n bytes of apt-get upgrade output.
func aptLines(n int) []string {
	head := []string{
		"Reading package lists...\n", "Building dependency tree...\n", "Reading state information...\n",
		"Calculating upgrade...\n",
	}
	var lines []string
	size := 0
	for _, l := range head {
		lines = append(lines, l)
		size += len(l)
	}
	for i := 0; size < n; i++ {
		p := packageAt(i)
		for _, l := range []string{
			fmt.Sprintf("Get:%d http://deb.debian.org/debian-security bookworm-security/main amd64 %s amd64 %s [%d kB]\n", i+1, p.name, p.version, 50+i%900),
			fmt.Sprintf("Preparing to unpack .../%s_%s_amd64.deb ...\n", p.name, p.version),
			fmt.Sprintf("Unpacking %s:amd64 (%s) over (%s) ...\n", p.name, p.version, strings.Replace(p.version, "deb12u1", "deb12u0", 1)),
			fmt.Sprintf("Setting up %s:amd64 (%s) ...\n", p.name, p.version),
		} {
			lines = append(lines, l)
			size += len(l)
		}
	}
	return lines
}

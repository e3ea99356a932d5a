package demo

import (
	"github.com/lcmproject/lcm/internal/pkgmgr"
	"github.com/lcmproject/lcm/internal/store"
)

// Spec is one demo server.
type Spec struct {
	Name, Host                                      string
	Family                                          pkgmgr.Family
	OSID, OSName, Pretty, Version, Codename, Kernel string
	IDLike                                          []string
	CPUs, MemGiB, DiskGiB                           int
	// UsedStart and UsedEnd are the used share of "/" 60 days ago and now.
	UsedStart, UsedEnd float64
	Reboot             bool
	Packages           []string // name=version
	Outdated           []pkgmgr.Upgradable
	Findings           []store.Finding
}

func specByName(name string) (Spec, bool) {
	for _, s := range Servers() {
		if s.Name == name {
			return s, true
		}
	}
	return Spec{Name: name, Pretty: "demo"}, false
}

var debianBase = []string{"base-files=12.4+deb12u6", "bash=5.2.15-2+b7", "coreutils=9.1-1", "systemd=252.30-1~deb12u2",
	"openssh-server=1:9.2p1-2+deb12u3", "openssl=3.0.14-1~deb12u2", "libc6=2.36-9+deb12u8", "sudo=1.9.13p3-1+deb12u1",
	"curl=7.88.1-10+deb12u7", "ca-certificates=20230311", "apt=2.6.1", "rsyslog=8.2302.0-1", "vim-tiny=2:9.0.1378-2",
	"unattended-upgrades=2.9.1+nmu3", "linux-image-6.1.0-25-amd64=6.1.106-3"}

var ubuntuBase = []string{"base-files=13ubuntu10.1", "bash=5.2.21-2ubuntu4", "coreutils=9.4-3ubuntu6", "systemd=255.4-1ubuntu8.4",
	"openssh-server=1:9.6p1-3ubuntu13.5", "openssl=3.0.13-0ubuntu3.4", "libc6=2.39-0ubuntu8.3", "sudo=1.9.15p5-3ubuntu5",
	"curl=8.5.0-2ubuntu10.4", "ca-certificates=20240203", "apt=2.7.14build2", "snapd=2.63+24.04", "vim=2:9.1.0016-1ubuntu7.2",
	"linux-image-6.8.0-45-generic=6.8.0-45.45"}

var rockyBase = []string{"bash=5.1.8-9.el9", "coreutils=8.32-35.el9", "systemd=252-32.el9_4.7", "openssh-server=8.7p1-38.el9_4.4",
	"openssl=1:3.0.7-27.el9", "glibc=2.34-100.el9_4.4", "sudo=1.9.5p2-10.el9_3", "curl=7.76.1-29.el9_4.1", "dnf=4.14.0-9.el9",
	"postfix=2:3.5.9-24.el9", "dovecot=1:2.3.16-11.el9", "kernel=5.14.0-427.37.1.el9_4"}

var suseBase = []string{"bash=4.4-150400.27.3.2", "coreutils=8.32-150400.9.6.1", "systemd=254.19-150600.4.9.1",
	"openssh-server=9.6p1-150600.6.12.1", "openssl-3=3.1.4-150600.5.15.1", "glibc=2.38-150600.14.8.2", "sudo=1.9.15p5-150600.3.3.2",
	"curl=8.6.0-150600.4.6.1", "zypper=1.14.77-150600.10.3.1", "samba=4.19.8+git.364-150600.3.3.1", "kernel-default=6.4.0-150600.23.22.1"}

var alpineBase = []string{"alpine-base=3.20.3-r0", "busybox=1.36.1-r29", "musl=1.2.5-r0", "openssh-server=9.7_p1-r4",
	"openssl=3.3.2-r0", "curl=8.10.1-r0", "apk-tools=2.14.4-r0", "haproxy=2.8.10-r0", "linux-virt=6.6.54-r0"}

var archBase = []string{"base=3-2", "bash=5.2.037-1", "coreutils=9.5-1", "systemd=256.7-1", "openssh=9.9p1-1", "openssl=3.4.0-1",
	"glibc=2.40+r16+gaa533d58ff-2", "sudo=1.9.16-1", "curl=8.10.1-1", "go=2:1.23.2-1", "git=2.47.0-1", "linux=6.11.5.arch1-1"}

// Servers are the demo servers: Debian, Ubuntu, Rocky, openSUSE, Alpine
// and Arch, a few with outdated and security packages, one disk trending
// to full, one critical (red) and one high (yellow) CVE finding.
func Servers() []Spec {
	deb := func(name, host string, extra ...string) Spec {
		return Spec{Name: name, Host: host, Family: pkgmgr.FamilyAPT, OSID: "debian", OSName: "Debian GNU/Linux",
			Pretty: "Debian GNU/Linux 12 (bookworm)", Version: "12", Codename: "bookworm", Kernel: "6.1.0-25-amd64",
			CPUs: 4, MemGiB: 8, DiskGiB: 80, UsedStart: 0.41, UsedEnd: 0.44, Packages: append(append([]string{}, debianBase...), extra...)}
	}
	ubu := func(name, host string, extra ...string) Spec {
		return Spec{Name: name, Host: host, Family: pkgmgr.FamilyAPT, OSID: "ubuntu", IDLike: []string{"debian"}, OSName: "Ubuntu",
			Pretty: "Ubuntu 24.04.1 LTS", Version: "24.04", Codename: "noble", Kernel: "6.8.0-45-generic",
			CPUs: 8, MemGiB: 16, DiskGiB: 160, UsedStart: 0.30, UsedEnd: 0.33, Packages: append(append([]string{}, ubuntuBase...), extra...)}
	}
	web := deb("web-01", "192.0.2.11", "nginx=1.22.1-9", "php8.2-fpm=8.2.20-1~deb12u1", "certbot=2.1.0-4")
	web.Outdated = []pkgmgr.Upgradable{
		{Name: "openssl", Current: "3.0.14-1~deb12u2", Candidate: "3.0.15-1~deb12u1", Arch: "amd64", Security: true},
		{Name: "nginx", Current: "1.22.1-9", Candidate: "1.22.1-9+deb12u1", Arch: "amd64", Security: true},
		{Name: "base-files", Current: "12.4+deb12u6", Candidate: "12.4+deb12u7", Arch: "amd64"}}
	web.Findings = []store.Finding{{CVE: "CVE-2024-5535", Package: "openssl", Version: "3.0.14-1~deb12u2", FixedIn: "3.0.15-1~deb12u1", Severity: "medium"}}
	db := deb("db-01", "192.0.2.12", "postgresql-15=15.8-0+deb12u1", "pgbackrest=2.53-1")
	db.DiskGiB, db.UsedStart, db.UsedEnd, db.MemGiB = 200, 0.68, 0.93, 32 // trending to full
	app := ubu("app-01", "192.0.2.21", "docker-ce=5:27.3.1-1~ubuntu.24.04~noble", "containerd.io=1.7.22-1")
	app.Outdated = []pkgmgr.Upgradable{
		{Name: "libc6", Current: "2.39-0ubuntu8.3", Candidate: "2.39-0ubuntu8.4", Arch: "amd64", Security: true},
		{Name: "snapd", Current: "2.63+24.04", Candidate: "2.65.3+24.04", Arch: "amd64"}}
	app.Findings = []store.Finding{{CVE: "CVE-2024-6387", Package: "openssh-server", Version: "1:9.6p1-3ubuntu13.5",
		FixedIn: "1:9.6p1-3ubuntu13.6", Severity: "critical"}}
	app.Reboot = true
	ci := ubu("ci-runner", "192.0.2.22", "gitlab-runner=17.4.0-1", "git=1:2.43.0-1ubuntu7.1")
	rocky := Spec{Name: "mail-01", Host: "192.0.2.31", Family: pkgmgr.FamilyDNF, OSID: "rocky", IDLike: []string{"rhel", "centos", "fedora"},
		OSName: "Rocky Linux", Pretty: "Rocky Linux 9.4 (Blue Onyx)", Version: "9.4", Kernel: "5.14.0-427.37.1.el9_4.x86_64",
		CPUs: 2, MemGiB: 4, DiskGiB: 60, UsedStart: 0.52, UsedEnd: 0.55, Packages: rockyBase,
		Outdated: []pkgmgr.Upgradable{{Name: "postfix", Current: "2:3.5.9-24.el9", Candidate: "2:3.5.25-1.el9", Arch: "x86_64", Security: true}},
		Findings: []store.Finding{{CVE: "CVE-2023-51764", Package: "postfix", Version: "2:3.5.9-24.el9", FixedIn: "2:3.5.25-1.el9", Severity: "high"}}}
	suse := Spec{Name: "files-01", Host: "192.0.2.41", Family: pkgmgr.FamilyZypper, OSID: "opensuse-leap", IDLike: []string{"suse", "opensuse"},
		OSName: "openSUSE Leap", Pretty: "openSUSE Leap 15.6", Version: "15.6", Kernel: "6.4.0-150600.23.22-default",
		CPUs: 4, MemGiB: 8, DiskGiB: 500, UsedStart: 0.60, UsedEnd: 0.63, Packages: suseBase,
		Outdated: []pkgmgr.Upgradable{{Name: "curl", Current: "8.6.0-150600.4.6.1", Candidate: "8.6.0-150600.4.9.1", Arch: "x86_64"}}}
	alp := Spec{Name: "edge-proxy", Host: "192.0.2.51", Family: pkgmgr.FamilyAPK, OSID: "alpine", OSName: "Alpine Linux",
		Pretty: "Alpine Linux v3.20", Version: "3.20.3", Kernel: "6.6.54-0-virt", CPUs: 2, MemGiB: 1, DiskGiB: 8,
		UsedStart: 0.22, UsedEnd: 0.24, Packages: alpineBase}
	arch := Spec{Name: "dev-box", Host: "192.0.2.61", Family: pkgmgr.FamilyPacman, OSID: "arch", OSName: "Arch Linux",
		Pretty: "Arch Linux", Kernel: "6.11.5-arch1-1", CPUs: 16, MemGiB: 64, DiskGiB: 1000, UsedStart: 0.35, UsedEnd: 0.39,
		Packages: archBase, Outdated: []pkgmgr.Upgradable{{Name: "linux", Current: "6.11.5.arch1-1", Candidate: "6.11.6.arch1-1"},
			{Name: "go", Current: "2:1.23.2-1", Candidate: "2:1.23.3-1"}}}
	return []Spec{web, db, app, ci, rocky, suse, alp, arch}
}

package facts

import (
	"strings"

	"github.com/lcmproject/lcm/internal/pkgmgr"
)

// Reboot reasons.
const (
	ReasonFile          = "reboot-required-file"   // Debian/Ubuntu /var/run/reboot-required
	ReasonNeedsRestart  = "needs-restarting"       // RHEL family needs-restarting -r
	ReasonNewerKernel   = "newer-kernel"           // a newer kernel is installed than the one running
	ReasonKernelRemoved = "running-kernel-removed" // Arch: upgrade removed the running kernel's modules
)

// reboot decides, most specific probe first: the Debian flag file, then the
// exit code of needs-restarting -r (0 = no, 1 = yes), then the generic kernel
// comparison. Containers skip the kernel comparison: their kernel is the
// host's, and restarting the container would not change it.
func (p *parser) reboot(v Virtualization) Reboot {
	m := p.kvAll("reboot")
	first := func(k string) string {
		if vs := m[k]; len(vs) > 0 {
			return vs[0]
		}
		return ""
	}
	r := Reboot{Packages: m["reboot_pkg"]}
	if first("reboot_required_file") == "1" {
		r.Required, r.Reason = true, ReasonFile
		return r
	}
	switch rc := first("needs_restarting_rc"); rc {
	case "1":
		r.Required, r.Reason = true, ReasonNeedsRestart
		return r
	case "0":
		r.Reason = ReasonNeedsRestart
		return r
	case "":
	default:
		p.warn("needs-restarting -r exited %s; using kernel comparison", rc)
	}
	running := first("running")
	if running == "" || v.Role == RoleContainer {
		return r
	}
	var kernels []string
	kernels = append(kernels, m["modules"]...)
	for _, b := range m["boot"] {
		k := strings.TrimPrefix(strings.TrimPrefix(b, "vmlinuz-"), "vmlinux-")
		if k != "" && k[0] >= '0' && k[0] <= '9' {
			kernels = append(kernels, k)
		}
	}
	if len(kernels) == 0 {
		return r
	}
	newest, hasRunning := "", false
	for _, k := range kernels {
		if k == running {
			hasRunning = true
		}
		if newest == "" || pkgmgr.CompareRPM(k, newest) > 0 {
			newest = k
		}
	}
	r.NewestKernel = newest
	switch {
	case len(m["modules"]) > 0 && !contains(m["modules"], running):
		r.Required, r.Reason = true, ReasonKernelRemoved
	case !hasRunning && len(m["modules"]) == 0:
		// Only /boot names, none matching: cannot tell (e.g. vmlinuz-linux).
	case pkgmgr.CompareRPM(newest, running) > 0:
		r.Required, r.Reason = true, ReasonNewerKernel
	}
	return r
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// managerOrder is the preference when os-release does not settle it: dnf
// before yum because dnf hosts often keep a yum compatibility shim.
var managerOrder = []string{"apt-get", "dnf", "yum", "zypper", "pacman", "apk"}

// packageManager picks the manager of the OS family when it is present,
// otherwise the first one found.
func (p *parser) packageManager(o OSRelease) string {
	found := map[string]bool{}
	for _, v := range p.kvAll("pkgmgr")["found"] {
		found[v] = true
	}
	name := func(cmd string) string {
		if cmd == "apt-get" {
			return "apt"
		}
		return cmd
	}
	if fam, err := pkgmgr.FamilyFromOSRelease(o.ID, o.IDLike); err == nil {
		switch fam {
		case pkgmgr.FamilyAPT:
			if found["apt-get"] {
				return "apt"
			}
		case pkgmgr.FamilyDNF:
			if found["dnf"] {
				return "dnf"
			}
			if found["yum"] {
				return "yum"
			}
		default:
			if found[string(fam)] {
				return string(fam)
			}
		}
	}
	for _, c := range managerOrder {
		if found[c] {
			return name(c)
		}
	}
	return ""
}

package facts

import "strings"

// Virtualization roles.
const (
	RoleContainer = "container"
	RoleVM        = "vm"
	RolePhysical  = "physical"
	RoleUnknown   = "unknown"
)

// dmiVMs maps DMI product or vendor substrings (lower case) to the
// systemd-detect-virt name of the hypervisor, for hosts without systemd.
var dmiVMs = []struct{ substr, typ string }{
	{"kvm", "kvm"},
	{"qemu", "qemu"},
	{"vmware", "vmware"},
	{"virtualbox", "oracle"},
	{"virtual machine", "microsoft"}, // Hyper-V: "Virtual Machine" by Microsoft
	{"hvm domu", "xen"},
	{"xen", "xen"},
	{"google compute engine", "google"},
	{"amazon ec2", "amazon"},
	{"openstack", "kvm"},
	{"bochs", "bochs"},
	{"parallels", "parallels"},
}

// virt decides the role with the most reliable probe first:
// systemd-detect-virt, then container markers, then DMI and the CPU
// hypervisor flag.
func (p *parser) virt() Virtualization {
	m := p.kv("virt")
	if c := m["detect_container"]; c != "" && c != "none" {
		return Virtualization{Role: RoleContainer, Type: c, Source: "systemd-detect-virt"}
	}
	if v := m["detect_virt"]; v != "" {
		if v == "none" {
			return Virtualization{Role: RolePhysical, Source: "systemd-detect-virt"}
		}
		return Virtualization{Role: RoleVM, Type: v, Source: "systemd-detect-virt"}
	}
	switch {
	case m["container"] != "":
		return Virtualization{Role: RoleContainer, Type: m["container"], Source: "pid1-environ"}
	case m["containerenv"] == "1":
		return Virtualization{Role: RoleContainer, Type: "podman", Source: "/run/.containerenv"}
	case m["dockerenv"] == "1":
		return Virtualization{Role: RoleContainer, Type: "docker", Source: "/.dockerenv"}
	case m["openvz"] == "1":
		return Virtualization{Role: RoleContainer, Type: "openvz", Source: "/proc/vz"}
	case m["cgroup"] != "":
		cg := strings.ToLower(m["cgroup"])
		typ := "container-other"
		for _, t := range []string{"docker", "lxc", "libpod", "kubepods", "containerd"} {
			if strings.Contains(cg, t) {
				typ = t
				break
			}
		}
		if typ == "libpod" {
			typ = "podman"
		}
		return Virtualization{Role: RoleContainer, Type: typ, Source: "pid1-cgroup"}
	}
	dmi := strings.ToLower(m["dmi_product"] + " " + m["dmi_vendor"])
	for _, d := range dmiVMs {
		if strings.Contains(dmi, d.substr) {
			return Virtualization{Role: RoleVM, Type: d.typ, Source: "dmi"}
		}
	}
	if m["cpu_hypervisor"] == "1" {
		return Virtualization{Role: RoleVM, Source: "cpuinfo-hypervisor-flag"}
	}
	if strings.TrimSpace(dmi) != "" {
		return Virtualization{Role: RolePhysical, Source: "dmi"}
	}
	return Virtualization{Role: RoleUnknown}
}

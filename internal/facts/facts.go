// Package facts collects what the refresh job knows about a server: OS and
// version, kernel, virtualization, hostname, uptime, CPU, memory, disks,
// mounts, IP addresses, reboot-required state and the package manager.
//
// Collection is one POSIX shell script (Script) run in a single SSH session;
// it prints sectioned output that Parse turns into Facts. Parse is pure and
// forgiving: missing or garbled sections yield partial Facts and Warnings,
// never a panic, so one odd host never fails a fleet-wide refresh.
package facts

import _ "embed"

//go:embed collect.sh
var script string

// Script returns the collector shell script. It is read-only, needs no root
// and runs under any POSIX sh (dash, bash, busybox ash).
func Script() string { return script }

// Facts is everything the collector reports about one server. Sizes are in
// bytes and durations in seconds, always.
type Facts struct {
	OS             OSRelease      `json:"os"`
	Kernel         string         `json:"kernel"`   // uname -r
	Arch           string         `json:"arch"`     // uname -m
	Hostname       string         `json:"hostname"` // short host name
	UptimeSeconds  int64          `json:"uptime_seconds"`
	Virtualization Virtualization `json:"virtualization"`
	CPU            CPU            `json:"cpu"`
	Memory         Memory         `json:"memory"`
	Filesystems    []Filesystem   `json:"filesystems"` // from df, pseudo filesystems dropped
	Mounts         []Mount        `json:"mounts"`      // from /proc/mounts, pseudo filesystems dropped
	Addresses      []Address      `json:"addresses"`
	Reboot         Reboot         `json:"reboot"`
	// PackageManager is the preferred manager found on the host
	// ("apt", "dnf", "yum", "zypper", "pacman", "apk") or "" when none.
	PackageManager string `json:"package_manager"`
	// Warnings lists what could not be collected or parsed.
	Warnings []string `json:"warnings,omitempty"`
}

// OSRelease holds the /etc/os-release fields LCM uses.
type OSRelease struct {
	ID         string   `json:"id"`      // e.g. "debian", "rhel", "opensuse-leap"
	IDLike     []string `json:"id_like"` // e.g. ["rhel", "fedora"]
	Name       string   `json:"name"`
	PrettyName string   `json:"pretty_name"`
	VersionID  string   `json:"version_id"` // e.g. "12", "9.4"; empty on rolling releases
	Codename   string   `json:"codename"`   // VERSION_CODENAME, e.g. "bookworm"
}

// Virtualization describes where the server runs.
type Virtualization struct {
	// Role is "container", "vm", "physical" or "unknown".
	Role string `json:"role"`
	// Type names the technology (systemd-detect-virt vocabulary:
	// "kvm", "vmware", "docker", "podman", "lxc", …) or "" if unknown.
	Type string `json:"type"`
	// Source tells which probe decided, for operators debugging odd hosts.
	Source string `json:"source"`
}

// CPU summarises /proc/cpuinfo.
type CPU struct {
	Model   string `json:"model"`
	Sockets int    `json:"sockets"` // distinct physical ids (1 when unreported)
	Cores   int    `json:"cores"`   // physical cores over all sockets
	Threads int    `json:"threads"` // logical CPUs
}

// Memory summarises /proc/meminfo, in bytes.
type Memory struct {
	TotalBytes     uint64 `json:"total_bytes"`
	AvailableBytes uint64 `json:"available_bytes"`
	SwapTotalBytes uint64 `json:"swap_total_bytes"`
	SwapFreeBytes  uint64 `json:"swap_free_bytes"`
}

// Filesystem is one line of df, in bytes.
type Filesystem struct {
	Device     string `json:"device"`
	Type       string `json:"type"` // from df -T or /proc/mounts
	MountPoint string `json:"mount_point"`
	SizeBytes  uint64 `json:"size_bytes"`
	UsedBytes  uint64 `json:"used_bytes"`
	AvailBytes uint64 `json:"avail_bytes"`
	Network    bool   `json:"network"` // NFS, CIFS, Ceph, GlusterFS, …
}

// Mount is one entry of /proc/mounts.
type Mount struct {
	Device     string   `json:"device"`
	MountPoint string   `json:"mount_point"`
	Type       string   `json:"type"`
	Options    []string `json:"options"`
	ReadOnly   bool     `json:"read_only"`
	Network    bool     `json:"network"`
}

// Address is one IP address assigned to an interface.
type Address struct {
	Interface string `json:"interface"` // "" when the fallback cannot tell
	Family    string `json:"family"`    // "inet" or "inet6"
	Address   string `json:"address"`
	PrefixLen int    `json:"prefix_len"` // -1 when unknown
	Scope     string `json:"scope"`      // "global", "link", "host" or ""
}

// Reboot tells whether the server needs a reboot and why.
type Reboot struct {
	Required bool `json:"required"`
	// Reason is the probe that decided: "reboot-required-file",
	// "needs-restarting", "newer-kernel", "running-kernel-removed" or "".
	Reason string `json:"reason"`
	// Packages lists /var/run/reboot-required.pkgs on Debian/Ubuntu.
	Packages []string `json:"packages,omitempty"`
	// NewestKernel is the newest installed kernel seen by the generic probe.
	NewestKernel string `json:"newest_kernel,omitempty"`
}

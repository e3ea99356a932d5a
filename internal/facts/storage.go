package facts

import (
	"strconv"
	"strings"
)

// pseudoFS are kernel and virtual filesystems that hold no operator data;
// reporting them would bury real disks in noise.
var pseudoFS = map[string]bool{
	"proc": true, "sysfs": true, "devtmpfs": true, "devpts": true, "tmpfs": true,
	"cgroup": true, "cgroup2": true, "securityfs": true, "debugfs": true,
	"tracefs": true, "pstore": true, "bpf": true, "mqueue": true, "hugetlbfs": true,
	"configfs": true, "fusectl": true, "binfmt_misc": true, "autofs": true,
	"rpc_pipefs": true, "efivarfs": true, "selinuxfs": true, "nsfs": true,
	"ramfs": true, "squashfs": true, "overlay": true, "shm": true, "nfsd": true,
}

// networkFS are filesystems served over the network: a hung server makes
// them block, and their size is not this host's disk.
var networkFS = map[string]bool{
	"nfs": true, "nfs4": true, "cifs": true, "smb3": true, "smbfs": true,
	"ceph": true, "fuse.ceph": true, "glusterfs": true, "fuse.glusterfs": true,
	"fuse.sshfs": true, "afs": true, "lustre": true, "gpfs": true,
	"beegfs": true, "9p": true, "fuse.s3fs": true, "davfs": true, "fuse.rclone": true,
}

// isNetwork reports a network filesystem by type, or by a device that looks
// like "host:/export" or "//server/share" when the type is unknown.
func isNetwork(typ, dev string) bool {
	if networkFS[typ] {
		return true
	}
	return strings.HasPrefix(dev, "//") || (strings.Contains(dev, ":/") && !strings.HasPrefix(dev, "/"))
}

// keepFS drops pseudo filesystems, except an overlay root (a container's /).
func keepFS(typ, mp string) bool {
	return !pseudoFS[typ] || (typ == "overlay" && mp == "/")
}

// unescapeMount decodes the octal escapes /proc/mounts uses for space, tab,
// newline and backslash in paths.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func (p *parser) mounts() []Mount {
	var out []Mount
	seen := map[string]bool{}
	for _, l := range p.lines("mounts") {
		f := strings.Fields(l)
		if len(f) < 4 {
			continue
		}
		dev, mp, typ := unescapeMount(f[0]), unescapeMount(f[1]), f[2]
		if !keepFS(typ, mp) || seen[dev+"\x00"+mp] {
			continue
		}
		seen[dev+"\x00"+mp] = true
		opts := strings.Split(f[3], ",")
		ro := false
		for _, o := range opts {
			if o == "ro" {
				ro = true
			}
		}
		out = append(out, Mount{Device: dev, MountPoint: mp, Type: typ, Options: opts,
			ReadOnly: ro, Network: isNetwork(typ, dev)})
	}
	return out
}

// df parses "df -P -k -T" or, without a Type column, "df -P -k" taking the
// type from /proc/mounts.
func (p *parser) df(mounts []Mount) []Filesystem {
	lines := p.lines("df")
	if len(lines) == 0 {
		return nil
	}
	typed := strings.Contains(lines[0], "Type")
	typeOf := map[string]string{}
	for _, m := range mounts {
		typeOf[m.MountPoint] = m.Type
	}
	want := 6
	if typed {
		want = 7
	}
	var out []Filesystem
	seen := map[string]bool{}
	for i, l := range lines {
		f := strings.Fields(l)
		if i == 0 && len(f) > 0 && f[0] == "Filesystem" {
			continue
		}
		if len(f) < want {
			if strings.TrimSpace(l) != "" {
				p.warn("df line %d unreadable", i+1)
			}
			continue
		}
		fs := Filesystem{Device: f[0]}
		nums := f[1:4]
		if typed {
			fs.Type, nums = f[1], f[2:5]
		}
		// The mount point is everything after the capacity column; it may
		// contain spaces.
		fs.MountPoint = strings.Join(f[want-1:], " ")
		if !typed {
			fs.Type = typeOf[fs.MountPoint]
		}
		var vals [3]uint64
		ok := true
		for j, s := range nums {
			n, err := strconv.ParseUint(s, 10, 64)
			if err != nil || n > 1<<53 {
				ok = false
				break
			}
			vals[j] = n * 1024
		}
		if !ok {
			p.warn("df line %d: bad numbers", i+1)
			continue
		}
		fs.SizeBytes, fs.UsedBytes, fs.AvailBytes = vals[0], vals[1], vals[2]
		if !keepFS(fs.Type, fs.MountPoint) || seen[fs.MountPoint] {
			continue
		}
		seen[fs.MountPoint] = true
		fs.Network = isNetwork(fs.Type, fs.Device)
		out = append(out, fs)
	}
	return out
}

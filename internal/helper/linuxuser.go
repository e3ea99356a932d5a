package helper

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"
)

// Linux-user provisioning in restricted mode: "linux-user
// apply|disable|enable|remove <username>" reads a LinuxUserInput as JSON on
// stdin (at most MaxInput bytes, unknown fields refused) and does what the
// full-mode provisioning script of internal/actions does. Everything that
// reaches a command line or a file is checked here, whatever LCM sent.

// Key block markers in authorized_keys (internal/actions uses the same):
// LCM rewrites what is between them and keeps every other line.
const (
	KeysBegin = "# >>> LCM managed keys: this block is rewritten by LCM >>>"
	KeysEnd   = "# <<< LCM managed keys <<<"
)

// LinuxUserOps are linux-user's operations.
var LinuxUserOps = map[string]bool{"apply": true, "disable": true, "enable": true, "remove": true}

// LinuxUserInput is one operation's data. The password hash travels here
// (stdin), never on a command line.
type LinuxUserInput struct {
	FullName   string   `json:"full_name,omitempty"`
	Shell      string   `json:"shell,omitempty"`
	FileAccess bool     `json:"file_access,omitempty"`
	SFTPChroot bool     `json:"sftp_chroot,omitempty"`
	Keys       []string `json:"keys,omitempty"`
	// PasswordHash is a "$y$" or "$6$" crypt hash; "" means no password
	// ("*": key logins only, not locked).
	PasswordHash string `json:"password_hash,omitempty"`
	// Group carries the profile's rights: lcm-prof-<slug> (created when
	// missing) or an administrator group of AdminGroups (must exist).
	Group string `json:"group,omitempty"`
	// ManagedGroups are the groups LCM may have put the user in; the user
	// leaves those that are not Group.
	ManagedGroups []string       `json:"managed_groups,omitempty"`
	ACLs          []LinuxUserACL `json:"acls,omitempty"`
	RemoveHome    bool           `json:"remove_home,omitempty"`
}

// LinuxUserACL is a directory ACL for a profile group (setfacl -R, with the
// same default ACL).
type LinuxUserACL struct {
	Group string `json:"group"`
	Path  string `json:"path"`
	Perms string `json:"perms"` // r, rw, rwx
}

// Bounds of the input: far above what a person has, low enough that a
// broken caller cannot make the helper do much.
const (
	maxKeys          = 100
	maxKeyLen        = 8 << 10
	maxManagedGroups = 256
	maxACLs          = 64
	maxFullName      = 128
)

// reservedUsers are system and distribution accounts the helper never
// creates, changes or removes (the control plane refuses the same names).
var reservedUsers = map[string]bool{
	"root": true, "daemon": true, "bin": true, "sys": true, "sync": true, "games": true, "man": true, "lp": true,
	"mail": true, "news": true, "uucp": true, "proxy": true, "www-data": true, "backup": true, "list": true, "irc": true,
	"gnats": true, "nobody": true, "nogroup": true, "messagebus": true, "sshd": true, "adm": true,
	"sudo": true, "wheel": true, "admin": true, "operator": true, "halt": true, "shutdown": true, "ftp": true,
	"postgres": true, "mysql": true, "nginx": true, "apache": true, "polkitd": true, "dbus": true, "tss": true,
	"chrony": true, "ntp": true, "postfix": true, "dnsmasq": true, "avahi": true, "rpc": true, "rpcuser": true,
	"nfsnobody": true, "docker": true, "ubuntu": true, "debian": true, "centos": true, "fedora": true,
	"ec2-user": true, "cloud-user": true, "vagrant": true, "git": true, "uuidd": true, "tcpdump": true,
	"landscape": true, "pollinate": true, "syslog": true, "usbmux": true, "lxd": true, "fwupd-refresh": true,
}

// reservedUserPrefixes: systemd's dynamic users, LCM's own accounts.
var reservedUserPrefixes = []string{"systemd-", "lcm", "_"}

// AdminGroups are the only existing groups besides lcm-prof-<slug> the
// helper adds a user to or removes a user from: the Full administrator
// profile is membership in the distribution's administrator group.
var AdminGroups = map[string]bool{"sudo": true, "wheel": true}

var (
	profGroupRe = regexp.MustCompile(`^lcm-prof-[a-z0-9]([a-z0-9-]{0,21}[a-z0-9])?$`)
	aclPathRe   = regexp.MustCompile(`^/[A-Za-z0-9@._+/-]*$`)
	sha512Re    = regexp.MustCompile(`^\$6\$(rounds=[1-9][0-9]{3,8}\$)?[./0-9A-Za-z]{1,16}\$[./0-9A-Za-z]{86}$`)
	yescryptRe  = regexp.MustCompile(`^\$y\$[./0-9A-Za-z]{1,32}\$[./0-9A-Za-z]{1,86}\$[./0-9A-Za-z]{43}$`)
	shellRe     = regexp.MustCompile(`^/[a-z0-9/_.-]+$`)
)

// keyTypes are the accepted public key types (the control plane's list).
var keyTypes = map[string]bool{
	"ssh-ed25519": true, "ssh-rsa": true,
	"ecdsa-sha2-nistp256": true, "ecdsa-sha2-nistp384": true, "ecdsa-sha2-nistp521": true,
	"sk-ssh-ed25519@openssh.com": true, "sk-ecdsa-sha2-nistp256@openssh.com": true,
}

// protectedACLRoots are directories (and everything below them) no
// profile ACL may touch: the system, the boot loader, root's home, the
// kernel's pseudo file systems, sudo's and sshd's configuration.
var protectedACLRoots = []string{"/bin", "/boot", "/dev", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/root",
	"/run", "/sbin", "/sys", "/usr/bin", "/usr/sbin", "/usr/lib", "/usr/libexec", "/etc/sudoers.d", "/etc/ssh",
	"/etc/pam.d", "/var/lib/dpkg", "/var/lib/rpm"}

// protectedACLExact are directories an ACL may not name themselves (a
// directory below them may be fine: /etc/nginx, /var/www, /srv/share).
var protectedACLExact = map[string]bool{"/": true, "/etc": true, "/usr": true, "/var": true, "/home": true, "/srv": true, "/opt": true, "/tmp": true}

// ValidLinuxUsername checks a person's account name: POSIX, not reserved.
func ValidLinuxUsername(u string) error {
	if !userRe.MatchString(u) {
		return refuse("user name %q: a lower-case letter, then lower-case letters, digits, _ or - (at most 32)", truncate(u, 40))
	}
	if reservedUsers[u] {
		return refuse("user name %q is a system account name", u)
	}
	for _, p := range reservedUserPrefixes {
		if strings.HasPrefix(u, p) {
			return refuse("user names starting with %q are reserved", p)
		}
	}
	return nil
}

// ParseLinuxUserInput decodes stdin strictly: one JSON object, no unknown
// field, nothing after it.
func ParseLinuxUserInput(raw []byte) (LinuxUserInput, error) {
	var in LinuxUserInput
	if len(raw) > MaxInput {
		return in, refuse("input longer than %d bytes", MaxInput)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return LinuxUserInput{}, refuse("linux-user input: %s", truncate(err.Error(), 120))
	}
	if dec.More() {
		return LinuxUserInput{}, refuse("linux-user input: one JSON object only")
	}
	return in, nil
}

// ParseShells reads /etc/shells: the absolute paths it lists.
func ParseShells(content string) map[string]bool {
	out := map[string]bool{}
	for _, l := range strings.Split(content, "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "/") {
			out[l] = true
		}
	}
	return out
}

// CheckLinuxUser validates an operation. shells is /etc/shells
// (ParseShells): a login shell must be listed there.
func CheckLinuxUser(op, username string, in LinuxUserInput, shells map[string]bool) error {
	if !LinuxUserOps[op] {
		return refuse("linux-user takes apply, disable, enable or remove, not %q", truncate(op, 20))
	}
	if err := ValidLinuxUsername(username); err != nil {
		return err
	}
	if err := CheckFullName(in.FullName); err != nil {
		return err
	}
	if in.Shell != "" && (!shellRe.MatchString(in.Shell) || path.Clean(in.Shell) != in.Shell || !shells[in.Shell]) {
		return refuse("shell %q is not listed in /etc/shells", truncate(in.Shell, 60))
	}
	if len(in.Keys) > maxKeys {
		return refuse("more than %d keys", maxKeys)
	}
	for i, k := range in.Keys {
		if err := CheckKeyLine(k); err != nil {
			return refuse("key %d: %s", i+1, err.(*UsageError).Reason)
		}
	}
	if in.PasswordHash != "" {
		if err := CheckPasswordHash(in.PasswordHash); err != nil {
			return err
		}
	}
	if in.Group != "" && !validLinuxUserGroup(in.Group) {
		return refuse("group %q: lcm-prof-<slug> or one of the administrator groups", truncate(in.Group, 40))
	}
	if len(in.ManagedGroups) > maxManagedGroups {
		return refuse("more than %d managed groups", maxManagedGroups)
	}
	for _, g := range in.ManagedGroups {
		if !validLinuxUserGroup(g) {
			return refuse("managed group %q: lcm-prof-<slug> or one of the administrator groups", truncate(g, 40))
		}
	}
	if len(in.ACLs) > maxACLs {
		return refuse("more than %d ACLs", maxACLs)
	}
	for _, a := range in.ACLs {
		if err := CheckACL(a); err != nil {
			return err
		}
	}
	return nil
}

func validLinuxUserGroup(g string) bool { return profGroupRe.MatchString(g) || AdminGroups[g] }

// CheckFullName: the GECOS field, without ':' (the passwd separator), ','
// (GECOS's own) or control characters.
func CheckFullName(s string) error {
	if len(s) > maxFullName || !utf8.ValidString(s) {
		return refuse("full name longer than %d bytes or not UTF-8", maxFullName)
	}
	for _, r := range s {
		if r == ':' || r == ',' || r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return refuse("full name: no ':', ',' or control characters")
		}
	}
	return nil
}

// CheckKeyLine accepts one authorized_keys line without options: a known
// type, its base64 blob (which names the same type) and an optional
// printable comment.
func CheckKeyLine(k string) error {
	if len(k) > maxKeyLen || !utf8.ValidString(k) {
		return refuse("key line too long or not UTF-8")
	}
	for _, r := range k {
		if r < 0x20 || r == 0x7f {
			return refuse("key line with a line break or control character")
		}
	}
	f := strings.Fields(k)
	if len(f) < 2 || !strings.HasPrefix(k, f[0]+" "+f[1]) {
		return refuse("key line: type, key and an optional comment")
	}
	if !keyTypes[f[0]] {
		return refuse("key type %q is not accepted (no options before the type)", truncate(f[0], 40))
	}
	blob, err := base64.StdEncoding.DecodeString(f[1])
	if err != nil || len(blob) < 4 {
		return refuse("key data is not base64")
	}
	n := binary.BigEndian.Uint32(blob)
	if uint64(n) > uint64(len(blob)-4) || string(blob[4:4+n]) != f[0] {
		return refuse("key data does not hold a %s key", f[0])
	}
	return nil
}

// CheckPasswordHash accepts a yescrypt ("$y$") or SHA-512 ("$6$") crypt
// hash, nothing else (no "!", "*" or empty password from the caller).
func CheckPasswordHash(h string) error {
	if !sha512Re.MatchString(h) && !yescryptRe.MatchString(h) {
		return refuse("the password hash is not a $y$ or $6$ crypt hash")
	}
	return nil
}

// CheckACL validates a profile ACL: a profile group, r/rw/rwx, a clean
// absolute directory outside the protected system directories.
func CheckACL(a LinuxUserACL) error {
	if !profGroupRe.MatchString(a.Group) {
		return refuse("ACL group %q is not a profile group", truncate(a.Group, 40))
	}
	if a.Perms != "r" && a.Perms != "rw" && a.Perms != "rwx" {
		return refuse("ACL perms %q: r, rw or rwx", truncate(a.Perms, 8))
	}
	p := a.Path
	if len(p) > 256 || !aclPathRe.MatchString(p) || path.Clean(p) != p || protectedACLExact[p] {
		return refuse("ACL path %q: a clean absolute directory, not a top-level system directory", truncate(p, 60))
	}
	for _, root := range protectedACLRoots {
		if p == root || strings.HasPrefix(p, root+"/") {
			return refuse("ACL path %q is below %s", truncate(p, 60), root)
		}
	}
	return nil
}

// ACLPerms maps a grant to setfacl's perms: directories stay traversable.
func ACLPerms(p string) string {
	switch p {
	case "r":
		return "r-X"
	case "rw":
		return "rwX"
	}
	return "rwx"
}

// SFTPDropIn is the sshd drop-in of a file-access-only account. "Match
// all" ends the block: sshd_config includes drop-ins at its top, and a
// Match left open would swallow the main configuration.
func SFTPDropIn(user string, chroot bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Managed by LCM: file access only for %s.\nMatch User %s\n", user, user)
	b.WriteString("\tForceCommand internal-sftp\n\tAllowTcpForwarding no\n\tX11Forwarding no\n\tPermitTTY no\n")
	if chroot {
		b.WriteString("\tChrootDirectory %h\n")
	}
	b.WriteString("Match all\n")
	return b.String()
}

// SFTPDropInPath is where SFTPDropIn goes.
func SFTPDropInPath(user string) string { return sshdDir + "/lcm-sftp-" + user + ".conf" }

// KeysFile returns authorized_keys with the managed block holding keys
// (sorted) and every line outside the block kept, as the full-mode script
// writes it: the person's lines first, then the block; "" when both are
// empty.
func KeysFile(existing string, keys []string) string {
	var own []string
	in := false
	for _, l := range strings.Split(existing, "\n") {
		switch {
		case l == KeysBegin:
			in = true
		case l == KeysEnd:
			in = false
		case !in:
			own = append(own, l)
		}
	}
	var b strings.Builder
	if o := strings.TrimRight(strings.Join(own, "\n"), "\n"); o != "" {
		b.WriteString(o + "\n")
	}
	if len(keys) > 0 {
		k := append([]string(nil), keys...)
		sort.Strings(k)
		b.WriteString(KeysBegin + "\n" + strings.Join(k, "\n") + "\n" + KeysEnd + "\n")
	}
	return b.String()
}

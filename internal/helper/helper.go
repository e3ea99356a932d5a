// Package helper is LCM's validating helper, the program that runs as root
// through sudo on a managed server in restricted sudo mode (cmd/helper is
// its thin main). It takes a closed set of subcommands with strictly
// validated arguments; anything else is refused with exit code 2 and a
// one-line reason. It imports only the standard library (and LCM's
// stdlib-only sshdcfg), so the binary is small and static.
//
// Threat model (docs/security.md): the helper limits what LCM's logic can
// make root do while the management user's sudo is restricted. It is not a
// defence against an attacker holding LCM's key for the server: the
// package managers the allowlist keeps can run arbitrary code as root.
package helper

import (
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
)

// Protocol is the helper's command protocol version: LCM compares it (and
// the binary's checksum) to decide whether to upgrade an installed helper.
//
// History: 1 sudo-mode, sshd-*, sudoers-profile; 2 (linux-user) adds
// linux-user, sudoers-profile leaves an unchanged file alone and accepts
// sudoedit and run-as rules as internal/privilege renders them; 3 adds
// linux-user-scan (the read-only account scan); 4 adds firewalld (start
// or stop the firewalld service: restricted mode allows firewall-cmd but
// not systemctl).
const Protocol = "4"

// Op is a subcommand.
type Op string

// The closed set of subcommands.
const (
	OpVersion       Op = "version"         // print "lcm-helper <version> protocol <n>"
	OpSudoMode      Op = "sudo-mode"       // full | restricted | confirm | status
	OpSSHDEffective Op = "sshd-effective"  // print sshd -T -C <spec>
	OpSSHDDropIn    Op = "sshd-dropin"     // write|remove <LCM drop-in name>; content on stdin
	OpSSHDReload    Op = "sshd-reload"     // make sshd re-read its configuration
	OpSSHDRead      Op = "sshd-read"       // print one of LCM's sshd files, or "absent"
	OpSSHDDump      Op = "sshd-dump"       // print sshd_config and the files it includes
	OpSudoersProf   Op = "sudoers-profile" // write|remove <slug>; content on stdin
	OpLinuxUser     Op = "linux-user"      // apply|disable|enable|remove <username>; JSON on stdin
	OpLinuxUserScan Op = "linux-user-scan" // print the account scan (read-only)
	OpFirewalld     Op = "firewalld"       // enable|disable: systemctl enable|disable --now firewalld
)

// Command is a parsed, validated invocation.
type Command struct {
	Op Op
	// Arg is the subcommand's single argument after validation: the sudo
	// mode, the connection spec, the drop-in or file name, the slug.
	Action string // write | remove (sshd-dropin, sudoers-profile)
	Arg    string
}

// UsageError is a refused invocation.
type UsageError struct{ Reason string }

func (e *UsageError) Error() string { return "lcm-helper: refused: " + e.Reason }

func refuse(format string, a ...any) error { return &UsageError{Reason: fmt.Sprintf(format, a...)} }

// DropIns are the sshd drop-ins the helper writes: LCM's own, nothing else.
var DropIns = map[string]bool{"10-lcm-ssh.conf": true, "60-lcm-hardening.conf": true}

// ReadableFiles are the files sshd-read prints.
var ReadableFiles = map[string]string{
	"sshd_config":           "/etc/ssh/sshd_config",
	"10-lcm-ssh.conf":       "/etc/ssh/sshd_config.d/10-lcm-ssh.conf",
	"60-lcm-hardening.conf": "/etc/ssh/sshd_config.d/60-lcm-hardening.conf",
}

var (
	slugRe = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)
	userRe = regexp.MustCompile(`^[a-z_][a-z0-9_-]{0,31}$`)
	hostRe = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]{0,252}[A-Za-z0-9])?$`)
)

// Parse validates args (without the program name). Every subcommand takes
// an exact number of arguments; options, paths chosen by the caller and
// free text are never accepted.
func Parse(args []string) (Command, error) {
	if len(args) == 0 {
		return Command{}, refuse("no subcommand (one of: version, sudo-mode, sshd-effective, sshd-dropin, sshd-reload, sshd-read, sshd-dump, sudoers-profile, linux-user, linux-user-scan, firewalld)")
	}
	for _, a := range args {
		if len(a) > 512 || strings.ContainsAny(a, "\x00\n\r") {
			return Command{}, refuse("argument too long or with control characters")
		}
	}
	op, rest := Op(args[0]), args[1:]
	want := func(n int) error {
		if len(rest) != n {
			return refuse("%s takes %d argument(s), got %d", op, n, len(rest))
		}
		return nil
	}
	switch op {
	case OpVersion, OpSSHDReload, OpSSHDDump, OpLinuxUserScan:
		if err := want(0); err != nil {
			return Command{}, err
		}
		return Command{Op: op}, nil
	case OpFirewalld:
		if err := want(1); err != nil {
			return Command{}, err
		}
		if rest[0] != "enable" && rest[0] != "disable" {
			return Command{}, refuse("firewalld takes enable or disable, not %q", truncate(rest[0], 40))
		}
		return Command{Op: op, Action: rest[0]}, nil
	case OpSudoMode:
		if err := want(1); err != nil {
			return Command{}, err
		}
		switch rest[0] {
		case "full", "restricted", "confirm", "status":
			return Command{Op: op, Arg: rest[0]}, nil
		}
		return Command{}, refuse("sudo-mode takes full, restricted, confirm or status, not %q", rest[0])
	case OpSSHDEffective:
		if err := want(1); err != nil {
			return Command{}, err
		}
		spec, err := ValidConnSpec(rest[0])
		if err != nil {
			return Command{}, err
		}
		return Command{Op: op, Arg: spec}, nil
	case OpSSHDDropIn, OpSudoersProf:
		if err := want(2); err != nil {
			return Command{}, err
		}
		if rest[0] != "write" && rest[0] != "remove" {
			return Command{}, refuse("%s takes write or remove, not %q", op, rest[0])
		}
		if op == OpSSHDDropIn && !DropIns[rest[1]] {
			return Command{}, refuse("%q is not one of LCM's sshd drop-ins", rest[1])
		}
		if op == OpSudoersProf && !slugRe.MatchString(rest[1]) {
			return Command{}, refuse("profile slug %q: lower-case letters, digits and dashes, at most 32", rest[1])
		}
		return Command{Op: op, Action: rest[0], Arg: rest[1]}, nil
	case OpLinuxUser:
		if err := want(2); err != nil {
			return Command{}, err
		}
		if !LinuxUserOps[rest[0]] {
			return Command{}, refuse("linux-user takes apply, disable, enable or remove, not %q", truncate(rest[0], 20))
		}
		if err := ValidLinuxUsername(rest[1]); err != nil {
			return Command{}, err
		}
		return Command{Op: op, Action: rest[0], Arg: rest[1]}, nil
	case OpSSHDRead:
		if err := want(1); err != nil {
			return Command{}, err
		}
		if _, ok := ReadableFiles[rest[0]]; !ok {
			return Command{}, refuse("%q is not a file sshd-read prints", rest[0])
		}
		return Command{Op: op, Arg: rest[0]}, nil
	}
	return Command{}, refuse("unknown subcommand %q", truncate(string(op), 40))
}

// ValidConnSpec checks an sshd -C connection spec: exactly the keys user,
// host, addr, laddr, lport, each once, with a valid user name, host name or
// address, addresses and a port.
func ValidConnSpec(spec string) (string, error) {
	seen := map[string]bool{}
	for _, kv := range strings.Split(spec, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || seen[k] {
			return "", refuse("connection spec %q: key=value pairs, each key once", truncate(spec, 80))
		}
		seen[k] = true
		var bad bool
		switch k {
		case "user":
			bad = !userRe.MatchString(v)
		case "host":
			_, err := netip.ParseAddr(v)
			bad = err != nil && !hostRe.MatchString(v)
		case "addr", "laddr":
			_, err := netip.ParseAddr(v)
			bad = err != nil
		case "lport":
			n, err := strconv.Atoi(v)
			bad = err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != v
		default:
			return "", refuse("connection spec: unknown key %q", truncate(k, 20))
		}
		if bad {
			return "", refuse("connection spec: bad %s %q", k, truncate(v, 60))
		}
	}
	for _, k := range []string{"user", "host", "addr", "laddr", "lport"} {
		if !seen[k] {
			return "", refuse("connection spec: %s missing", k)
		}
	}
	return spec, nil
}

// ValidUser reports whether u is a plain user name (the SUDO_USER the
// restricted sudoers rule is written for).
func ValidUser(u string) bool { return userRe.MatchString(u) }

// MaxInput bounds stdin content (a drop-in or a sudoers file).
const MaxInput = 64 << 10

// CheckDropIn validates drop-in content before sshd -t sees it: text,
// bounded, no Include or Match (a drop-in of LCM never pulls in other
// files or sets per-connection rules).
func CheckDropIn(content string) error {
	if err := checkText(content); err != nil {
		return err
	}
	for i, l := range strings.Split(content, "\n") {
		f := strings.Fields(strings.ReplaceAll(l, "=", " "))
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		switch strings.ToLower(f[0]) {
		case "include", "match":
			return refuse("drop-in line %d: %s is not allowed in LCM's drop-ins", i+1, f[0])
		}
	}
	return nil
}

// CheckProfileSudoers validates a sudoers file for profile slug (spec:
// each line issued to its own profile group, never ALL as command): every
// rule line is "%lcm-prof-<slug> ALL=(<user>) NOPASSWD: /abs/cmd args,…"
// (run as root or another named user, never ALL) or, as root,
// "… NOPASSWD: sudoedit /abs/file" — what internal/privilege renders;
// comments and blank lines pass. visudo checks the syntax afterwards.
func CheckProfileSudoers(slug, content string) error {
	if err := checkText(content); err != nil {
		return err
	}
	group := "%lcm-prof-" + slug
	rules := 0
	for i, l := range strings.Split(content, "\n") {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		rest, ok := strings.CutPrefix(t, group+" ")
		if !ok {
			return refuse("sudoers line %d is not issued to %s", i+1, group)
		}
		runAs, spec, ok := strings.Cut(strings.TrimSpace(rest), ") NOPASSWD: ")
		runAs, rok := strings.CutPrefix(runAs, "ALL=(")
		if !ok || !rok || !ValidUser(runAs) {
			return refuse(`sudoers line %d: expected "ALL=(<user>) NOPASSWD: " before the commands`, i+1)
		}
		for _, c := range strings.Split(spec, ",") {
			f := strings.Fields(c)
			// sudoedit takes exactly one absolute file (an edit rule).
			if len(f) > 0 && f[0] == "sudoedit" && runAs == "root" {
				if len(f) != 2 {
					return refuse("sudoers line %d: sudoedit takes one absolute file", i+1)
				}
				f = f[1:]
			}
			if len(f) == 0 || !strings.HasPrefix(f[0], "/") || strings.EqualFold(f[0], "ALL") {
				return refuse("sudoers line %d: every command must be an absolute path, never ALL", i+1)
			}
			for _, w := range f {
				// internal/privilege escapes ':' and '=' in arguments.
				w = strings.NewReplacer(`\:`, "", `\=`, "").Replace(w)
				if w == "ALL" || strings.ContainsAny(w, "*?[]\\;|&$`<>(){}!") {
					return refuse("sudoers line %d: %q: no ALL, wildcards or shell metacharacters", i+1, truncate(w, 40))
				}
			}
		}
		rules++
	}
	if rules == 0 {
		return errors.New("lcm-helper: refused: the sudoers file has no rule")
	}
	return nil
}

func checkText(s string) error {
	if len(s) > MaxInput {
		return refuse("input longer than %d bytes", MaxInput)
	}
	for _, r := range s {
		if r == 0 || r == '\uFFFD' || (r < 0x20 && r != '\n' && r != '\t') {
			return refuse("input is not plain text")
		}
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// Allowlist candidates: the tools restricted mode keeps, by name. The
// helper resolves each in sudo's secure_path order and keeps those that
// exist; the helper itself is always added.
var AllowlistTools = []string{
	"apt-get", "apt", "apt-mark", "dpkg", // Debian, Ubuntu
	"dnf", "yum", "rpm", // Fedora, RHEL
	"zypper",           // SUSE
	"pacman",           // Arch
	"apk",              // Alpine
	"docker", "podman", // containers
	"docker-compose", "podman-compose", // compose front ends without the docker/podman subcommand (Debian 12 ships these)
	"ufw", "firewall-cmd", "firewall-offline-cmd", "nft", // firewall (firewalld: offline-cmd changes a stopped firewalld)
}

// SecurePath is Debian's and most distributions' sudo secure_path: sudo
// resolves a command name in this order, so the allowlist holds the path
// sudo will match.
var SecurePath = []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}

// RestrictedSudoers is the management user's restricted rule: the given
// absolute paths (already resolved and existing), SETENV so LCM's
// DEBIAN_FRONTEND=noninteractive reaches apt.
func RestrictedSudoers(user string, paths []string) (string, error) {
	if !ValidUser(user) {
		return "", refuse("bad user name %q", truncate(user, 40))
	}
	if len(paths) == 0 {
		return "", refuse("empty allowlist")
	}
	for _, p := range paths {
		if !strings.HasPrefix(p, "/") || strings.ContainsAny(p, " \t,:=\\*?[]") {
			return "", refuse("allowlist path %q is not a plain absolute path", truncate(p, 60))
		}
	}
	var b strings.Builder
	b.WriteString("# Written by lcm-helper (restricted sudo mode). LCM rewrites this file:\n")
	b.WriteString("# switch modes through LCM. Only these programs, nothing else, as root.\n")
	fmt.Fprintf(&b, "%s ALL=(root) NOPASSWD:SETENV: %s\n", user, strings.Join(paths, ", "))
	return b.String(), nil
}

// FullSudoers is the management user's unrestricted rule (as join writes).
func FullSudoers(user string) string { return user + " ALL=(ALL:ALL) NOPASSWD: ALL\n" }

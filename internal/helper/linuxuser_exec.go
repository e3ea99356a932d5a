package helper

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Files linux-user reads (variables so the pure parts can be tested).
var (
	passwdFile   = "/etc/passwd"
	shadowFile   = "/etc/shadow"
	groupFile    = "/etc/group"
	shellsFile   = "/etc/shells"
	loginDefs    = "/etc/login.defs"
	nologinPaths = []string{"/usr/sbin/nologin", "/sbin/nologin"}
)

// account is one /etc/passwd entry.
type account struct {
	name, gecos, home, shell string
	uid, gid                 int
}

func lookupAccount(name string) (account, bool, error) {
	b, err := os.ReadFile(passwdFile)
	if err != nil {
		return account{}, false, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Split(l, ":")
		if len(f) != 7 || f[0] != name {
			continue
		}
		uid, err1 := strconv.Atoi(f[2])
		gid, err2 := strconv.Atoi(f[3])
		if err1 != nil || err2 != nil {
			return account{}, false, fmt.Errorf("%s: bad entry for %s", passwdFile, name)
		}
		return account{name: f[0], uid: uid, gid: gid, gecos: f[4], home: f[5], shell: f[6]}, true, nil
	}
	return account{}, false, nil
}

// shadowFields returns the password (field 2) and expiry (field 8) of name.
func shadowFields(name string) (pw, expire string, err error) {
	b, err := os.ReadFile(shadowFile)
	if err != nil {
		return "", "", err
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Split(l, ":")
		if len(f) >= 8 && f[0] == name {
			return f[1], f[7], nil
		}
	}
	return "", "", fmt.Errorf("%s has no entry in %s", name, shadowFile)
}

// groupMembers returns whether group g exists and its member list.
func groupMembers(g string) (bool, []string, error) {
	b, err := os.ReadFile(groupFile)
	if err != nil {
		return false, nil, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Split(l, ":")
		if len(f) == 4 && f[0] == g {
			if f[3] == "" {
				return true, nil, nil
			}
			return true, strings.Split(f[3], ","), nil
		}
	}
	return false, nil, nil
}

// uidMin is login.defs' UID_MIN (1000 when unset): accounts below it are
// system accounts the helper never touches.
func uidMin() int {
	b, err := os.ReadFile(loginDefs)
	if err != nil {
		return 1000
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) == 2 && f[0] == "UID_MIN" {
			if n, err := strconv.Atoi(f[1]); err == nil && n > 0 {
				return n
			}
		}
	}
	return 1000
}

// linuxUser runs one linux-user operation.
func linuxUser(op, username string, stdin io.Reader, stdout, stderr io.Writer) error {
	raw, err := readInput(stdin)
	if err != nil {
		return err
	}
	in, err := ParseLinuxUserInput([]byte(raw))
	if err != nil {
		return err
	}
	shells, _ := os.ReadFile(shellsFile)
	if err := CheckLinuxUser(op, username, in, ParseShells(string(shells))); err != nil {
		return err
	}
	if username == os.Getenv("SUDO_USER") {
		return refuse("linux-user never changes the management user %q", username)
	}
	acct, exists, err := lookupAccount(username)
	if err != nil {
		return err
	}
	if exists && (acct.uid < uidMin() || acct.uid >= 65534) {
		return refuse("%s is a system account (UID %d): the helper does not touch it", username, acct.uid)
	}
	if !exists {
		acct.name = username
	}
	say := func(format string, a ...any) { fmt.Fprintf(stdout, "lcm: "+format+"\n", a...) }
	switch op {
	case "remove":
		return removeUser(acct, exists, in.RemoveHome, say, stdout, stderr)
	case "disable":
		if !exists {
			return fmt.Errorf("no account %s", username)
		}
		if err := runTool(stdout, stderr, nil, "usermod", "-L", "-e", "1", username); err != nil {
			return err
		}
		if err := writeKeys(acct, nil, say); err != nil {
			return err
		}
		_ = runTool(io.Discard, io.Discard, nil, "pkill", "-KILL", "-u", username)
		say("account %s disabled (locked, expired, keys out of the block)", username)
		return nil
	}
	return applyUser(username, acct, exists, in, say, stdout, stderr)
}

func applyUser(username string, acct account, exists bool, in LinuxUserInput, say func(string, ...any), stdout, stderr io.Writer) error {
	shell := in.Shell
	if shell == "" {
		shell = "/bin/bash"
	}
	if in.FileAccess {
		shell = ""
		for _, p := range nologinPaths {
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
				shell = p
				break
			}
		}
		if shell == "" {
			return errors.New("no nologin shell on this server")
		}
	}
	if exists {
		if acct.shell != shell || acct.gecos != in.FullName {
			if err := runTool(stdout, stderr, nil, "usermod", "-s", shell, "-c", in.FullName, username); err != nil {
				return err
			}
			say("account %s updated", username)
		} else {
			say("account %s unchanged", username)
		}
	} else {
		if err := runTool(stdout, stderr, nil, "useradd", "-m", "-s", shell, "-c", in.FullName, username); err != nil {
			return err
		}
		say("account %s created", username)
	}
	acct, ok, err := lookupAccount(username)
	if err != nil || !ok {
		return fmt.Errorf("the account %s is not there after useradd (%v)", username, err)
	}

	// Password: the crypt hash through chpasswd's stdin (never argv), or
	// '*' (no password, not locked: sshd refuses '!' for key logins).
	want := in.PasswordHash
	if want == "" {
		want = "*"
	}
	pw, expire, err := shadowFields(username)
	if err != nil {
		return err
	}
	if pw != want {
		if err := runTool(stdout, stderr, strings.NewReader(username+":"+want+"\n"), "chpasswd", "-e"); err != nil {
			return err
		}
		say("password of %s set", username)
	}
	if expire != "" {
		if err := runTool(stdout, stderr, nil, "usermod", "-e", "", username); err != nil {
			return err
		}
		say("expiry of %s cleared", username)
	}

	// Groups.
	if in.Group != "" {
		there, members, err := groupMembers(in.Group)
		if err != nil {
			return err
		}
		if !there {
			if AdminGroups[in.Group] {
				return fmt.Errorf("the administrator group %s does not exist on this server", in.Group)
			}
			if err := runTool(stdout, stderr, nil, "groupadd", in.Group); err != nil {
				return err
			}
			say("group %s created", in.Group)
		}
		if !containsString(members, username) {
			if err := runTool(io.Discard, stderr, nil, "gpasswd", "-a", username, in.Group); err != nil {
				return err
			}
			say("%s added to %s", username, in.Group)
		}
	}
	for _, g := range in.ManagedGroups {
		if g == in.Group {
			continue
		}
		there, members, err := groupMembers(g)
		if err != nil {
			return err
		}
		if there && containsString(members, username) {
			if err := runTool(io.Discard, stderr, nil, "gpasswd", "-d", username, g); err != nil {
				return err
			}
			say("%s removed from %s", username, g)
		}
	}

	// ACLs: only on an existing directory that is not a symbolic link; the
	// walk does not follow links below it (-P).
	for _, a := range in.ACLs {
		fi, err := os.Lstat(a.Path)
		if err != nil || !fi.IsDir() {
			say("directory %s does not exist: ACL skipped", a.Path)
			continue
		}
		p := ACLPerms(a.Perms)
		if err := runTool(stdout, stderr, nil, "setfacl", "-P", "-R", "-m", "g:"+a.Group+":"+p, "-m", "d:g:"+a.Group+":"+p, a.Path); err != nil {
			return err
		}
		say("ACL %s on %s", a.Group, a.Path)
	}

	// File access only: sshd forces SFTP for the account.
	dropIn := SFTPDropInPath(username)
	if in.FileAccess {
		if in.SFTPChroot {
			if err := chrootHome(acct); err != nil {
				return err
			}
		}
		content := SFTPDropIn(username, in.SFTPChroot)
		if cur, err := os.ReadFile(dropIn); err == nil && string(cur) == content {
			say("%s unchanged", dropIn)
		} else {
			if err := os.MkdirAll(sshdDir, 0o755); err != nil {
				return err
			}
			if err := replaceChecked(dropIn, []byte(content), 0o644, io.Discard, stderr, sshdCheck); err != nil {
				return err
			}
			say("%s written", dropIn)
			if err := reloadSSHD(stdout, stderr); err != nil {
				return err
			}
		}
	} else if _, err := os.Lstat(dropIn); err == nil {
		if err := replaceChecked(dropIn, nil, 0o644, io.Discard, stderr, sshdCheck); err != nil {
			return err
		}
		if err := reloadSSHD(stdout, stderr); err != nil {
			return err
		}
		say("file access only lifted")
	}

	if err := writeKeys(acct, in.Keys, say); err != nil {
		return err
	}
	say("account %s in place", username)
	return nil
}

// chrootHome makes the home root-owned (sshd's ChrootDirectory demands
// it) with a files directory the person owns.
func chrootHome(acct account) error {
	fi, err := os.Lstat(acct.home)
	if err != nil || !fi.IsDir() {
		return fmt.Errorf("the home %s of %s is not a directory", acct.home, acct.name)
	}
	if err := os.Lchown(acct.home, 0, 0); err != nil {
		return err
	}
	if err := os.Chmod(acct.home, 0o755); err != nil {
		return err
	}
	files := filepath.Join(acct.home, "files")
	if err := os.Mkdir(files, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	if fi, err := os.Lstat(files); err != nil || !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", files)
	}
	return os.Lchown(files, acct.uid, acct.gid)
}

// writeKeys rewrites the managed block of the account's authorized_keys.
// The person owns ~/.ssh, so nothing there is followed: the directory
// and the file must not be symbolic links, and the new file is a fresh
// temporary file renamed over the old one.
func writeKeys(acct account, keys []string, say func(string, ...any)) error {
	if fi, err := os.Lstat(acct.home); err != nil || !fi.IsDir() {
		if len(keys) == 0 {
			say("no keys")
			return nil
		}
		return fmt.Errorf("the home %s of %s is not a directory", acct.home, acct.name)
	}
	sshDir := filepath.Join(acct.home, ".ssh")
	ak := filepath.Join(sshDir, "authorized_keys")
	fi, err := os.Lstat(sshDir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if len(keys) == 0 {
			say("no keys")
			return nil
		}
		if err := os.Mkdir(sshDir, 0o700); err != nil {
			return err
		}
		if err := os.Lchown(sshDir, acct.uid, acct.gid); err != nil {
			return err
		}
	case err != nil:
		return err
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory", sshDir)
	}
	var existing []byte
	existed := false
	f, err := os.OpenFile(ak, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	switch {
	case err == nil:
		st, serr := f.Stat()
		if serr != nil || !st.Mode().IsRegular() {
			f.Close()
			return fmt.Errorf("%s is not a regular file", ak)
		}
		existing, err = io.ReadAll(io.LimitReader(f, 1<<20))
		f.Close()
		if err != nil {
			return err
		}
		existed = true
	case errors.Is(err, os.ErrNotExist):
	default:
		return fmt.Errorf("%s: %v (a symbolic link is refused)", ak, err)
	}
	content := KeysFile(string(existing), keys)
	if !existed && content == "" {
		say("no keys")
		return nil
	}
	if existed && bytes.Equal(existing, []byte(content)) && ownedBy(ak, acct, 0o600) {
		say("%s unchanged", ak)
		return nil
	}
	tmp, err := os.CreateTemp(sshDir, ".lcm-helper.*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.WriteString(content)
	if werr == nil {
		werr = tmp.Chmod(0o600)
	}
	if werr == nil {
		werr = tmp.Chown(acct.uid, acct.gid)
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return werr
	}
	if err := os.Rename(tmp.Name(), ak); err != nil {
		return err
	}
	say("%s written", ak)
	return nil
}

func ownedBy(p string, acct account, mode os.FileMode) bool {
	fi, err := os.Lstat(p)
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && fi.Mode().Perm() == mode && int(st.Uid) == acct.uid && int(st.Gid) == acct.gid
}

func removeUser(acct account, exists, removeHome bool, say func(string, ...any), stdout, stderr io.Writer) error {
	name := acct.name
	if exists {
		_ = runTool(io.Discard, io.Discard, nil, "pkill", "-KILL", "-u", name)
		args := []string{name}
		if removeHome {
			args = []string{"-r", name}
		}
		// userdel -r warns about a missing mail spool; that is not a failure.
		var errb bytes.Buffer
		uerr := runTool(stdout, &errb, nil, "userdel", args...)
		for _, l := range strings.Split(strings.TrimSpace(errb.String()), "\n") {
			if l != "" && !strings.Contains(l, "mail spool") {
				fmt.Fprintln(stderr, l)
			}
		}
		if _, still, err := lookupAccount(name); err != nil || still {
			return fmt.Errorf("the account %s still exists (%v)", name, uerr)
		}
		say("account %s removed", name)
	} else {
		say("account %s does not exist", name)
	}
	dropIn := SFTPDropInPath(name)
	if _, err := os.Lstat(dropIn); err == nil {
		if err := replaceChecked(dropIn, nil, 0o644, io.Discard, stderr, sshdCheck); err != nil {
			return err
		}
		if err := reloadSSHD(stdout, stderr); err != nil {
			return err
		}
		say("%s removed", dropIn)
	}
	return nil
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

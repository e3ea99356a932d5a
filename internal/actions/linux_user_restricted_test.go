package actions

import (
	"context"
	"encoding/json"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/privilege"
	"github.com/lcmproject/lcm/internal/remote"
	"github.com/lcmproject/lcm/internal/shacrypt"
	"github.com/lcmproject/lcm/internal/testutil"
)

// TestLinuxUserRestrictedOnTestHost: the same provisioning with the
// management user's sudo restricted (RestrictSudo, proven), so every root
// step goes through lcm-helper: a user with a profile is created (sealed
// password hash on stdin, never in the output), a second run changes no
// file, the key logs in, the allowed rule works and a shell is denied,
// sudoedit works, the account scan through the helper lists alice as a
// managed human account and equals the full-mode script's output for the
// same host state, su - takes the password, a file-access account gets
// SFTP through the helper's drop-in, disable makes login fail, remove
// deletes the account. Full mode is restored before the host is reset.
func TestLinuxUserRestrictedOnTestHost(t *testing.T) {
	buildHelper(t)
	h := testutil.TestHostAt(t, linuxUserHost)
	testutil.LockTestHost(t, h)
	t.Cleanup(func() { testutil.ResetTestHost(t, h) })
	root, env, out := joinedHost(t, h)
	ctx := context.Background()

	if o := sh(t, root, `command -v systemctl >/dev/null && command -v setfacl >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends systemd acl >/dev/null 2>&1; mkdir -p /srv/share; command -v setfacl; true`); !strings.Contains(o, "bin/setfacl") {
		t.Fatalf("prepare host: %s", o)
	}

	env.Params, _ = json.Marshal(RestrictSudoParams{Mode: domain.SudoRestricted})
	if r, err := (RestrictSudo{}).Run(ctx, env); err != nil || !r.Sudo.Proven || r.Sudo.Mode != domain.SudoRestricted {
		t.Fatalf("restrict: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		env.Params, _ = json.Marshal(RestrictSudoParams{Mode: domain.SudoFull})
		out.Reset()
		if r, err := (RestrictSudo{}).Run(context.Background(), env); err != nil || !r.Sudo.Proven {
			t.Errorf("back to full mode: %v\n%s", err, out)
		}
	})
	if code, _ := as(t, env, "sudo -n /bin/sh -c true"); code == 0 {
		t.Fatal("restricted mode allows a shell")
	}

	rules, errs := privilege.ValidateAll([]privilege.Rule{
		{Kind: privilege.KindCommand, Argv: []string{"/usr/bin/systemctl", "status", "ssh"}},
		{Kind: privilege.KindEdit, Path: "/etc/motd"},
		{Kind: privilege.KindACL, Path: "/srv/share", Perms: "rwx"},
	})
	if errs != nil {
		t.Fatal(errs)
	}
	sudoers, err := privilege.Render("ops", "Ops", rules)
	if err != nil {
		t.Fatal(err)
	}
	signer, pub := newUserKey(t)
	const pw = "Quiet-Harbor-83m"
	hash, err := shacrypt.Hash(pw)
	if err != nil {
		t.Fatal(err)
	}
	spec := LinuxUserSpec{Op: LinuxUserApply, Username: "alice", FullName: "Alice Example", Shell: "/bin/bash",
		Keys: []string{pub}, HasPassword: true, Group: "lcm-prof-ops", ManagedGroups: []string{"lcm-prof-ops", "sudo"},
		Sudoers: &SudoersFile{Path: privilege.SudoersPath("ops"), Content: sudoers},
		ACLs:    []ACLGrant{{Group: "lcm-prof-ops", Path: "/srv/share", Perms: "rwx"}}}
	// The job as the worker runs it: the hash in the sealed credentials.
	env.Creds.Secrets = map[string]string{PasswordSecret("alice"): hash}
	job := func(specs ...LinuxUserSpec) string {
		t.Helper()
		out.Reset()
		env.Params, _ = json.Marshal(LinuxUsersParams{Users: specs})
		if _, _, err := (LinuxUserJob{}).RunData(ctx, env); err != nil {
			t.Fatalf("%s: %v\n%s", specs[0].Op, err, out)
		}
		return out.String()
	}
	o := job(spec)
	for _, w := range []string{"through lcm-helper", "account alice created", "password of alice set", "alice added to lcm-prof-ops", "wrote /etc/sudoers.d/lcm-prof-ops", "ACL lcm-prof-ops on /srv/share", "authorized_keys written"} {
		if !strings.Contains(o, w) {
			t.Errorf("first run does not say %q", w)
		}
	}
	if strings.Contains(o, hash) || strings.Contains(o, pw) {
		t.Fatal("the password hash reached the job output")
	}
	if o := sh(t, root, "getent shadow alice | cut -d: -f2; stat -c '%a %U' /etc/sudoers.d/lcm-prof-ops"); !strings.HasPrefix(o, hash+"\n440 root\n") {
		t.Fatalf("shadow and sudoers:\n%s\n%s", o, out)
	}

	// Idempotent: the person's own key survives, a second run changes no file.
	_, ownPub := newUserKey(t)
	sh(t, root, "printf '%s\\n' "+shQuote(ownPub)+" | cat - /home/alice/.ssh/authorized_keys > /tmp/ak && cat /tmp/ak > /home/alice/.ssh/authorized_keys")
	job(spec)
	before := sh(t, root, snapshotCmd)
	o = job(spec)
	after := sh(t, root, snapshotCmd)
	if before != after || !strings.Contains(before, "default:group:lcm-prof-ops:rwx") {
		t.Fatalf("second run changed files:\n%s\n---\n%s\n%s", before, after, o)
	}
	for _, w := range []string{"account alice unchanged", "/etc/sudoers.d/lcm-prof-ops unchanged", "authorized_keys unchanged"} {
		if !strings.Contains(o, w) {
			t.Errorf("second run does not say %q:\n%s", w, o)
		}
	}
	if strings.Contains(o, "written") || strings.Contains(o, "created") || strings.Contains(o, "wrote") {
		t.Errorf("second run wrote something:\n%s", o)
	}
	ak := sh(t, root, "cat /home/alice/.ssh/authorized_keys")
	if !strings.HasPrefix(ak, ownPub+"\n"+KeysBegin+"\n"+pub+"\n"+KeysEnd+"\n") {
		t.Fatalf("authorized_keys:\n%s", ak)
	}

	// The account scan (POST users/refresh) goes through the helper: the
	// job finds alice as a managed human account in her profile group, and
	// the helper prints exactly what the full-mode script prints for the
	// same host state (the script run as root right after).
	out.Reset()
	helperRaw, err := scanRaw(ctx, env.Exec, out)
	if err != nil || !strings.Contains(out.String(), "scanned through lcm-helper") {
		t.Fatalf("scan through the helper: %v\n%s", err, out)
	}
	scriptRaw, _, err := capture(ctx, root, io.Discard, remote.Command{Cmd: "sh -s", Stdin: strings.NewReader(scanScript)})
	if err != nil {
		t.Fatal(err)
	}
	if helperRaw != scriptRaw {
		t.Fatalf("the helper's scan differs from the script's:\n%s\n--- script ---\n%s", helperRaw, scriptRaw)
	}
	if strings.Contains(helperRaw, hash) {
		t.Fatal("the password hash reached the scan output")
	}
	out.Reset()
	_, data, err := (LinuxUserScanJob{}).RunData(ctx, env)
	if err != nil {
		t.Fatalf("scan job: %v\n%s", err, out)
	}
	var accts []Account
	if err := json.Unmarshal(data, &accts); err != nil {
		t.Fatal(err)
	}
	fromScript, err := ParseScan(scriptRaw)
	if err != nil || !reflect.DeepEqual(accts, fromScript) {
		t.Fatalf("scan job %+v\nscript %+v (%v)", accts, fromScript, err)
	}
	var scanned *Account
	for i := range accts {
		if accts[i].Username == "alice" {
			scanned = &accts[i]
		}
	}
	if scanned == nil || !scanned.Human || !scanned.Managed || scanned.Locked || scanned.Expired || scanned.Shell != "/bin/bash" ||
		!slices.Contains(scanned.Groups, "lcm-prof-ops") || slices.Contains(scanned.Groups, "sudo") {
		t.Fatalf("alice in the scan: %+v", scanned)
	}

	// Key login, the allowed rule, the denied shell, sudoedit.
	alice, err := dialUser(ctx, h, "alice", signer)
	if err != nil {
		t.Fatalf("key login: %v", err)
	}
	if o, _ := luSh(t, alice, "sudo -n /usr/bin/systemctl --no-pager status ssh; sudo -n -l /usr/bin/systemctl --no-pager status ssh"); strings.Contains(o, "password is required") || strings.Contains(o, "not allowed") || !strings.Contains(o, "/usr/bin/systemctl --no-pager status ssh") {
		t.Fatalf("allowed command refused:\n%s", o)
	}
	for _, cmd := range []string{"sudo -n sh -c id", "sudo -n bash -c id", "sudo -n /usr/bin/id"} {
		if o, code := luSh(t, alice, cmd); code == 0 || strings.Contains(o, "uid=0") {
			t.Errorf("%s was allowed: %d %s", cmd, code, o)
		}
	}
	if o, code := luSh(t, alice, `printf '#!/bin/sh\necho lcm-edited >> "$1"\n' > ~/ed.sh && chmod +x ~/ed.sh && SUDO_EDITOR=$HOME/ed.sh sudoedit -n /etc/motd`); code != 0 {
		t.Fatalf("sudoedit: %d %s", code, o)
	}
	alice.Close()
	// The activation password: su - takes it (PAM), a wrong one is refused.
	assertSu(t, h, "alice", signer, "alice", pw)

	// The catalogue's keys change: only LCM's block is rewritten, through
	// the helper's authorized-keys; the person's own key stays, the old
	// LCM key stops working, the new one logs in.
	signer2, pub2 := newUserKey(t)
	o = job(LinuxUserSpec{Op: LinuxUserKeys, Username: "alice", Keys: []string{pub2}, ProfileSlug: "ops"})
	if !strings.Contains(o, "1 key(s) in LCM's block for alice") {
		t.Fatalf("keys through the helper:\n%s", o)
	}
	if ak := sh(t, root, "cat /home/alice/.ssh/authorized_keys"); ak != ownPub+"\n"+KeysBegin+"\n"+pub2+"\n"+KeysEnd+"\n" {
		t.Fatalf("authorized_keys after the key change:\n%s", ak)
	}
	if c, err := dialUser(ctx, h, "alice", signer2); err != nil {
		t.Fatalf("login with the new key: %v", err)
	} else {
		c.Close()
	}
	if c, err := dialUser(ctx, h, "alice", signer); err == nil {
		c.Close()
		t.Fatal("the removed key still logs in")
	}
	if code, got := as(t, env, "sudo -n "+HelperPath+" authorized-keys show alice"); code != 0 || got != pub2+"\n" {
		t.Fatalf("authorized-keys show: %d %q", code, got)
	}
	// The helper's refusals: the management user, a system account, a key
	// with options, a key file behind a symbolic link.
	for cmd, want := range map[string]string{
		"printf '%s\\n' " + shQuote(pub2) + " | sudo -n " + HelperPath + " authorized-keys write lcm":                        "refused",
		"printf '%s\\n' " + shQuote(pub2) + " | sudo -n " + HelperPath + " authorized-keys write man":                        "system account",
		"printf '%s\\n' " + shQuote(`command="/bin/sh" `+pub2) + " | sudo -n " + HelperPath + " authorized-keys write alice": "refused",
	} {
		if code, o := as(t, env, cmd+" 2>&1"); code == 0 || !strings.Contains(o, want) {
			t.Errorf("%s: exit %d %q, want a refusal with %q", cmd, code, o, want)
		}
	}
	sh(t, root, "mv /home/alice/.ssh/authorized_keys /home/alice/ak.real && ln -s /home/alice/ak.real /home/alice/.ssh/authorized_keys")
	if code, o := as(t, env, "printf '%s\\n' "+shQuote(pub2)+" | sudo -n "+HelperPath+" authorized-keys write alice 2>&1"); code == 0 || !strings.Contains(o, "symbolic link") {
		t.Errorf("a linked key file: exit %d %q", code, o)
	}
	sh(t, root, "rm /home/alice/.ssh/authorized_keys && mv /home/alice/ak.real /home/alice/.ssh/authorized_keys")
	o = job(LinuxUserSpec{Op: LinuxUserKeys, Username: "alice", Keys: []string{pub}, ProfileSlug: "ops"})
	if ak := sh(t, root, "cat /home/alice/.ssh/authorized_keys"); ak != ownPub+"\n"+KeysBegin+"\n"+pub+"\n"+KeysEnd+"\n" {
		t.Fatalf("authorized_keys after the key change back:\n%s\n%s", ak, o)
	}

	// A file-access-only account: the helper writes the SFTP drop-in.
	bobSigner, bobPub := newUserKey(t)
	job(LinuxUserSpec{Op: LinuxUserApply, Username: "bob", FileAccess: true, SFTPChroot: true, Keys: []string{bobPub}, ManagedGroups: []string{"lcm-prof-ops", "sudo"}})
	bc, err := dialSSH(t, h, "bob", bobSigner)
	if err != nil {
		t.Fatalf("bob login: %v\n%s", err, out)
	}
	if !sftpWorks(t, bc) {
		t.Fatalf("bob has no SFTP\n%s", out)
	}
	bc.Close()
	if o := sh(t, root, "getent passwd bob | cut -d: -f7; stat -c '%U' /home/bob /home/bob/files"); o != "/usr/sbin/nologin\nroot\nbob\n" {
		t.Fatalf("bob: %q", o)
	}

	// Disable: login fails. Remove: the accounts are gone.
	job(LinuxUserSpec{Op: LinuxUserDisable, Username: "alice"})
	if c, err := dialUser(ctx, h, "alice", signer); err == nil {
		c.Close()
		t.Fatal("login works after disable")
	}
	if o := sh(t, root, "getent shadow alice | cut -d: -f2,8"); !strings.HasPrefix(o, "!") || !strings.HasSuffix(o, ":1\n") {
		t.Fatalf("alice after disable: %q", o)
	}
	job(LinuxUserSpec{Op: LinuxUserRemove, Username: "alice", RemoveHome: true}, LinuxUserSpec{Op: LinuxUserRemove, Username: "bob", RemoveHome: true})
	// (bob's chroot home is root's, and userdel -r keeps it, as in full mode.)
	if o := sh(t, root, "getent passwd alice bob; ls /home /etc/ssh/sshd_config.d; true"); strings.Contains(o, ":/home/") || strings.Contains(o, "lcm-sftp-bob") || strings.Contains(o, "alice\n") {
		t.Fatalf("after remove: %s", o)
	}
	// The helper refuses what the control plane would never send: a
	// system account, a shell outside /etc/shells, the management user.
	sh(t, root, "useradd -r -M svcx")
	for _, c := range []struct{ args, in string }{
		{"linux-user disable daemon", "{}"},
		{"linux-user disable svcx", "{}"},
		{"linux-user apply carol", `{"shell":"/usr/bin/python3"}`},
		{"linux-user apply carol", `{"password_hash":"!"}`},
		{"linux-user apply carol", `{"group":"shadow"}`},
		{"linux-user remove lcm", "{}"},
	} {
		if code, o := as(t, env, "printf '%s' "+shQuote(c.in)+" | sudo -n "+HelperPath+" "+c.args+" 2>&1"); code != 2 || !strings.Contains(o, "refused") {
			t.Errorf("%s %s: exit %d %s", c.args, c.in, code, o)
		}
	}
}

package actions

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/lcmproject/lcm/internal/helper"
	"github.com/lcmproject/lcm/internal/remote"
)

// Linux user actions: provision (create or update), disable, enable and
// remove one Linux user on a server, and scan the server's accounts. The
// control plane (internal/linuxusers) builds the spec; everything in it is
// validated there (user name, shell, keys, sudoers rendered by
// internal/privilege). The only secret, the password's crypt hash, comes
// with the job's sealed credentials, never in the params.

// Linux user operations.
const (
	LinuxUserApply   = "apply"
	LinuxUserDisable = "disable"
	LinuxUserEnable  = "enable"
	LinuxUserRemove  = "remove"
	// LinuxUserKeys rewrites only LCM's key block of an existing account
	// (the catalogue's keys changed): a script in full sudo mode, lcm-helper
	// authorized-keys in restricted mode.
	LinuxUserKeys = "keys"
)

// Key block markers in authorized_keys: LCM rewrites what is between them
// and keeps every other line (the person's own keys).
const (
	KeysBegin = helper.KeysBegin
	KeysEnd   = helper.KeysEnd
)

// SudoersFile is one profile's sudoers file.
type SudoersFile struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

// ACLGrant is a directory ACL for a group (setfacl, recursive, with the
// same default ACL).
type ACLGrant struct {
	Group string `json:"group"`
	Path  string `json:"path"`
	Perms string `json:"perms"` // r, rw, rwx
}

// LinuxUserSpec is what a provisioning job does on one server.
type LinuxUserSpec struct {
	// UserID and ProfileSlug let the control plane record the outcome.
	UserID      string   `json:"user_id,omitempty"`
	ProfileSlug string   `json:"profile_slug,omitempty"`
	Op          string   `json:"op"`
	Username    string   `json:"username"`
	FullName    string   `json:"full_name,omitempty"`
	Shell       string   `json:"shell,omitempty"`
	FileAccess  bool     `json:"file_access,omitempty"`
	SFTPChroot  bool     `json:"sftp_chroot,omitempty"`
	Keys        []string `json:"keys,omitempty"`
	HasPassword bool     `json:"has_password,omitempty"`
	// Group is the group that carries the profile's rights (lcm-prof-<slug>,
	// or sudo/wheel for a full administrator); "" for a standard user.
	Group string `json:"group,omitempty"`
	// ManagedGroups are every group LCM may have put the user in (all
	// profile groups on this server and the administrator group): the user
	// leaves those that are not Group.
	ManagedGroups []string     `json:"managed_groups,omitempty"`
	Sudoers       *SudoersFile `json:"sudoers,omitempty"`
	ACLs          []ACLGrant   `json:"acls,omitempty"`
	RemoveHome    bool         `json:"remove_home,omitempty"`
}

var (
	specUser  = regexp.MustCompile(`^[a-z_][a-z0-9_-]{0,31}$`)
	specGroup = regexp.MustCompile(`^[a-z_][a-z0-9_-]{0,31}$`)
	specPath  = regexp.MustCompile(`^/[A-Za-z0-9@._+/-]*$`)
	specShell = regexp.MustCompile(`^/[a-z/]+$`)
)

// Check refuses a spec that could not have come from the control plane's
// validation: the worker runs it as root.
func (s LinuxUserSpec) Check() error {
	if !specUser.MatchString(s.Username) || s.Username == "root" {
		return failf("invalid user name %q", s.Username)
	}
	switch s.Op {
	case LinuxUserApply, LinuxUserDisable, LinuxUserEnable, LinuxUserRemove, LinuxUserKeys:
	default:
		return failf("unknown operation %q", s.Op)
	}
	if s.Shell != "" && !specShell.MatchString(s.Shell) {
		return failf("invalid shell %q", s.Shell)
	}
	if strings.ContainsAny(s.FullName, ":,\n\r\x00") {
		return failf("invalid full name")
	}
	for _, g := range append([]string{s.Group}, s.ManagedGroups...) {
		if g != "" && !specGroup.MatchString(g) {
			return failf("invalid group %q", g)
		}
	}
	for _, k := range s.Keys {
		if strings.ContainsAny(k, "\n\r") || !strings.HasPrefix(k, "ssh-") && !strings.HasPrefix(k, "ecdsa-") && !strings.HasPrefix(k, "sk-") {
			return failf("invalid key line")
		}
	}
	if s.Sudoers != nil && (!strings.HasPrefix(s.Sudoers.Path, "/etc/sudoers.d/lcm-prof-") || strings.ContainsAny(s.Sudoers.Path[len("/etc/sudoers.d/"):], "./")) {
		return failf("invalid sudoers path %q", s.Sudoers.Path)
	}
	for _, a := range s.ACLs {
		if !specGroup.MatchString(a.Group) || !specPath.MatchString(a.Path) || strings.Contains(a.Path, "..") || a.Path == "/" {
			return failf("invalid ACL %+v", a)
		}
		if a.Perms != "r" && a.Perms != "rw" && a.Perms != "rwx" {
			return failf("invalid ACL perms %q", a.Perms)
		}
	}
	return nil
}

// provisionPrelude defines the helpers every operation uses. put_file
// writes $2 (content from a variable) to $1 only when it differs, with
// mode $3 and owner $4, through a temporary file in the same directory.
const provisionPrelude = `set -eu
umask 022
say() { printf 'lcm: %s\n' "$*"; }
put_file() {
	dst=$1; content=$2; mode=$3; owner=$4
	tmp="$(dirname "$dst")/.lcm-tmp.$(basename "$dst")"
	printf '%s' "$content" > "$tmp"
	chmod "$mode" "$tmp"; chown "$owner" "$tmp"
	if [ -f "$dst" ] && cmp -s "$tmp" "$dst"; then rm -f "$tmp"; say "$dst unchanged"; return 1; fi
	mv -f "$tmp" "$dst"; say "$dst written"; return 0
}
in_group() { id -nG "$1" 2>/dev/null | tr ' ' '\n' | grep -qx "$2"; }
reload_sshd() {
	sshd -t
	# SIGHUP to the listener is what "systemctl reload ssh" sends; it also
	# works where systemctl ignores requests (containers, chroots).
	pid=$(cat /run/sshd.pid 2>/dev/null || true)
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -HUP "$pid"; sleep 1; say "sshd reloaded"
	else systemctl reload ssh 2>/dev/null || systemctl reload sshd 2>/dev/null || rc-service sshd reload 2>/dev/null || say "sshd could not be reloaded"; fi
}
`

// keysScript rewrites the managed block of ~U/.ssh/authorized_keys with
// $KEYS and keeps every line outside it.
const keysScript = `HOME_DIR=$(getent passwd "$U" | cut -d: -f6)
SSH_DIR="$HOME_DIR/.ssh"; AK="$SSH_DIR/authorized_keys"
if [ ! -d "$SSH_DIR" ]; then mkdir -p "$SSH_DIR"; chown "$U:" "$SSH_DIR"; chmod 700 "$SSH_DIR"; fi
OWN=""
if [ -f "$AK" ]; then OWN=$(awk -v b="$KB" -v e="$KE" '$0==b{s=1;next} $0==e{s=0;next} !s' "$AK"); fi
NEW=""
[ -n "$OWN" ] && NEW="$OWN
"
if [ -n "$KEYS" ]; then NEW="$NEW$KB
$KEYS
$KE
"; fi
if [ -z "$NEW" ] && [ ! -f "$AK" ]; then say "no keys"; else put_file "$AK" "$NEW" 600 "$U:" || true; fi
`

// Script returns the shell script of the spec (run as root, password
// hash in the environment variable LCM_PW_HASH).
func (s LinuxUserSpec) Script() string {
	var b strings.Builder
	b.WriteString(provisionPrelude)
	fmt.Fprintf(&b, "U=%s\nKB=%s\nKE=%s\n", shQuote(s.Username), shQuote(KeysBegin), shQuote(KeysEnd))
	dropIn := "/etc/ssh/sshd_config.d/lcm-sftp-" + s.Username + ".conf"
	switch s.Op {
	case LinuxUserRemove:
		b.WriteString("if id -u \"$U\" >/dev/null 2>&1; then\n")
		b.WriteString("\tpkill -KILL -u \"$U\" 2>/dev/null || true\n")
		if s.RemoveHome {
			b.WriteString("\tuserdel -r \"$U\" 2>&1 | grep -v 'mail spool' || true\n")
		} else {
			b.WriteString("\tuserdel \"$U\"\n")
		}
		b.WriteString("\tsay \"account $U removed\"\nelse say \"account $U does not exist\"; fi\n")
		b.WriteString("if id -u \"$U\" >/dev/null 2>&1; then echo 'lcm: the account still exists' >&2; exit 1; fi\n")
		fmt.Fprintf(&b, "if [ -f %s ]; then rm -f %s; reload_sshd; fi\n", shQuote(dropIn), shQuote(dropIn))
		return b.String()
	case LinuxUserKeys:
		keys := append([]string(nil), s.Keys...)
		sort.Strings(keys)
		b.WriteString("id -u \"$U\" >/dev/null 2>&1 || { echo \"lcm: no account $U\" >&2; exit 1; }\n")
		fmt.Fprintf(&b, "KEYS=%s\n", shQuote(strings.Join(keys, "\n")))
		b.WriteString(keysScript)
		fmt.Fprintf(&b, "say \"%d key(s) in LCM's block for $U\"\n", len(keys))
		return b.String()
	case LinuxUserDisable:
		b.WriteString("id -u \"$U\" >/dev/null 2>&1 || { echo \"lcm: no account $U\" >&2; exit 1; }\n")
		b.WriteString("usermod -L -e 1 \"$U\"\nKEYS=''\n")
		b.WriteString(keysScript)
		b.WriteString("pkill -KILL -u \"$U\" 2>/dev/null || true\nsay \"account $U disabled (locked, expired, keys out of the block)\"\n")
		return b.String()
	}
	// apply and enable: create or update the account, then everything else.
	shell := s.Shell
	if s.FileAccess {
		shell = "/usr/sbin/nologin"
	}
	if shell == "" {
		shell = "/bin/bash"
	}
	fmt.Fprintf(&b, "SH=%s\nGECOS=%s\n", shQuote(shell), shQuote(s.FullName))
	b.WriteString(`[ -x "$SH" ] || { [ "$SH" = /usr/sbin/nologin ] && [ -x /sbin/nologin ] && SH=/sbin/nologin; } || true
if id -u "$U" >/dev/null 2>&1; then
	cur=$(getent passwd "$U")
	if [ "$(echo "$cur" | cut -d: -f7)" != "$SH" ] || [ "$(echo "$cur" | cut -d: -f5)" != "$GECOS" ]; then usermod -s "$SH" -c "$GECOS" "$U"; say "account $U updated"; else say "account $U unchanged"; fi
else
	useradd -m -s "$SH" -c "$GECOS" "$U"; say "account $U created"
fi
`)
	// Password: the crypt hash from the sealed credentials, or '*' (no
	// password, not locked: sshd refuses '!' for key logins).
	if s.HasPassword {
		b.WriteString("PW=\"${LCM_PW_HASH:?the password hash is missing}\"\n")
	} else {
		b.WriteString("PW='*'\n")
	}
	b.WriteString(`if [ "$(getent shadow "$U" | cut -d: -f2)" != "$PW" ]; then usermod -p "$PW" "$U"; say "password of $U set"; fi
if [ -n "$(getent shadow "$U" | cut -d: -f8)" ]; then usermod -e '' "$U"; say "expiry of $U cleared"; fi
`)
	// Groups.
	if s.Group != "" {
		fmt.Fprintf(&b, "G=%s\n", shQuote(s.Group))
		b.WriteString("getent group \"$G\" >/dev/null || { groupadd \"$G\"; say \"group $G created\"; }\n")
		b.WriteString("in_group \"$U\" \"$G\" || { gpasswd -a \"$U\" \"$G\" >/dev/null; say \"$U added to $G\"; }\n")
	}
	for _, g := range s.ManagedGroups {
		if g == s.Group {
			continue
		}
		fmt.Fprintf(&b, "if getent group %s >/dev/null && in_group \"$U\" %s; then gpasswd -d \"$U\" %s >/dev/null; say \"$U removed from %s\"; fi\n", shQuote(g), shQuote(g), shQuote(g), g)
	}
	// Sudoers: validated by visudo before it is moved into place.
	if s.Sudoers != nil {
		fmt.Fprintf(&b, "SF=%s\nSC=%s\n", shQuote(s.Sudoers.Path), shQuote(s.Sudoers.Content))
		b.WriteString(`ST="/etc/sudoers.d/.lcm-check.$(basename "$SF")"
printf '%s' "$SC" > "$ST"; chmod 440 "$ST"; chown root:root "$ST"
if ! visudo -cf "$ST" >/dev/null; then visudo -cf "$ST" >&2 || true; rm -f "$ST"; echo "lcm: visudo refused $SF" >&2; exit 1; fi
if [ -f "$SF" ] && cmp -s "$ST" "$SF"; then rm -f "$ST"; say "$SF unchanged"; else mv -f "$ST" "$SF"; say "$SF written (checked by visudo)"; fi
`)
	}
	for _, a := range s.ACLs {
		fmt.Fprintf(&b, "if [ -d %s ]; then setfacl -R -m %s -m %s %s; say \"ACL %s on %s\"; else say \"directory %s does not exist: ACL skipped\"; fi\n",
			shQuote(a.Path), shQuote("g:"+a.Group+":"+helper.ACLPerms(a.Perms)), shQuote("d:g:"+a.Group+":"+helper.ACLPerms(a.Perms)), shQuote(a.Path), a.Group, a.Path, a.Path)
	}
	// File access only: sshd forces SFTP for the account.
	if s.FileAccess {
		fmt.Fprintf(&b, "DI=%s\nDC=%s\n", shQuote(dropIn), shQuote(helper.SFTPDropIn(s.Username, s.SFTPChroot)))
		if s.SFTPChroot {
			b.WriteString("HD=$(getent passwd \"$U\" | cut -d: -f6); chown root:root \"$HD\"; chmod 755 \"$HD\"; mkdir -p \"$HD/files\"; chown \"$U:\" \"$HD/files\"\n")
		}
		b.WriteString("mkdir -p /etc/ssh/sshd_config.d\nif put_file \"$DI\" \"$DC\" 644 root:root; then reload_sshd; fi\n")
	} else {
		fmt.Fprintf(&b, "if [ -f %s ]; then rm -f %s; reload_sshd; say \"file access only lifted\"; fi\n", shQuote(dropIn), shQuote(dropIn))
	}
	keys := append([]string(nil), s.Keys...)
	sort.Strings(keys)
	fmt.Fprintf(&b, "KEYS=%s\n", shQuote(strings.Join(keys, "\n")))
	b.WriteString(keysScript)
	b.WriteString("say \"account $U in place\"\n")
	return b.String()
}

// RunLinuxUser runs spec on ex as root; pwHash is the password's crypt
// hash when spec.HasPassword. The way depends on the management user's
// sudo mode, probed first: a script under sudo in full mode, lcm-helper
// in restricted mode.
func RunLinuxUser(ctx context.Context, ex remote.Executor, out io.Writer, spec LinuxUserSpec, pwHash string) (Result, error) {
	viaHelper, err := linuxUserViaHelper(ctx, ex, out)
	if err != nil {
		return Result{}, err
	}
	return runLinuxUser(ctx, ex, out, spec, pwHash, viaHelper)
}

func runLinuxUser(ctx context.Context, ex remote.Executor, out io.Writer, spec LinuxUserSpec, pwHash string, viaHelper bool) (Result, error) {
	if err := spec.Check(); err != nil {
		return Result{}, err
	}
	if spec.HasPassword && !strings.HasPrefix(pwHash, "$6$") && !strings.HasPrefix(pwHash, "$y$") {
		return Result{}, failf("the password hash is missing")
	}
	if viaHelper {
		return runLinuxUserHelper(ctx, ex, out, spec, pwHash)
	}
	script := spec.Script()
	cmd := "sh -s"
	if spec.HasPassword {
		// The hash travels on stdin, never on a command line.
		script = "LCM_PW_HASH=" + shQuote(pwHash) + "\n" + script
	}
	code, err := run(ctx, ex, out, remote.Command{Cmd: cmd, Sudo: true, Stdin: strings.NewReader(script)})
	if err != nil {
		return Result{}, err
	}
	if code != 0 {
		return Result{ExitCode: code}, failf("%s of Linux user %s failed with exit code %d", spec.Op, spec.Username, code)
	}
	return Result{Message: fmt.Sprintf("%s %s: done", spec.Op, spec.Username)}, nil
}

// ---- scan ----

// Account is one OS account of a scan.
type Account struct {
	Username  string   `json:"username"`
	UID       int      `json:"uid"`
	Home      string   `json:"home"`
	Shell     string   `json:"shell"`
	Human     bool     `json:"human"`
	Locked    bool     `json:"locked"`
	Expired   bool     `json:"expired"`
	Groups    []string `json:"groups"`
	LastLogin string   `json:"last_login"` // as lastlog prints it; "" for never
	Managed   bool     `json:"managed"`    // holds an LCM key block
}

// scanScript prints passwd, the shadow status fields, groups, lastlog and
// which homes hold an LCM key block, in sections.
const scanScript = `set -u
echo '### passwd'; getent passwd
echo '### uidmin'; awk '$1=="UID_MIN"{print $2}' /etc/login.defs 2>/dev/null
echo '### shadow'; getent shadow | awk -F: '{print $1":"substr($2,1,1)":"$8}'
echo '### groups'; getent group
echo '### lastlog'; LC_ALL=C lastlog 2>/dev/null || true
echo '### managed'; getent passwd | while IFS=: read -r n _ _ _ _ h _; do [ -f "$h/.ssh/authorized_keys" ] && grep -qxF '` + KeysBegin + `' "$h/.ssh/authorized_keys" 2>/dev/null && echo "$n"; done
echo '### end'
`

// ScanAccounts lists the server's accounts: scanScript under sudo in full
// sudo mode, lcm-helper linux-user-scan (the same output) in restricted
// mode.
func ScanAccounts(ctx context.Context, ex remote.Executor, out io.Writer) ([]Account, error) {
	raw, err := scanRaw(ctx, ex, out)
	if err != nil {
		return nil, err
	}
	return ParseScan(raw)
}

// scanRaw is the scan's raw output, through the script or the helper by
// the sudo mode.
func scanRaw(ctx context.Context, ex remote.Executor, out io.Writer) (string, error) {
	viaHelper, err := viaHelper(ctx, ex, out, "linux-user-scan", "the accounts are scanned through lcm-helper")
	if err != nil {
		return "", err
	}
	c := remote.Command{Cmd: "sh -s", Sudo: true, Stdin: strings.NewReader(scanScript)}
	if viaHelper {
		c = remote.Command{Cmd: helperCmd("linux-user-scan")}
	}
	raw, code, err := capture(ctx, ex, out, c)
	if err != nil {
		return "", err
	}
	if code != 0 {
		return "", failf("the account scan exited with code %d", code)
	}
	return raw, nil
}

// ParseScan parses the scan's output (scanScript's or the helper's).
func ParseScan(raw string) ([]Account, error) {
	sections := map[string][]string{}
	cur := ""
	for _, line := range strings.Split(raw, "\n") {
		if strings.HasPrefix(line, "### ") {
			cur = strings.TrimPrefix(line, "### ")
			continue
		}
		if cur != "" && line != "" {
			sections[cur] = append(sections[cur], line)
		}
	}
	if _, ok := sections["passwd"]; !ok || !strings.Contains(raw, "### end") {
		return nil, failf("the account scan output is incomplete")
	}
	uidMin := 1000
	if v := sections["uidmin"]; len(v) > 0 {
		if n, err := strconv.Atoi(strings.TrimSpace(v[0])); err == nil {
			uidMin = n
		}
	}
	shadow := map[string][2]string{}
	for _, l := range sections["shadow"] {
		f := strings.Split(l, ":")
		if len(f) == 3 {
			shadow[f[0]] = [2]string{f[1], f[2]}
		}
	}
	groups := map[string][]string{}
	for _, l := range sections["group"+"s"] {
		f := strings.Split(l, ":")
		if len(f) == 4 && f[3] != "" {
			for _, m := range strings.Split(f[3], ",") {
				groups[m] = append(groups[m], f[0])
			}
		}
	}
	last := map[string]string{}
	for i, l := range sections["lastlog"] {
		if i == 0 && strings.HasPrefix(l, "Username") {
			continue
		}
		f := strings.Fields(l)
		if len(f) < 2 || strings.Contains(l, "**Never logged in**") {
			continue
		}
		// "alice  pts/0  127.0.0.1  Tue Nov 24 14:00:00 +0000 2026": the date is
		// the last six fields.
		if len(f) >= 7 {
			last[f[0]] = strings.Join(f[len(f)-6:], " ")
		}
	}
	managed := map[string]bool{}
	for _, l := range sections["managed"] {
		managed[strings.TrimSpace(l)] = true
	}
	var out []Account
	for _, l := range sections["passwd"] {
		f := strings.Split(l, ":")
		if len(f) != 7 {
			continue
		}
		uid, err := strconv.Atoi(f[2])
		if err != nil {
			continue
		}
		sh := shadow[f[0]]
		a := Account{Username: f[0], UID: uid, Home: f[5], Shell: f[6], Human: uid >= uidMin && uid < 65534,
			Locked: sh[0] == "!", Expired: sh[1] != "" && sh[1] != "-1", Groups: groups[f[0]], LastLogin: last[f[0]], Managed: managed[f[0]]}
		if a.Groups == nil {
			a.Groups = []string{}
		}
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].UID < out[j].UID })
	return out, nil
}

// ---- the job ----

// LinuxUsersParams are a provisioning job's params: the operations on one
// server, in order (a server runs one job at a time, so one job carries
// every user of a sync).
type LinuxUsersParams struct {
	Users []LinuxUserSpec `json:"users"`
	// Op and Username name a single-user job (JobName); "" for a sync.
	Op       string `json:"op,omitempty"`
	Username string `json:"username,omitempty"`
}

// LinuxUserOutcome is one operation's result, in the job's payload.
type LinuxUserOutcome struct {
	UserID      string `json:"user_id"`
	Username    string `json:"username"`
	Op          string `json:"op"`
	ProfileSlug string `json:"profile_slug"`
	OK          bool   `json:"ok"`
	Error       string `json:"error,omitempty"`
}

// PasswordSecret is the credentials' secret key of a user's password hash.
func PasswordSecret(username string) string { return "password_hash:" + username }

// LinuxUserJob runs the operations of LinuxUsersParams; one failing
// operation does not stop the others, and the job fails when any did.
type LinuxUserJob struct{}

// Run implements Action (the payload is dropped; runners use RunData).
func (j LinuxUserJob) Run(ctx context.Context, env *Env) (Result, error) {
	r, _, err := j.RunData(ctx, env)
	return r, err
}

// RunData implements DataAction: the outcomes as JSON.
func (LinuxUserJob) RunData(ctx context.Context, env *Env) (Result, []byte, error) {
	var p LinuxUsersParams
	if err := json.Unmarshal(env.Params, &p); err != nil || len(p.Users) == 0 {
		return Result{}, nil, failf("bad Linux user job parameters")
	}
	viaHelper, err := linuxUserViaHelper(ctx, env.Exec, env.Out)
	if err != nil {
		return Result{}, nil, err
	}
	outcomes := make([]LinuxUserOutcome, 0, len(p.Users))
	failed := 0
	for _, spec := range p.Users {
		o := LinuxUserOutcome{UserID: spec.UserID, Username: spec.Username, Op: spec.Op, ProfileSlug: spec.ProfileSlug, OK: true}
		fmt.Fprintf(env.Out, "lcm: --- %s %s ---\n", spec.Op, spec.Username)
		if _, err := runLinuxUser(ctx, env.Exec, env.Out, spec, env.Creds.Secrets[PasswordSecret(spec.Username)], viaHelper); err != nil {
			if ctx.Err() != nil {
				return Result{}, nil, err
			}
			o.OK, o.Error = false, err.Error()
			failed++
			fmt.Fprintf(env.Out, "lcm: %s\n", err)
		}
		outcomes = append(outcomes, o)
	}
	data, err := json.Marshal(outcomes)
	if err != nil {
		return Result{}, nil, err
	}
	if failed > 0 {
		return Result{ExitCode: 1}, data, failf("%d of %d Linux user operations failed", failed, len(p.Users))
	}
	return Result{Message: fmt.Sprintf("%d Linux user operation(s) done", len(p.Users))}, data, nil
}

// LinuxUserScanJob scans the server's accounts; the result carries them.
type LinuxUserScanJob struct{}

// Run implements Action (the payload is dropped; runners use RunData).
func (j LinuxUserScanJob) Run(ctx context.Context, env *Env) (Result, error) {
	r, _, err := j.RunData(ctx, env)
	return r, err
}

// RunData implements DataAction: the accounts as JSON.
func (LinuxUserScanJob) RunData(ctx context.Context, env *Env) (Result, []byte, error) {
	accts, err := ScanAccounts(ctx, env.Exec, io.Discard)
	if err != nil {
		return Result{}, nil, err
	}
	data, err := json.Marshal(accts)
	if err != nil {
		return Result{}, nil, err
	}
	human := 0
	for _, a := range accts {
		if a.Human {
			human++
		}
	}
	fmt.Fprintf(env.Out, "lcm: %d accounts, %d of them human\n", len(accts), human)
	var buf bytes.Buffer
	_ = json.Compact(&buf, data)
	return Result{Message: fmt.Sprintf("%d accounts, %d human", len(accts), human)}, buf.Bytes(), nil
}

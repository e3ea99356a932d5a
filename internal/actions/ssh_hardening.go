package actions

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lcmproject/lcm/internal/actions/sshdcfg"
	"github.com/lcmproject/lcm/internal/helper"
	"github.com/lcmproject/lcm/internal/remote"
)

// LCM's sshd drop-ins. sshd keeps the first value it reads, and reads the
// drop-ins in lexical order: 10-lcm-ssh.conf (root login, port) wins over
// 60-lcm-hardening.conf, and both win over the distribution's own
// drop-ins (50-cloud-init.conf and the like) only where they sort first.
const (
	HardeningDropIn = sshdcfg.DropInDir + "/60-lcm-hardening.conf"
	SSHDropIn       = sshdcfg.DropInDir + "/10-lcm-ssh.conf"
)

// Features name LCM's marked edits of the main sshd_config.
const (
	featureHarden    = "harden"
	featureRootLogin = "root-login"
)

// hardeningConfig is the drop-in harden-ssh writes: a CIS-style baseline
// for OpenSSH (CIS Debian/Ubuntu benchmarks, section "Configure SSH
// Server"), each line explained. It leaves out what could cut LCM or the
// operator off beyond passwords (AllowUsers, ciphers, forwarding).
const hardeningConfig = `# Written by LCM (harden-ssh); removed by unharden-ssh. LCM rewrites this file:
# change it through LCM. sshd keeps the first value it reads for a keyword and
# reads the drop-ins in name order.
#
# No password logins: keys only (CIS: PasswordAuthentication no).
PasswordAuthentication no
# No keyboard-interactive logins either (PAM password prompts).
KbdInteractiveAuthentication no
# Public keys are how LCM and administrators log in.
PubkeyAuthentication yes
# root may log in with a key only, never with a password (CIS: PermitRootLogin
# no or prohibit-password; LCM's root-login setting in 10-lcm-ssh.conf wins).
PermitRootLogin prohibit-password
# Accounts with an empty password never log in (CIS: PermitEmptyPasswords no).
PermitEmptyPasswords no
# No trust based on the client host (.rhosts, .shosts, hosts.equiv).
HostbasedAuthentication no
IgnoreRhosts yes
# Users cannot pass environment variables to sshd (CIS: PermitUserEnvironment no).
PermitUserEnvironment no
# At most 4 authentication attempts per connection (CIS: MaxAuthTries 4 or less).
MaxAuthTries 4
# A connection that has not logged in after 60 s is dropped (CIS: LoginGraceTime 60).
LoginGraceTime 60
# Throttle unauthenticated connections: start dropping at 10, all at 60 (CIS).
MaxStartups 10:30:60
# Log the fingerprint of the key each login used (CIS: LogLevel VERBOSE or INFO).
LogLevel VERBOSE
# No X11 forwarding (CIS: X11Forwarding no).
X11Forwarding no
# Probe idle clients every 5 minutes, drop them after 3 unanswered probes.
ClientAliveInterval 300
ClientAliveCountMax 3
`

// SSHProof is what an SSH action proved on the server (the job's result,
// and through it the server record).
type SSHProof struct {
	// Proven: sshd -T was read back after the change (or after its
	// rollback) and its values below are the server's effective ones.
	Proven bool `json:"proven"`
	// PasswordAuth and RootLogin are the read-back values ("" unproven).
	PasswordAuth string `json:"password_authentication,omitempty"`
	RootLogin    string `json:"permit_root_login,omitempty"`
	Port         int    `json:"port,omitempty"`
	Ports        []int  `json:"ports,omitempty"`
	// Lines are the proof lines of sshd -T.
	Lines []string `json:"lines,omitempty"`
	// Overrides are the configuration lines that beat LCM's drop-in.
	Overrides []string `json:"overrides,omitempty"`
	// MainEdits are LCM's marked edits of the main file (made or undone).
	MainEdits []string `json:"main_edits,omitempty"`
	// Socket is set when sshd is socket-activated (ssh.socket);
	// SocketPorts are the ports the socket was read back listening on.
	Socket      bool  `json:"socket,omitempty"`
	SocketPorts []int `json:"socket_ports,omitempty"`
	// Missing names the proof that could not be had.
	Missing    string `json:"missing,omitempty"`
	RolledBack bool   `json:"rolled_back,omitempty"`
}

// Hardened reports whether the proof shows password logins off.
func (p *SSHProof) Hardened() bool { return p != nil && p.Proven && p.PasswordAuth == "no" }

// HardenParams are harden-ssh's parameters.
type HardenParams struct {
	// FixMainConfig allows LCM's marked, reversible edit of the main
	// sshd_config: an Include of the drop-in directory when it is missing,
	// and lines that would beat the drop-in commented out.
	FixMainConfig bool `json:"fix_main_config,omitempty"`
}

// RootLoginParams are ssh-root-login's parameters.
type RootLoginParams struct {
	Enabled bool `json:"enabled"`
}

// HardenSSH writes the hardening drop-in and proves it (see sshChange).
type HardenSSH struct{}

// UnhardenSSH removes the hardening drop-in and LCM's edits for it.
type UnhardenSSH struct{}

// SSHRootLogin sets root's SSH login in 10-lcm-ssh.conf.
type SSHRootLogin struct{}

// Run implements Action.
func (HardenSSH) Run(ctx context.Context, env *Env) (Result, error) {
	var p HardenParams
	if len(env.Params) > 0 {
		if err := json.Unmarshal(env.Params, &p); err != nil {
			return Result{}, failf("bad parameters: %v", err)
		}
	}
	return sshChange(ctx, env, sshSpec{
		feature: featureHarden, dropIn: HardeningDropIn, content: hardeningConfig,
		editMain: p.FixMainConfig, keywords: map[string]string{"passwordauthentication": "no", "kbdinteractiveauthentication": "no"},
		user: env.Creds.User,
		check: func(pr *SSHProof) string {
			if pr.PasswordAuth != "no" {
				return "password authentication is still " + orDash(pr.PasswordAuth) + " after hardening"
			}
			return ""
		},
		overrideKeyword: "passwordauthentication", wrongValue: "yes",
		done: "SSH hardened: password authentication is off (proven with sshd -T and a fresh key login)",
	})
}

// Run implements Action. Unhardening always counts once read back: the
// proof says what the server does now (password logins may stay off when
// the main file turns them off itself).
func (UnhardenSSH) Run(ctx context.Context, env *Env) (Result, error) {
	return sshChange(ctx, env, sshSpec{
		feature: featureHarden, dropIn: HardeningDropIn, remove: true, revertMain: true,
		user: env.Creds.User,
		done: "SSH hardening removed",
	})
}

// Run implements Action.
func (SSHRootLogin) Run(ctx context.Context, env *Env) (Result, error) {
	var p RootLoginParams
	if err := json.Unmarshal(env.Params, &p); err != nil {
		return Result{}, failf("bad parameters: %v", err)
	}
	want := "no"
	if p.Enabled {
		want = "prohibit-password"
	}
	return sshChange(ctx, env, sshSpec{
		feature: featureRootLogin, dropIn: SSHDropIn,
		contentFrom: func(prev string) string { st := parseSSHDropIn(prev); st.rootLogin = want; return st.render() },
		editMain:    true, keywords: map[string]string{"permitrootlogin": want},
		user: "root",
		check: func(pr *SSHProof) string {
			if pr.RootLogin != want {
				return fmt.Sprintf("root login reads back as %q, not %q", orDash(pr.RootLogin), want)
			}
			return ""
		},
		overrideKeyword: "permitrootlogin", wrongValue: "",
		done: "root login over SSH is now " + want + " (proven with sshd -T and a fresh key login)",
	})
}

// sshSpec is one change of LCM's sshd configuration.
type sshSpec struct {
	feature string
	dropIn  string
	content string
	remove  bool // remove the drop-in instead of writing content
	// contentFrom, when set, makes content from the drop-in's current
	// content (10-lcm-ssh.conf holds root login and port).
	contentFrom func(prev string) string
	// editMain makes LCM's marked edit of the main file for keywords;
	// revertMain undoes feature's edits.
	editMain, revertMain bool
	// keywords are the values the drop-in sets (lower case).
	keywords map[string]string
	// user is whose connection sshd -T -C evaluates.
	user string
	// check returns why the proof does not show the wanted state ("" ok).
	check func(*SSHProof) string
	// overrideKeyword is traced when check fails; wrongValue, when set,
	// limits the report to lines setting that value.
	overrideKeyword, wrongValue string
	done                        string
}

// sshProofKeywords are the sshd -T lines an SSH proof shows.
var sshProofKeywords = []string{"passwordauthentication", "kbdinteractiveauthentication", "pubkeyauthentication", "permitrootlogin", "port"}

// fileState is a file's content before a change (for the rollback).
type fileState struct {
	path    string
	content string
	exists  bool
}

// sshChange runs one change the proven way:
//
//	read the files ──► write drop-in (sshd -t, else restored) ──► main file edit (sshd -t)
//	──► reload sshd ──► sshd -T -C user=…,host=…,addr=… ──► check ──► fresh key login + sudo
//	any step after the write fails ──► previous files back, reload, read back again, job fails
func sshChange(ctx context.Context, env *Env, s sshSpec) (Result, error) {
	out := env.Out
	if env.Creds.PrivateKey == "" {
		return Result{}, failf("the management login has no key (password device): changing sshd could lock LCM out, so LCM does not")
	}
	o, err := newSSHOps(ctx, env.Exec, out)
	if err != nil {
		return Result{}, err
	}
	conn := sshConnection(ctx, env.Exec, out)
	before, err := readFiles(ctx, o, s.dropIn, sshdcfg.MainPath)
	if err != nil {
		return Result{}, err
	}
	drop, main := before[0], before[1]
	if s.contentFrom != nil {
		s.content = s.contentFrom(drop.content)
	}
	pr := &SSHProof{}
	// 1. The drop-in.
	if s.remove {
		if drop.exists {
			if err := o.put(ctx, s.dropIn, "", false); err != nil {
				return Result{}, err
			}
		} else {
			fmt.Fprintf(out, "lcm: %s is not there; nothing to remove\n", s.dropIn)
		}
	} else if err := o.put(ctx, s.dropIn, s.content, true); err != nil {
		return Result{}, err
	}
	rollback := func(reason string) (Result, error) {
		fmt.Fprintf(out, "lcm: %s; rolling back\n", reason)
		pr.RolledBack = true
		var errs []string
		restore := []fileState{drop}
		if pr.MainEdits != nil {
			restore = append(restore, main)
		}
		for _, f := range restore {
			if err := o.put(ctx, f.path, f.content, f.exists); err != nil {
				errs = append(errs, fmt.Sprintf("%s: %v", f.path, err))
			}
		}
		if err := o.reload(ctx); err != nil {
			errs = append(errs, "reload: "+err.Error())
		}
		// What counts is the state after the rollback.
		after := &SSHProof{}
		readBack(ctx, o, conn, s.user, after)
		pr.Proven, pr.PasswordAuth, pr.RootLogin, pr.Port, pr.Ports, pr.Lines = after.Proven, after.PasswordAuth, after.RootLogin, after.Port, after.Ports, after.Lines
		if !after.Proven && pr.Missing == "" {
			pr.Missing = "after the rollback: " + after.Missing
		}
		if len(errs) > 0 {
			return Result{SSH: pr}, failf("%s; the ROLLBACK FAILED (%s): check %s and %s on the server", reason, strings.Join(errs, "; "), s.dropIn, sshdcfg.MainPath)
		}
		fmt.Fprintln(out, "lcm: rolled back; the server's sshd configuration is as before")
		return Result{SSH: pr}, failf("%s; rolled back, nothing changed", reason)
	}
	// 2. The main file.
	newMain, edits := main.content, []string(nil)
	switch {
	case s.editMain:
		newMain, edits = sshdcfg.Edit(main.content, s.feature, s.keywords)
	case s.revertMain:
		_, otherDropIn, _ := o.read(ctx, SSHDropIn)
		newMain, edits = sshdcfg.Revert(main.content, s.feature, !otherDropIn && !hasOtherMarks(main.content, s.feature))
	}
	if len(edits) > 0 {
		for _, e := range edits {
			fmt.Fprintf(out, "lcm: main file: %s\n", e)
		}
		pr.MainEdits = edits
		if err := o.put(ctx, sshdcfg.MainPath, newMain, true); err != nil {
			return rollback("the edit of " + sshdcfg.MainPath + " failed: " + err.Error())
		}
	}
	// 3. Reload and read back.
	if err := o.reload(ctx); err != nil {
		return rollback("sshd could not be reloaded: " + err.Error())
	}
	readBack(ctx, o, conn, s.user, pr)
	if !pr.Proven {
		return rollback("no proof: " + pr.Missing)
	}
	if s.check != nil {
		if why := s.check(pr); why != "" {
			pr.Overrides = overrides(ctx, o, s)
			if len(pr.Overrides) > 0 {
				why += "; overridden by: " + strings.Join(pr.Overrides, "; ")
			}
			return rollback(why)
		}
	}
	// 4. LCM must still get in: a fresh connection with the management key.
	if err := proveFreshLogin(ctx, env, out); err != nil {
		return rollback("a fresh login with the management key failed after the change (" + err.Error() + ")")
	}
	fmt.Fprintln(out, "lcm: proven: "+strings.Join(pr.Lines, ", "))
	return Result{Message: s.done, SSH: pr}, nil
}

func hasOtherMarks(main, feature string) bool {
	reverted, _ := sshdcfg.Revert(main, feature, false)
	return sshdcfg.HasMarks(reverted)
}

// overrides names the lines that beat LCM's drop-in for s.overrideKeyword,
// from the configuration as it is now.
func overrides(ctx context.Context, o sshOps, s sshSpec) []string {
	raw, code, err := o.dump(ctx)
	if err != nil || code != 0 {
		return []string{"(the configuration files could not be read to say which line wins)"}
	}
	files, err := sshdcfg.ParseDump(raw)
	if err != nil {
		return []string{"(" + err.Error() + ")"}
	}
	var res []string
	if !sshdcfg.HasDropInInclude(files[0].Content) {
		res = append(res, fmt.Sprintf("%s has no %q, so sshd never reads %s (run again with fix_main_config to add it)", sshdcfg.MainPath, sshdcfg.IncludeLine, s.dropIn))
	}
	trace := sshdcfg.Trace(files, s.overrideKeyword)
	if w, ok := sshdcfg.Winner(trace); ok && w.Path != s.dropIn {
		res = append(res, w.String()+" wins: it is read first")
	}
	for _, t := range trace {
		if t.Match != "" && t.Path != s.dropIn && (s.wrongValue == "" || t.Value == s.wrongValue) {
			res = append(res, t.String()+" applies to this connection")
		}
	}
	if len(res) > 0 && !s.editMain {
		res = append(res, "LCM can comment these lines out with a marked, reversible edit: harden again with fix_main_config")
	}
	return res
}

// sshConn is the SSH_CONNECTION of LCM's session: what sshd -T -C
// evaluates Match blocks against.
type sshConn struct{ addr, laddr, lport string }

// sshConnection reads the session's SSH_CONNECTION ("client port server
// port"). Without it (a transport that is not sshd) the loopback stands in
// and the output says so.
func sshConnection(ctx context.Context, ex remote.Executor, out io.Writer) sshConn {
	raw, _, err := capture(ctx, ex, out, remote.Command{Cmd: `echo "$SSH_CONNECTION"`})
	f := strings.Fields(raw)
	if err != nil || len(f) != 4 {
		fmt.Fprintln(out, "lcm: no SSH_CONNECTION in the session; Match blocks are evaluated for a connection from 127.0.0.1")
		return sshConn{addr: "127.0.0.1", laddr: "127.0.0.1", lport: "22"}
	}
	return sshConn{addr: f[0], laddr: f[2], lport: f[3]}
}

// readBack fills pr from `sshd -T -C` for user on conn.
func readBack(ctx context.Context, o sshOps, c sshConn, user string, pr *SSHProof) {
	spec := fmt.Sprintf("user=%s,host=%s,addr=%s,laddr=%s,lport=%s", user, c.addr, c.addr, c.laddr, c.lport)
	fmt.Fprintf(o.out, "lcm: reading back the effective configuration: sshd -T -C %s\n", spec)
	raw, code, err := capture(ctx, o.ex, o.out, o.effective(spec))
	switch {
	case err != nil:
		pr.Missing = "sshd -T did not run: " + err.Error()
		return
	case code != 0:
		pr.Missing = fmt.Sprintf("sshd -T -C exited with code %d (see the output)", code)
		return
	}
	eff, err := sshdcfg.ParseEffective(raw)
	if err != nil {
		pr.Missing = "sshd -T printed nothing usable: " + err.Error()
		return
	}
	pr.PasswordAuth = eff.Get("passwordauthentication")
	if pr.PasswordAuth == "" {
		pr.Missing = "sshd -T printed no passwordauthentication line"
		return
	}
	pr.Proven = true
	pr.RootLogin = eff.Get("permitrootlogin")
	if pr.RootLogin == "without-password" { // the old name sshd -T still prints
		pr.RootLogin = "prohibit-password"
	}
	pr.Ports = nil
	for _, v := range eff["port"] {
		var n int
		if _, err := fmt.Sscanf(v, "%d", &n); err == nil {
			pr.Ports = append(pr.Ports, n)
		}
	}
	if len(pr.Ports) > 0 {
		pr.Port = pr.Ports[0]
	}
	pr.Lines = eff.Lines(sshProofKeywords...)
}

// freshLoginTries and freshLoginPause bound the wait for sshd after a
// reload: a SIGHUP makes sshd re-execute itself, and for that moment new
// connections are refused.
const (
	freshLoginTries = 10
	freshLoginPause = 300 * time.Millisecond
)

// proveFreshLogin opens a new connection with the management key and
// reaches sudo: `sudo -n true` in full mode, the helper in restricted mode.
func proveFreshLogin(ctx context.Context, env *Env, out io.Writer) error {
	return proveFreshLoginWith(ctx, env, out, freshLoginTries, freshLoginPause, 0)
}

// proveFreshLoginWith is proveFreshLogin with its own bounds: tries
// attempts pause apart, each dial bounded by perTry (0: the transport's
// own timeout). A firewall that drops LCM's packets makes a dial hang
// rather than fail, so the firewall's proof bounds each try.
func proveFreshLoginWith(ctx context.Context, env *Env, out io.Writer, tries int, pause, perTry time.Duration) error {
	var last error
	for i := 0; i < tries; i++ {
		if i > 0 && !sleepCtx(ctx, pause) {
			return ctx.Err()
		}
		dctx, cancel := ctx, context.CancelFunc(func() {})
		if perTry > 0 {
			dctx, cancel = context.WithTimeout(ctx, perTry)
		}
		ex, err := env.Dial(dctx, env.Creds.User, env.Creds.PrivateKey)
		cancel()
		if err != nil {
			last = err
			continue
		}
		code, err := run(ctx, ex, out, remote.Command{Cmd: "sudo -n true 2>/dev/null || sudo -n " + HelperPath + " version"})
		ex.Close()
		if err != nil {
			last = err
			continue
		}
		if code != 0 {
			return fmt.Errorf("logged in, but sudo -n failed with exit code %d", code)
		}
		fmt.Fprintf(out, "lcm: fresh login as %s with the management key reaches sudo\n", env.Creds.User)
		return nil
	}
	return fmt.Errorf("login as %s: %w", env.Creds.User, last)
}

// readFileScript prints "present" and the file, or "absent".
const readFileScript = `if [ -f "$1" ]; then echo present; cat "$1"; else echo absent; fi`

func readOne(ctx context.Context, ex remote.Executor, out io.Writer, path string) (string, bool, error) {
	raw, code, err := capture(ctx, ex, out, remote.Command{Cmd: "sh -c " + shQuote(readFileScript) + " lcm " + shQuote(path), Sudo: true})
	if err != nil {
		return "", false, err
	}
	if code != 0 {
		return "", false, failf("reading %s failed with exit code %d (is sudo allowed?)", path, code)
	}
	head, rest, _ := strings.Cut(raw, "\n")
	switch head {
	case "present":
		return rest, true, nil
	case "absent":
		return "", false, nil
	}
	return "", false, failf("reading %s: unexpected output", path)
}

func readFiles(ctx context.Context, o sshOps, paths ...string) ([]fileState, error) {
	res := make([]fileState, len(paths))
	for i, p := range paths {
		c, ok, err := o.read(ctx, p)
		if err != nil {
			return nil, err
		}
		res[i] = fileState{path: p, content: c, exists: ok}
	}
	return res, nil
}

// putFileScript writes (or with $2 = absent removes) file $1, keeping the
// previous version until `sshd -t` accepts the result: a refused change is
// undone at once. $3 is the content, base64.
const putFileScript = `set -eu
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
F="$1"; D=$(dirname "$F"); P=""
mkdir -p "$D"
if [ -f "$F" ]; then P="$F.lcm-prev"; cp -p "$F" "$P"; fi
if [ "$2" = absent ]; then
  rm -f "$F"
else
  T=$(mktemp "$D/.lcm-tmp.XXXXXX")
  printf '%s' "$3" | base64 -d > "$T"
  chmod 0644 "$T"; chown root:root "$T"
  mv -f "$T" "$F"
fi
if ! sshd -t; then
  if [ -n "$P" ]; then mv -f "$P" "$F"; else rm -f "$F"; fi
  echo "lcm: sshd -t refused the new $F; the previous version is back" >&2
  exit 3
fi
if [ -n "$P" ]; then rm -f "$P"; fi
if [ "$2" = absent ]; then echo "lcm: removed $F (sshd -t ok)"; else echo "lcm: wrote $F (sshd -t ok)"; fi`

// putFile writes content to path (or removes it when !exists), checked by
// sshd -t.
func putFile(ctx context.Context, ex remote.Executor, out io.Writer, path, content string, exists bool) error {
	mode := "present"
	if !exists {
		mode = "absent"
	}
	cmd := "sh -c " + shQuote(putFileScript) + " lcm " + shQuote(path) + " " + mode + " " + base64.StdEncoding.EncodeToString([]byte(content))
	code, err := run(ctx, ex, out, remote.Command{Cmd: cmd, Sudo: true})
	if err != nil {
		return err
	}
	if code == 3 {
		return failf("sshd -t refused the new %s; it was restored", path)
	}
	if code != 0 {
		return failf("writing %s failed with exit code %d", path, code)
	}
	return nil
}

// reloadScript makes sshd read its configuration again: systemd's reload
// of ssh or sshd, nothing for a socket-activated sshd (every connection
// starts a new one), else SIGHUP to the pid in sshd's pid file.
const reloadScript = `PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
  for u in ssh.service sshd.service; do
    if systemctl is-active --quiet "$u"; then systemctl reload "$u" && echo "lcm: $u reloaded" && exit 0; exit 1; fi
  done
  if systemctl is-active --quiet ssh.socket; then echo "lcm: ssh.socket: each connection starts sshd with the new configuration"; exit 0; fi
fi
# sshd rewrites its pid file while it re-executes after a SIGHUP: wait for a
# file that is there, then for the new one (up to 5 s) before returning.
i=0
while [ $i -lt 50 ]; do
  for p in /run/sshd.pid /var/run/sshd.pid; do
    pid=$(cat "$p" 2>/dev/null || true)
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
      kill -HUP "$pid"; echo "lcm: sent SIGHUP to sshd (pid $pid)"
      sleep 0.2; j=0
      while [ $j -lt 50 ] && ! [ -s "$p" ]; do sleep 0.1; j=$((j+1)); done
      exit 0
    fi
  done
  sleep 0.1; i=$((i+1))
done
echo "lcm: no running sshd found to reload" >&2; exit 1`

func reloadSSHD(ctx context.Context, ex remote.Executor, out io.Writer) error {
	code, err := run(ctx, ex, out, remote.Command{Cmd: reloadScript, Sudo: true})
	if err != nil {
		return err
	}
	if code != 0 {
		return errors.New("the reload exited with code " + fmt.Sprint(code))
	}
	return nil
}

// HelperPath is where LCM installs its validating helper (cmd/helper).
const HelperPath = helper.HelperPath

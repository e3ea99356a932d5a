package fleetsim

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
)

// ManagementUser is the account LCM's join creates (domain.ManagementUser;
// repeated here so the simulator stays free of LCM's domain package).
const ManagementUser = "lcm"

// sudoRulePath is the file LCM's join writes; the rule it reads back.
const sudoRulePath = "/etc/sudoers.d/lcm"

// hostState is what a simulated host remembers between commands: the
// users join created with their authorized keys, their sudo rules, how
// many of the upgradable packages were upgraded, and its boots.
type hostState struct {
	users     map[string]*simUser
	sudoRules map[string]bool
	upgraded  int
	boot      int
	downUntil time.Time
	// failUpgrades makes package upgrades fail (SetFailUpgrades).
	failUpgrades bool
}

// simUser is an account created on the host.
type simUser struct {
	anyKey bool            // a non-pristine host accepts any key
	keys   map[string]bool // marshalled public keys in authorized_keys
}

func newHostState(pristine bool) hostState {
	s := hostState{users: map[string]*simUser{}, sudoRules: map[string]bool{}}
	if !pristine {
		s.users[ManagementUser] = &simUser{anyKey: true, keys: map[string]bool{}}
		s.sudoRules[ManagementUser] = true
	}
	return s
}

// managedUser reports whether user is an account the host's state decides
// on (the management user); every other login is a bootstrap account.
func (i *Instance) managedUser(user string) bool { return user == ManagementUser }

// userExists reports whether id(1) would know user: root and bootstrap
// accounts always, the management user once created.
func (i *Instance) userExists(user string) bool {
	if user != ManagementUser {
		return true
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.state.users[user] != nil
}

func (i *Instance) keyAuthorized(user string, k ssh.PublicKey) bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	u := i.state.users[user]
	return u != nil && (u.anyKey || u.keys[string(k.Marshal())])
}

// maySudo reports whether user can run sudo without a password.
func (i *Instance) maySudo(user string) bool {
	if user == "root" || user != ManagementUser {
		return true
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.state.sudoRules[user]
}

// Down reports whether the host is rebooting (its port refuses, and an
// agent simulated on it is gone).
func (i *Instance) Down() bool { return i.down() }

// down reports whether the host is rebooting (its port refuses).
func (i *Instance) down() bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	return time.Now().Before(i.state.downUntil)
}

// Upgraded is how many of the upgradable packages the host has upgraded.
func (i *Instance) Upgraded() int {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.state.upgraded
}

// Boots is how many times the host rebooted.
func (i *Instance) Boots() int {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.state.boot
}

// Joined reports whether the management user exists with its sudo rule.
func (i *Instance) Joined() bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.state.users[ManagementUser] != nil && i.state.sudoRules[ManagementUser]
}

func (i *Instance) bootID() string {
	i.mu.Lock()
	boot := i.state.boot
	i.mu.Unlock()
	sum := sha256.Sum256([]byte(fmt.Sprintf("fleetsim-boot/%d/%d/%d", i.fleet.cfg.Seed, i.Index, boot)))
	return fmt.Sprintf("%x-%x-%x-%x-%x", sum[0:4], sum[4:6], sum[6:8], sum[8:10], sum[10:16])
}

// effectiveUser is whom a command runs as.
func effectiveUser(r *Request) string {
	if r.Sudo || r.User == "" {
		return "root"
	}
	return r.User
}

// DebianOptions shape a simulated Debian 12 host.
type DebianOptions struct {
	RefreshOptions
	// KeepPending makes package upgrades succeed without changing the
	// host, so every run of the same upgrade does the same work (for
	// repeated benchmark rounds).
	KeepPending bool
	// UpgradeTime is how long the security upgrade script takes (its
	// output spread over it); 0 means Config.Latency. Benchmarks set it
	// with Latency 0, so only the upgrade itself takes time.
	UpgradeTime time.Duration
}

// DebianTable answers everything LCM runs on a Debian 12 host, with the
// host's state kept per instance: the join script (creates the
// management user, installs its key, writes and reads back the sudo
// rule; with Config.Pristine the new user then logs in only with that
// key), the join's proof (`id -un && sudo -n true && sudo -n cat …`), the
// rollback, key rotation's add/remove scripts, the facts collector, the
// package listing (dpkg-query, apt-get -s, held packages), the package
// manager detection, the security upgrade script and the other package
// actions (the host's package versions move with them), kernel cleanup,
// reboot (a new boot id, connections dropped, the port refusing for
// Config.RebootDowntime) and decommission.
func DebianTable(o DebianOptions) *Table {
	t := DefaultTable()
	HandleRefresh(t, o.RefreshOptions)
	o.RefreshOptions = o.normalized()
	handleDebianHost(t, o)
	return t
}

func handleDebianHost(t *Table, o DebianOptions) {
	t.Handle("rm", respondRm)
	t.Handle("apt-mark", simple(func(r *Request) (string, int) {
		if len(r.Args) > 2 && (r.Args[1] == "hold" || r.Args[1] == "unhold") {
			var b strings.Builder
			for _, n := range r.Args[2:] {
				if r.Args[1] == "hold" {
					fmt.Fprintf(&b, "%s set on hold.\n", n)
				} else {
					fmt.Fprintf(&b, "Canceled hold on %s.\n", n)
				}
			}
			return b.String(), 0
		}
		return "", 0
	}))
	for _, name := range []string{"apt-get", "apt"} {
		t.Handle(name, func(ctx context.Context, r *Request) int {
			if r.Instance.FailingUpgrades() && hasArg(r.Args, "upgrade", "dist-upgrade", "full-upgrade") && !hasArg(r.Args, "-s", "--simulate") {
				return failUpgrade(r)
			}
			code := respondApt(ctx, r)
			if code == 0 && !o.KeepPending && !hasArg(r.Args, "-s", "--simulate") {
				if hasArg(r.Args, "upgrade", "dist-upgrade", "full-upgrade") {
					r.Instance.setUpgraded(o.Upgradable)
				}
			}
			return code
		})
	}
	// The package manager detection of package jobs.
	t.HandleFunc(func(cmd string) bool {
		return strings.HasPrefix(cmd, "for m in apt-get dnf") && strings.Contains(cmd, "command -v") && !strings.Contains(cmd, factsMarker)
	}, simple(func(*Request) (string, int) { return "apt-get\n", 0 }))
	t.HandleFunc(isJoinScript, respondJoin)
	t.HandleFunc(func(cmd string) bool { return strings.Contains(cmd, "rolled back sudo rule and key") }, respondRollback)
	t.HandleFunc(func(cmd string) bool { return strings.Contains(cmd, `"lcm: new key added"`) }, respondAddKey)
	t.HandleFunc(func(cmd string) bool { return strings.Contains(cmd, `"lcm: key removed"`) }, respondRemoveKey)
	t.HandleFunc(func(cmd string) bool {
		return strings.Contains(cmd, "apt-get -s") && strings.Contains(cmd, "install --only-upgrade") && strings.Contains(cmd, "-security")
	}, func(ctx context.Context, r *Request) int { return respondSecurityUpgrade(ctx, r, o) })
	t.HandleFunc(func(cmd string) bool {
		return strings.Contains(cmd, "linux-image-") && strings.Contains(cmd, "purge") && strings.Contains(cmd, "uname -r")
	}, simple(func(*Request) (string, int) {
		return "lcm: no old kernels (running 6.1.0-31-amd64, newest 6.1.0-31-amd64)\n", 0
	}))
	t.HandleFunc(func(cmd string) bool {
		return strings.Contains(cmd, "systemctl reboot") || cmd == "reboot" || strings.HasPrefix(cmd, "shutdown -r")
	}, respondReboot)
}

func (o DebianOptions) normalized() RefreshOptions {
	r := o.RefreshOptions
	if r.Upgradable <= 0 {
		r.Upgradable = 40
	}
	if r.Security < 0 || r.Security > r.Upgradable {
		r.Security = 0
	} else if r.Security == 0 {
		r.Security = min(12, r.Upgradable)
	}
	return r
}

func hasArg(args []string, want ...string) bool {
	for _, a := range args {
		for _, w := range want {
			if a == w {
				return true
			}
		}
	}
	return false
}

func (i *Instance) setUpgraded(n int) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.state.upgraded = max(i.state.upgraded, n)
}

// respondID is id(1): -u/-g/-G with -n, or the full line, for the login
// user (root under sudo) or a named user.
func respondID(r *Request) (string, int) {
	flags, operand := "", ""
	for _, a := range r.Args[1:] {
		if strings.HasPrefix(a, "-") {
			flags += strings.TrimLeft(a, "-")
		} else if operand == "" {
			operand = a
		}
	}
	name := operand
	if name == "" {
		name = effectiveUser(r)
	}
	if !r.Instance.userExists(name) {
		return fmt.Sprintf("id: '%s': no such user\n", name), 1
	}
	uid, groups := 1000, []string{name, "sudo"}
	gids := []int{1000, 27}
	switch name {
	case "root":
		uid, groups, gids = 0, []string{"root"}, []int{0}
	case ManagementUser:
		uid, groups, gids = 1001, []string{name}, []int{1001}
	}
	named := strings.Contains(flags, "n")
	switch {
	case strings.Contains(flags, "u"):
		if named {
			return name + "\n", 0
		}
		return fmt.Sprint(uid) + "\n", 0
	case strings.Contains(flags, "G"):
		out := make([]string, len(groups))
		for j := range groups {
			if named {
				out[j] = groups[j]
			} else {
				out[j] = fmt.Sprint(gids[j])
			}
		}
		return strings.Join(out, " ") + "\n", 0
	case strings.Contains(flags, "g"):
		if named {
			return groups[0] + "\n", 0
		}
		return fmt.Sprint(gids[0]) + "\n", 0
	}
	parts := make([]string, len(groups))
	for j := range groups {
		parts[j] = fmt.Sprintf("%d(%s)", gids[j], groups[j])
	}
	return fmt.Sprintf("uid=%d(%s) gid=%d(%s) groups=%s\n", uid, name, gids[0], groups[0], strings.Join(parts, ",")), 0
}

// respondCat reads stdin without arguments, else the files a Debian host
// has that LCM reads.
func respondCat(ctx context.Context, r *Request) int {
	words := splitWords(r.Cmd)
	if len(words) < 2 {
		_, _ = io.Copy(r.Stdout, r.Stdin)
		return 0
	}
	if !sleepCtx(ctx, r.Config.Latency) {
		return 137
	}
	code := 0
	for _, path := range words[1:] {
		out, err := r.Instance.readFile(path, effectiveUser(r))
		if err != "" {
			fmt.Fprintf(r.Stderr, "cat: %s: %s\n", path, err)
			code = 1
			continue
		}
		_, _ = io.WriteString(r.Stdout, out)
	}
	return code
}

func (i *Instance) readFile(path, user string) (string, string) {
	switch path {
	case "/etc/os-release", "/usr/lib/os-release":
		return osRelease, ""
	case "/etc/debian_version":
		return "12.9\n", ""
	case "/etc/hostname", "/proc/sys/kernel/hostname":
		return i.Hostname + "\n", ""
	case "/proc/sys/kernel/random/boot_id":
		return i.bootID() + "\n", ""
	case sudoRulePath:
		if user != "root" {
			return "", "Permission denied"
		}
		i.mu.Lock()
		ok := i.state.sudoRules[ManagementUser]
		i.mu.Unlock()
		if !ok {
			return "", "No such file or directory"
		}
		return ManagementUser + " ALL=(ALL:ALL) NOPASSWD: ALL\n", ""
	}
	return "", "No such file or directory"
}

// respondRm removes the sudo rule (root only) or the login user's
// authorized_keys; other paths are accepted silently like rm -f.
func respondRm(ctx context.Context, r *Request) int {
	if !sleepCtx(ctx, r.Config.Latency) {
		return 137
	}
	user := effectiveUser(r)
	inst := r.Instance
	for _, path := range splitWords(r.Cmd)[1:] {
		switch {
		case path == sudoRulePath:
			if user != "root" {
				fmt.Fprintf(r.Stderr, "rm: cannot remove '%s': Permission denied\n", path)
				return 1
			}
			inst.mu.Lock()
			delete(inst.state.sudoRules, ManagementUser)
			inst.mu.Unlock()
		case strings.HasSuffix(path, "/.ssh/authorized_keys"):
			inst.mu.Lock()
			if u := inst.state.users[r.User]; u != nil {
				u.keys, u.anyKey = map[string]bool{}, false
			}
			inst.mu.Unlock()
		}
	}
	return 0
}

// isJoinScript recognises LCM's join script by what it does: create a
// user, validate a sudo rule with visudo and install it.
func isJoinScript(cmd string) bool {
	return strings.Contains(cmd, "useradd") && strings.Contains(cmd, "visudo -cf") && strings.Contains(cmd, "authorized_keys")
}

// respondJoin performs the join script: $1 user, $2 key line.
func respondJoin(ctx context.Context, r *Request) int {
	if !sleepCtx(ctx, r.Config.Latency) {
		return 137
	}
	if effectiveUser(r) != "root" {
		fmt.Fprintln(r.Stderr, "useradd: Permission denied.")
		return 1
	}
	if len(r.Argv) < 3 {
		fmt.Fprintln(r.Stderr, "sh: 2: U: parameter not set")
		return 2
	}
	user, keyLine := r.Argv[1], r.Argv[2]
	key, _, _, _, err := ssh.ParseAuthorizedKey([]byte(keyLine))
	inst := r.Instance
	inst.mu.Lock()
	u := inst.state.users[user]
	created := u == nil
	if created {
		u = &simUser{keys: map[string]bool{}}
		inst.state.users[user] = u
	}
	if err == nil {
		u.keys[string(key.Marshal())] = true
	}
	inst.state.sudoRules[user] = true
	inst.mu.Unlock()
	if created {
		fmt.Fprintf(r.Stdout, "lcm: created user %s\n", user)
	} else {
		fmt.Fprintf(r.Stdout, "lcm: user %s exists\n", user)
	}
	fmt.Fprintf(r.Stdout, "lcm: key installed in /home/%s/.ssh/authorized_keys\n", user)
	fmt.Fprintf(r.Stdout, "/etc/sudoers.d/.lcm.%06d: parsed OK\n", r.Rand.IntN(1000000))
	fmt.Fprintf(r.Stdout, "lcm: %s now reads:\n%s ALL=(ALL:ALL) NOPASSWD: ALL\n", sudoRulePath, user)
	return 0
}

// respondRollback undoes the join: the sudo rule and the key ($1, $2).
func respondRollback(ctx context.Context, r *Request) int {
	if !sleepCtx(ctx, r.Config.Latency) {
		return 137
	}
	if len(r.Argv) >= 3 {
		inst := r.Instance
		inst.mu.Lock()
		delete(inst.state.sudoRules, r.Argv[1])
		if u := inst.state.users[r.Argv[1]]; u != nil {
			if k, _, _, _, err := ssh.ParseAuthorizedKey([]byte(r.Argv[2])); err == nil {
				delete(u.keys, string(k.Marshal()))
			}
		}
		inst.mu.Unlock()
	}
	fmt.Fprintln(r.Stdout, "lcm: rolled back sudo rule and key")
	return 0
}

// respondAddKey adds $1 to the login user's authorized_keys.
func respondAddKey(ctx context.Context, r *Request) int {
	return editKeys(ctx, r, true, "lcm: new key added")
}

// respondRemoveKey removes $1 from the login user's authorized_keys.
func respondRemoveKey(ctx context.Context, r *Request) int {
	return editKeys(ctx, r, false, "lcm: key removed")
}

func editKeys(ctx context.Context, r *Request, add bool, msg string) int {
	if !sleepCtx(ctx, r.Config.Latency) {
		return 137
	}
	if len(r.Argv) < 2 {
		fmt.Fprintln(r.Stderr, "sh: 1: 1: parameter not set")
		return 2
	}
	k, _, _, _, err := ssh.ParseAuthorizedKey([]byte(r.Argv[1]))
	if err != nil {
		fmt.Fprintln(r.Stderr, "lcm: not a key line")
		return 1
	}
	inst := r.Instance
	inst.mu.Lock()
	u := inst.state.users[r.User]
	if u == nil {
		u = &simUser{keys: map[string]bool{}}
		inst.state.users[r.User] = u
	}
	if add {
		u.keys[string(k.Marshal())] = true
	} else {
		delete(u.keys, string(k.Marshal()))
	}
	inst.mu.Unlock()
	fmt.Fprintln(r.Stdout, msg)
	return 0
}

// respondSecurityUpgrade is pkgmgr's APT security upgrade script: the
// packages whose candidate comes from bookworm-security are installed with
// apt-get's console output spread over Config.Latency; the host's versions
// move unless o.KeepPending. Config.FailRate fails it like apt (exit 100).
func respondSecurityUpgrade(ctx context.Context, r *Request, o DebianOptions) int {
	if r.User == ManagementUser && !r.Instance.maySudo(r.User) {
		fmt.Fprintln(r.Stderr, "sudo: a password is required")
		return 1
	}
	if r.Instance.FailingUpgrades() {
		return failUpgrade(r)
	}
	inst := r.Instance
	done := inst.Upgraded()
	n := min(o.Upgradable, r.Config.Packages)
	var pkgs []int
	for j := done; j < min(o.Security, n); j++ {
		pkgs = append(pkgs, j)
	}
	took := o.UpgradeTime
	if took <= 0 {
		took = r.Config.Latency
	}
	if len(pkgs) == 0 {
		if !sleepCtx(ctx, took) {
			return 137
		}
		fmt.Fprintln(r.Stdout, "lcm: no security updates")
		return 0
	}
	names := make([]string, len(pkgs))
	for j, p := range pkgs {
		names[j] = packageAt(p).name
	}
	fmt.Fprintf(r.Stdout, "lcm: security updates: %s\n", strings.Join(names, " "))
	lines := installLines(pkgs, n-done-len(pkgs))
	const chunks = 10
	step := took / chunks
	per := (len(lines) + chunks - 1) / chunks
	fail := r.Config.FailRate > 0 && r.Rand.Float64() < r.Config.FailRate
	for c := 0; c < chunks; c++ {
		if !sleepCtx(ctx, step) {
			return 137
		}
		lo, hi := min(c*per, len(lines)), min((c+1)*per, len(lines))
		_, _ = io.WriteString(r.Stdout, strings.Join(lines[lo:hi], ""))
		if fail && c == chunks/2 {
			_, _ = io.WriteString(r.Stderr, "E: Failed to fetch http://deb.debian.org/debian-security/pool/updates/main/o/openssl/libssl3_3.0.15-1~deb12u1_amd64.deb  Connection failed [IP: 151.101.2.132 80]\n"+
				"E: Unable to fetch some archives, maybe run apt-get update or try with --fix-missing?\n")
			return 100
		}
	}
	if !o.KeepPending {
		inst.setUpgraded(o.Security)
	}
	return 0
}

// installLines is apt-get install --only-upgrade's output for pkgs (as in
// internal/pkgmgr/testdata's recorded runs: Get, Preparing, Unpacking,
// Setting up), notUpgraded naming the packages left.
func installLines(pkgs []int, notUpgraded int) []string {
	lines := []string{"Reading package lists...\n", "Building dependency tree...\n", "Reading state information...\n",
		"The following packages will be upgraded:\n"}
	var names []string
	for _, p := range pkgs {
		names = append(names, packageAt(p).name)
	}
	lines = append(lines, "  "+strings.Join(names, " ")+"\n",
		fmt.Sprintf("%d upgraded, 0 newly installed, 0 to remove and %d not upgraded.\n", len(pkgs), max(notUpgraded, 0)),
		fmt.Sprintf("Need to get %d kB of archives.\n", 180*len(pkgs)))
	for j, i := range pkgs {
		p := packageAt(i)
		lines = append(lines, fmt.Sprintf("Get:%d http://deb.debian.org/debian-security bookworm-security/main amd64 %s amd64 %s.1 [%d kB]\n", j+1, p.name, p.version, 50+i%900))
	}
	lines = append(lines, fmt.Sprintf("Fetched %d kB in 0s (%d kB/s)\n", 180*len(pkgs), 9000))
	for _, i := range pkgs {
		p := packageAt(i)
		lines = append(lines,
			fmt.Sprintf("Preparing to unpack .../%s_%s.1_amd64.deb ...\n", p.name, p.version),
			fmt.Sprintf("Unpacking %s:amd64 (%s.1) over (%s) ...\n", p.name, p.version, p.version))
	}
	for _, i := range pkgs {
		p := packageAt(i)
		lines = append(lines, fmt.Sprintf("Setting up %s:amd64 (%s.1) ...\n", p.name, p.version))
	}
	lines = append(lines, "Processing triggers for libc-bin (2.36-9+deb12u9) ...\n")
	return lines
}

// respondReboot schedules a reboot: 2 s later (LCM's command sleeps 2 s
// first) the host gets a new boot id, drops its connections and refuses
// new ones for Config.RebootDowntime.
func respondReboot(ctx context.Context, r *Request) int {
	if effectiveUser(r) != "root" {
		fmt.Fprintln(r.Stderr, "Failed to set wall message, ignoring: Interactive authentication required.\nFailed to reboot system via logind: Interactive authentication required.")
		return 1
	}
	inst := r.Instance
	f := inst.fleet
	down := f.cfg.RebootDowntime
	if down <= 0 {
		down = 2 * time.Second
	}
	go func() {
		if !sleepCtx(f.ctx, 2*time.Second) {
			return
		}
		inst.mu.Lock()
		inst.state.boot++
		inst.state.downUntil = time.Now().Add(down)
		inst.mu.Unlock()
		f.dropInstance(inst)
	}()
	return 0
}

// SetFailUpgrades makes the host's package upgrades (the security upgrade
// script and apt-get upgrade) fail with dpkg's exit code 100 until turned
// off, as a host with a broken package would: the failure mode of staged
// rollout tests.
func (i *Instance) SetFailUpgrades(on bool) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.state.failUpgrades = on
}

// FailingUpgrades reports SetFailUpgrades.
func (i *Instance) FailingUpgrades() bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.state.failUpgrades
}

func failUpgrade(r *Request) int {
	fmt.Fprintln(r.Stderr, "E: Sub-process /usr/bin/dpkg returned an error code (1)")
	return 100
}

package firewall_test

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/credbox"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/firewall"
	"github.com/lcmproject/lcm/internal/remote"
	"github.com/lcmproject/lcm/internal/sshexec"
	"github.com/lcmproject/lcm/internal/testutil"
)

// firewallHostIndex is the test host of the firewall area: it runs in its
// own network namespace (testhosts.sh up-netns 16, 198.18.16.2), so what
// these tests switch on never reaches the machine's own firewall.
const firewallHostIndex = 16

// firewallHost joins the management user on host 16 and returns the
// test's own root connection and an Env that runs as LCM does.
func firewallHost(t *testing.T) (root remote.Executor, env *actions.Env, out *bytes.Buffer) {
	t.Helper()
	h := testutil.TestHostAt(t, firewallHostIndex)
	if !testutil.InOwnNetns(h.Host) {
		// Never fall back to a host in the machine's namespace.
		testutil.Unavailable(t, "test host %d (%s) does not run in its own network namespace: run testhosts.sh up-netns %d",
			firewallHostIndex, h.Addr, firewallHostIndex)
	}
	testutil.LockTestHost(t, h)
	t.Cleanup(func() { testutil.ResetTestHost(t, h) })
	ctx := context.Background()
	dial := func(ctx context.Context, user, key string) (remote.Executor, error) {
		s, err := ssh.ParsePrivateKey([]byte(key))
		if err != nil {
			return nil, err
		}
		return sshexec.Dial(ctx, sshexec.Target{Addr: h.Addr, User: user, Signer: s, HostKey: h.HostKeys[0]})
	}
	rootEx, err := dial(ctx, "root", string(h.PrivateKey))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rootEx.Close() })
	key, err := actions.NewManagementKey("lcm@firewall-test")
	if err != nil {
		t.Fatal(err)
	}
	out = &bytes.Buffer{}
	jenv := &actions.Env{Exec: rootEx, Dial: dial, Out: out, Creds: credbox.Credentials{User: "root", PrivateKey: string(h.PrivateKey), NewPrivateKey: key}}
	if _, err := (actions.Join{}).Run(ctx, jenv); err != nil {
		t.Fatalf("join: %v\n%s", err, out)
	}
	lcm, err := dial(ctx, domain.ManagementUser, key)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lcm.Close() })
	env = &actions.Env{Exec: lcm, Dial: dial, Out: out, Creds: credbox.Credentials{User: domain.ManagementUser, PrivateKey: key, Addr: h.Addr}}
	return rootEx, env, out
}

func sh(t *testing.T, ex remote.Executor, cmd string) string {
	t.Helper()
	var o, e bytes.Buffer
	res, err := ex.Run(context.Background(), remote.Command{Cmd: cmd, Stdout: &o, Stderr: &e})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("%s: exit %d, %v\n%s%s", cmd, res.ExitCode, err, o.String(), e.String())
	}
	return o.String()
}

func fw(t *testing.T, env *actions.Env, op string, rules ...firewall.Rule) (actions.Result, error) {
	t.Helper()
	p, _ := json.Marshal(actions.FirewallParams{Op: op, Rules: rules})
	env.Params = p
	return (actions.FirewallJob{}).Run(context.Background(), env)
}

func mustFw(t *testing.T, env *actions.Env, out *bytes.Buffer, op string, rules ...firewall.Rule) *actions.FirewallProof {
	t.Helper()
	res, err := fw(t, env, op, rules...)
	if err != nil {
		t.Fatalf("firewall %s: %v\n%s", op, err, out)
	}
	if res.Firewall == nil || !res.Firewall.Proven {
		t.Fatalf("firewall %s: no proof: %+v", op, res.Firewall)
	}
	return res.Firewall
}

func freshLogin(t *testing.T, env *actions.Env) error {
	t.Helper()
	ex, err := env.Dial(context.Background(), env.Creds.User, env.Creds.PrivateKey)
	if err != nil {
		return err
	}
	ex.Close()
	return nil
}

// lcmAddr is the machine side of host 16's veth pair: LCM's own address
// as the host sees it.
const lcmAddr = "198.18.16.1"

func TestFirewallOnNetnsTestHost(t *testing.T) {
	root, env, out := firewallHost(t)
	web := firewall.Rule{Port: 8080, Proto: firewall.TCP, Comment: "web"}

	t.Run("ufw", func(t *testing.T) {
		pr := mustFw(t, env, out, domain.FirewallStatus)
		if pr.Tool != firewall.UFW || pr.Active {
			t.Fatalf("before: %+v", pr)
		}
		pr = mustFw(t, env, out, domain.FirewallEnable)
		if !pr.Active || !pr.FreshLogin || pr.LCMRule == nil || pr.LCMRule.Source != lcmAddr+"/32" || pr.LCMRule.Port != 22 {
			t.Fatalf("enable: %+v\n%s", pr, out)
		}
		status := sh(t, root, "ufw status")
		if !strings.Contains(status, "Status: active") || !strings.Contains(status, "22/tcp") || !strings.Contains(status, lcmAddr) {
			t.Fatalf("ufw status after enable:\n%s", status)
		}
		if err := freshLogin(t, env); err != nil {
			t.Fatalf("a fresh login after enabling: %v", err)
		}
		pr = mustFw(t, env, out, domain.FirewallAdd, web)
		if !(firewall.State{Rules: pr.Rules}).Has(web) {
			t.Fatalf("added rule not read back: %+v", pr.Rules)
		}
		if s := sh(t, root, "ufw status"); !strings.Contains(s, "8080/tcp") {
			t.Fatalf("ufw status lacks 8080/tcp:\n%s", s)
		}
		if s := sh(t, root, "nft list ruleset"); !strings.Contains(s, "tcp dport 8080") {
			t.Fatalf("nft ruleset lacks 8080:\n%s", s)
		}

		// The listening ports next to the rules: sshd, reachable only from
		// LCM's address.
		res, err := (actions.ListeningPortsScan{}).Run(context.Background(), env)
		if err != nil {
			t.Fatalf("scan: %v\n%s", err, out)
		}
		var sshd *firewall.Socket
		for i, s := range res.Ports.Sockets {
			if s.Port == 22 && s.Proto == "tcp" {
				sshd = &res.Ports.Sockets[i]
			}
		}
		if sshd == nil || sshd.Process != "sshd" || sshd.Open != firewall.OpenRestricted || res.Ports.Firewall == nil || !res.Ports.Firewall.Active {
			t.Fatalf("scan: sshd %+v, firewall %+v (all %+v)", sshd, res.Ports.Firewall, res.Ports.Sockets)
		}

		pr = mustFw(t, env, out, domain.FirewallRemove, web)
		if (firewall.State{Rules: pr.Rules}).Has(web) || !pr.FreshLogin {
			t.Fatalf("remove: %+v", pr)
		}
		pr = mustFw(t, env, out, domain.FirewallDisable)
		if pr.Active || !strings.Contains(sh(t, root, "ufw status"), "Status: inactive") {
			t.Fatalf("disable: %+v", pr)
		}

		// A rule LCM cannot beat (the server's own before.rules drop new
		// SSH connections ahead of every user rule): enabling must not
		// count, and the firewall is switched off again.
		sh(t, root, `cp /etc/ufw/before.rules /root/before.rules.lcm-test && sed -i 's/^# don.t delete the .COMMIT. line.*/-A ufw-before-input -p tcp --dport 22 -j DROP\n&/' /etc/ufw/before.rules && grep -q 'dport 22 -j DROP' /etc/ufw/before.rules`)
		res, err = fw(t, env, domain.FirewallEnable)
		if err == nil || res.Firewall == nil || !res.Firewall.RolledBack || res.Firewall.Active {
			t.Fatalf("an enable that cuts LCM off: err %v, proof %+v\n%s", err, res.Firewall, out)
		}
		if s := sh(t, root, "ufw status"); !strings.Contains(s, "Status: inactive") {
			t.Fatalf("after the rollback ufw is not inactive:\n%s", s)
		}
		if err := freshLogin(t, env); err != nil {
			t.Fatalf("a fresh login after the rollback: %v", err)
		}
		sh(t, root, "mv /root/before.rules.lcm-test /etc/ufw/before.rules")
	})

	t.Run("nftables", func(t *testing.T) {
		// Without ufw (and without firewalld) LCM uses nft and its own table.
		sh(t, root, "ufw --force reset >/dev/null && DEBIAN_FRONTEND=noninteractive dpkg --purge ufw >/dev/null")
		pr := mustFw(t, env, out, domain.FirewallStatus)
		if pr.Tool != firewall.Nftables || pr.Active {
			t.Fatalf("before: %+v", pr)
		}
		if _, err := fw(t, env, domain.FirewallAdd, web); err == nil {
			t.Fatal("adding a rule to an nftables firewall that is off must be refused")
		}
		pr = mustFw(t, env, out, domain.FirewallEnable)
		if !pr.Active || !pr.FreshLogin || pr.LCMRule == nil {
			t.Fatalf("enable: %+v\n%s", pr, out)
		}
		pr = mustFw(t, env, out, domain.FirewallAdd, web)
		table := sh(t, root, "nft list table inet lcm")
		if !strings.Contains(table, "policy drop") || !strings.Contains(table, "ip saddr "+lcmAddr+" tcp dport 22 accept") || !strings.Contains(table, `tcp dport 8080 accept comment "web"`) {
			t.Fatalf("nft table:\n%s", table)
		}
		if err := freshLogin(t, env); err != nil {
			t.Fatalf("fresh login: %v", err)
		}
		mustFw(t, env, out, domain.FirewallDisable)

		// Something else on the server drops new SSH connections before
		// LCM's table sees them: enabling is rolled back.
		sh(t, root, `nft -f - <<'EOF'
table inet lcmtestblock {
	chain input {
		type filter hook input priority -10; policy accept;
		tcp dport 22 ct state new drop
	}
}
EOF`)
		res, err := fw(t, env, domain.FirewallEnable)
		if err == nil || res.Firewall == nil || !res.Firewall.RolledBack || res.Firewall.Active {
			t.Fatalf("an enable that cuts LCM off: err %v, proof %+v\n%s", err, res.Firewall, out)
		}
		sh(t, root, "nft delete table inet lcmtestblock")
		if s := sh(t, root, "nft list tables"); strings.Contains(s, "inet lcm\n") {
			t.Fatalf("LCM's table is still there after the rollback:\n%s", s)
		}
		if err := freshLogin(t, env); err != nil {
			t.Fatalf("a fresh login after the rollback: %v", err)
		}
	})
}

// restrictSudo switches the management user's sudo mode with the real
// action (lcm-helper built from this repo and installed by it).
func restrictSudo(t *testing.T, env *actions.Env, out *bytes.Buffer, mode string) *actions.SudoProof {
	t.Helper()
	env.Params, _ = json.Marshal(actions.RestrictSudoParams{Mode: mode})
	r, err := (actions.RestrictSudo{}).Run(context.Background(), env)
	if err != nil || r.Sudo == nil || !r.Sudo.Proven || r.Sudo.Mode != mode {
		t.Fatalf("restrict-sudo %s: %v %+v\n%s", mode, err, r.Sudo, out)
	}
	return r.Sudo
}

// asLCM runs cmd on a fresh connection of the management user and
// returns its exit code and output.
func asLCM(t *testing.T, env *actions.Env, cmd string) (int, string) {
	t.Helper()
	ex, err := env.Dial(context.Background(), env.Creds.User, env.Creds.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	var o bytes.Buffer
	res, err := ex.Run(context.Background(), remote.Command{Cmd: cmd, Stdout: &o, Stderr: &o})
	if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	return res.ExitCode, o.String()
}

// restrictedScan runs the listening-ports scan in restricted mode: ss runs
// without root, so sshd (root's) is listed without its process, and the
// result says so.
func restrictedScan(t *testing.T, env *actions.Env, out *bytes.Buffer, tool string) {
	t.Helper()
	res, err := (actions.ListeningPortsScan{}).Run(context.Background(), env)
	if err != nil {
		t.Fatalf("scan: %v\n%s", err, out)
	}
	if !res.Ports.Partial || !strings.Contains(res.Message, "process names") || !strings.Contains(out.String(), "sudo ss is not allowed") {
		t.Fatalf("a scan in restricted mode must say process names are missing: partial %v, %q", res.Ports.Partial, res.Message)
	}
	var sshd *firewall.Socket
	for i, s := range res.Ports.Sockets {
		if s.Port == 22 && s.Proto == "tcp" && s.Public {
			sshd = &res.Ports.Sockets[i]
		}
		if s.Process != "" {
			// Only the management user's own processes are visible, and
			// none of them listens on the test host.
			t.Errorf("process %q on %s:%d read without root", s.Process, s.Address, s.Port)
		}
	}
	if sshd == nil || sshd.Open != firewall.OpenRestricted || res.Ports.Firewall == nil || res.Ports.Firewall.Tool != tool || !res.Ports.Firewall.Active {
		t.Fatalf("scan: sshd %+v, firewall %+v (all %+v)", sshd, res.Ports.Firewall, res.Ports.Sockets)
	}
}

// TestFirewallRestrictedSudoOnNetnsTestHost: the firewall actions and the
// listening-ports scan work with the management user's sudo restricted to
// the allowlist (package tools, containers, the firewall tool, lcm-helper),
// each change read back as root from outside LCM.
func TestFirewallRestrictedSudoOnNetnsTestHost(t *testing.T) {
	testutil.BuildHelper(t)
	root, env, out := firewallHost(t)
	h := testutil.TestHostAt(t, firewallHostIndex)
	mgmtKey := env.Creds.PrivateKey
	// Registered after firewallHost's: runs before the reset.
	t.Cleanup(func() {
		out.Reset()
		env.Params, _ = json.Marshal(actions.RestrictSudoParams{Mode: domain.SudoFull})
		if r, err := (actions.RestrictSudo{}).Run(context.Background(), env); err != nil || r.Sudo == nil || !r.Sudo.Proven {
			t.Errorf("restoring full mode: %v\n%s", err, out)
		}
	})

	sp := restrictSudo(t, env, out, domain.SudoRestricted)
	for _, p := range []string{"/usr/sbin/ufw", "/usr/sbin/nft", actions.HelperPath} {
		if !slices.Contains(sp.Allowed, p) {
			t.Fatalf("allowlist lacks %s: %v", p, sp.Allowed)
		}
	}
	// Restricted, proven from a fresh connection: no shell, no ss as root.
	for _, cmd := range []string{"sudo -n sh -c true", "sudo -n /bin/sh -c true", "sudo -n true", "sudo -n ss -tulpnH"} {
		if code, o := asLCM(t, env, cmd); code == 0 {
			t.Fatalf("restricted mode: %s works\n%s", cmd, o)
		}
	}
	if code, o := asLCM(t, env, "sudo -n ufw status"); code != 0 {
		t.Fatalf("restricted mode: sudo -n ufw status: exit %d\n%s", code, o)
	}
	web := firewall.Rule{Port: 8080, Proto: firewall.TCP, Comment: "web"}

	t.Run("ufw", func(t *testing.T) {
		pr := mustFw(t, env, out, domain.FirewallStatus)
		if pr.Tool != firewall.UFW || pr.Active {
			t.Fatalf("before: %+v", pr)
		}
		pr = mustFw(t, env, out, domain.FirewallEnable)
		if !pr.Active || !pr.FreshLogin || pr.LCMRule == nil || pr.LCMRule.Source != lcmAddr+"/32" || pr.LCMRule.Port != 22 {
			t.Fatalf("enable: %+v\n%s", pr, out)
		}
		if err := freshLogin(t, env); err != nil {
			t.Fatalf("a fresh login after enabling: %v", err)
		}
		mustFw(t, env, out, domain.FirewallAdd, web)
		status := sh(t, root, "ufw status")
		if !strings.Contains(status, "Status: active") || !strings.Contains(status, "8080/tcp") || !strings.Contains(status, "22/tcp") || !strings.Contains(status, lcmAddr) {
			t.Fatalf("ufw status (as root) after enable and add:\n%s", status)
		}
		restrictedScan(t, env, out, firewall.UFW)

		pr = mustFw(t, env, out, domain.FirewallRemove, web)
		if (firewall.State{Rules: pr.Rules}).Has(web) || !pr.FreshLogin {
			t.Fatalf("remove: %+v", pr)
		}
		if s := sh(t, root, "ufw status"); strings.Contains(s, "8080") {
			t.Fatalf("ufw status (as root) still lists 8080:\n%s", s)
		}
		pr = mustFw(t, env, out, domain.FirewallDisable)
		if s := sh(t, root, "ufw status"); pr.Active || !strings.Contains(s, "Status: inactive") {
			t.Fatalf("disable: %+v\n%s", pr, s)
		}
	})

	t.Run("nftables", func(t *testing.T) {
		// Without ufw LCM uses nft (on the allowlist already) and its own table.
		sh(t, root, "ufw --force reset >/dev/null && DEBIAN_FRONTEND=noninteractive dpkg --purge ufw >/dev/null")
		pr := mustFw(t, env, out, domain.FirewallStatus)
		if pr.Tool != firewall.Nftables || pr.Active {
			t.Fatalf("before: %+v", pr)
		}
		pr = mustFw(t, env, out, domain.FirewallEnable)
		if !pr.Active || !pr.FreshLogin || pr.LCMRule == nil || pr.LCMRule.Source != lcmAddr+"/32" {
			t.Fatalf("enable: %+v\n%s", pr, out)
		}
		if err := freshLogin(t, env); err != nil {
			t.Fatalf("a fresh login after enabling: %v", err)
		}
		mustFw(t, env, out, domain.FirewallAdd, web)
		rs := sh(t, root, "nft list ruleset")
		if !strings.Contains(rs, "table inet lcm") || !strings.Contains(rs, "ip saddr "+lcmAddr+" tcp dport 22 accept") || !strings.Contains(rs, `tcp dport 8080 accept comment "web"`) {
			t.Fatalf("nft ruleset (as root):\n%s", rs)
		}
		restrictedScan(t, env, out, firewall.Nftables)

		pr = mustFw(t, env, out, domain.FirewallRemove, web)
		if (firewall.State{Rules: pr.Rules}).Has(web) || !pr.FreshLogin {
			t.Fatalf("remove: %+v", pr)
		}
		if s := sh(t, root, "nft list table inet lcm"); strings.Contains(s, "8080") {
			t.Fatalf("nft table (as root) still lists 8080:\n%s", s)
		}
		pr = mustFw(t, env, out, domain.FirewallDisable)
		if s := sh(t, root, "nft list tables"); pr.Active || strings.Contains(s, "inet lcm\n") {
			t.Fatalf("disable: %+v\n%s", pr, s)
		}
	})

	// Still restricted at the end (nothing widened sudo on the way), and
	// the jobs' output never shows a secret.
	if code, _ := asLCM(t, env, "sudo -n sh -c true"); code == 0 {
		t.Fatal("sudo -n sh -c true works after the firewall jobs")
	}
	noSecrets(t, out.String(), map[string]string{"the management key": mgmtKey, "root's key": string(h.PrivateKey), "the bootstrap password": h.Password})
}

// noSecrets fails if output shows any line of a secret (a key's base64
// lines one by one, so a partial leak counts) or a private key header.
func noSecrets(t *testing.T, output string, secrets map[string]string) {
	t.Helper()
	if strings.Contains(output, "PRIVATE KEY") {
		t.Error("the job output shows a private key")
	}
	for name, secret := range secrets {
		for _, l := range strings.Split(secret, "\n") {
			if l = strings.TrimSpace(l); len(l) >= 8 && !strings.HasPrefix(l, "-----") && strings.Contains(output, l) {
				t.Errorf("the job output shows %s", name)
				break
			}
		}
	}
}

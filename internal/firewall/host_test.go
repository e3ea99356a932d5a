package firewall_test

import (
	"bytes"
	"context"
	"encoding/json"
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

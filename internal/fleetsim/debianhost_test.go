package fleetsim_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/credbox"
	"github.com/lcmproject/lcm/internal/fleetsim"
	"github.com/lcmproject/lcm/internal/remote"
	"github.com/lcmproject/lcm/internal/sshexec"
)

// TestDebianHostLifecycle runs LCM's real actions against one pristine
// simulated Debian host: join (as a bootstrap user with a password) and
// its proof with the new key, the connectivity check, the security
// upgrade and its inventory refresh, upgrade-all, reboot, key rotation
// and decommission — each leaving the host in the state a real one would.
func TestDebianHostLifecycle(t *testing.T) {
	f := start(t, fleetsim.Config{N: 1, Packages: 300, Pristine: true, RebootDowntime: 300 * time.Millisecond,
		Responders: fleetsim.DebianTable(fleetsim.DebianOptions{RefreshOptions: fleetsim.RefreshOptions{Upgradable: 20, Security: 6}})})
	inst := f.Instances[0]
	ctx := context.Background()
	dialKey := func(ctx context.Context, user, key string) (remote.Executor, error) {
		signer, err := ssh.ParsePrivateKey([]byte(key))
		if err != nil {
			return nil, err
		}
		return sshexec.Dial(ctx, sshexec.Target{Addr: inst.Addr, User: user, Signer: signer, HostKey: inst.AuthorizedHostKey()})
	}
	key, err := actions.NewManagementKey("lcm-management")
	if err != nil {
		t.Fatal(err)
	}
	// Before the join the management user does not exist: no login.
	if _, err := dialKey(ctx, "lcm", key); err == nil {
		t.Fatal("the management user logged in before the join")
	}
	boot, err := sshexec.Dial(ctx, sshexec.Target{Addr: inst.Addr, User: "debian", Password: "secret", HostKey: inst.AuthorizedHostKey()})
	if err != nil {
		t.Fatal(err)
	}
	defer boot.Close()
	var out bytes.Buffer
	env := &actions.Env{Exec: boot, Dial: dialKey, Out: &out,
		Creds: credbox.Credentials{User: "debian", Password: "secret", SudoPassword: "secret", NewPrivateKey: key}}
	res, err := actions.Join{}.Run(ctx, env)
	if err != nil {
		t.Fatalf("join: %v\n%s", err, out.String())
	}
	if !inst.Joined() || res.Facts == nil || res.Facts.PackageFamily != "apt" || res.Facts.Hostname != "sim-0000" {
		t.Fatalf("joined %v facts %+v\n%s", inst.Joined(), res.Facts, out.String())
	}
	for _, want := range []string{"lcm: created user lcm", "parsed OK", "proven: new key logs in as lcm"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("join output lacks %q:\n%s", want, out.String())
		}
	}
	// Another key is still refused for lcm.
	other, _ := actions.NewManagementKey("x")
	if _, err := dialKey(ctx, "lcm", other); err == nil {
		t.Fatal("lcm logged in with a key join never installed")
	}

	mgmt, err := dialKey(ctx, "lcm", key)
	if err != nil {
		t.Fatal(err)
	}
	defer mgmt.Close()
	env = &actions.Env{Exec: mgmt, Dial: dialKey, Out: &out,
		Creds: credbox.Credentials{User: "lcm", PrivateKey: key, PackageFamily: "apt"}}
	if _, err := (actions.Connectivity{}).Run(ctx, env); err != nil {
		t.Fatalf("connectivity: %v", err)
	}
	inventory := func(data []byte) (pkgs, upgradable, security int) {
		d, err := actions.DecodeRefresh(data)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range d.Inventory.Upgradable {
			if u.Security {
				security++
			}
		}
		return len(d.Inventory.Packages), len(d.Inventory.Upgradable), security
	}
	out.Reset()
	_, data, err := actions.RefreshJob{}.RunData(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	if p, u, s := inventory(data); p != 300 || u != 20 || s != 6 {
		t.Fatalf("before: %d packages, %d upgradable, %d security", p, u, s)
	}
	out.Reset()
	_, data, err = actions.UpgradeSecurity{}.RunData(ctx, env)
	if err != nil {
		t.Fatalf("upgrade-security: %v\n%q", err, out.String())
	}
	if p, u, s := inventory(data); p != 300 || u != 14 || s != 0 || inst.Upgraded() != 6 {
		t.Fatalf("after security upgrade: %d packages, %d upgradable, %d security, upgraded %d\n%s", p, u, s, inst.Upgraded(), out.String())
	}
	if !strings.Contains(out.String(), "lcm: security updates: ") || !strings.Contains(out.String(), "6 upgraded, 0 newly installed") {
		t.Fatalf("upgrade output:\n%s", out.String())
	}
	env.Params = []byte(`{"action":"upgrade-all"}`)
	if _, data, err = (actions.PackageJob{}).RunData(ctx, env); err != nil {
		t.Fatal(err)
	}
	if _, u, _ := inventory(data); u != 0 {
		t.Fatalf("after upgrade-all: %d upgradable", u)
	}

	out.Reset()
	_, _, err = actions.RebootJob{Timing: actions.RebootTiming{Settle: 100 * time.Millisecond, Poll: 100 * time.Millisecond, Window: 20 * time.Second}}.RunData(ctx, env)
	if err != nil || inst.Boots() != 1 || !strings.Contains(out.String(), "server is back") {
		t.Fatalf("reboot: %v boots %d\n%s", err, inst.Boots(), out.String())
	}

	newKey, _ := actions.NewManagementKey("lcm-management")
	mgmt2, err := dialKey(ctx, "lcm", key)
	if err != nil {
		t.Fatal(err)
	}
	defer mgmt2.Close()
	env.Exec, env.Creds.NewPrivateKey = mgmt2, newKey
	if _, err := (actions.RotateKey{}).Run(ctx, env); err != nil {
		t.Fatalf("rotate: %v\n%s", err, out.String())
	}
	if _, err := dialKey(ctx, "lcm", key); err == nil {
		t.Fatal("the old key still logs in after the rotation")
	}
	mgmt3, err := dialKey(ctx, "lcm", newKey)
	if err != nil {
		t.Fatal(err)
	}
	defer mgmt3.Close()
	env.Exec = mgmt3
	if r, err := (actions.Decommission{}).Run(ctx, env); err != nil || r.Message != "access removed" || inst.Joined() {
		t.Fatalf("decommission: %v %+v joined %v", err, r, inst.Joined())
	}
	if _, err := dialKey(ctx, "lcm", newKey); err == nil {
		t.Fatal("the management key still logs in after decommission")
	}
}

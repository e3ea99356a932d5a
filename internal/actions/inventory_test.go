package actions

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/fleetsim"
	"github.com/lcmproject/lcm/internal/pkgmgr"
	"github.com/lcmproject/lcm/internal/remote"
	"github.com/lcmproject/lcm/internal/sshexec"
	"github.com/lcmproject/lcm/internal/testutil"
)

// inventoryHost dials test host index 4 (127.0.0.5) as root: the host
// reserved for the inventory area (the fleet tests reset 127.0.0.4).
func inventoryHost(t *testing.T) (remote.Executor, testutil.TestHost) {
	t.Helper()
	h := testutil.TestHostAt(t, 4)
	cl, err := sshexec.Dial(context.Background(), sshexec.Target{Addr: h.Addr, User: "root", Signer: h.Signer(t), HostKey: h.HostKeys[0]})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl, h
}

// upgradable refreshes and returns the upgradable packages by name.
func upgradable(t *testing.T, ex remote.Executor) map[string]pkgmgr.Upgradable {
	t.Helper()
	var out bytes.Buffer
	_, inv, err := Refresh(context.Background(), ex, &out)
	if err != nil {
		t.Fatalf("refresh: %v\n%s", err, out.String())
	}
	m := map[string]pkgmgr.Upgradable{}
	for _, u := range inv.Upgradable {
		m[u.Name] = u
	}
	return m
}

func installed(t *testing.T, ex remote.Executor, name string) (string, bool) {
	t.Helper()
	var out bytes.Buffer
	f, inv, err := Refresh(context.Background(), ex, &out)
	if err != nil {
		t.Fatalf("refresh: %v\n%s", err, out.String())
	}
	if f.OS.ID != "debian" || inv.Manager != "apt" || len(inv.Packages) < 50 {
		t.Fatalf("refresh: os %q manager %q packages %d", f.OS.ID, inv.Manager, len(inv.Packages))
	}
	for _, p := range inv.Packages {
		if p.Name == name {
			return p.Version, true
		}
	}
	return "", false
}

func TestRefreshAndPackageActionsOnTestHost(t *testing.T) {
	ex, h := inventoryHost(t)
	t.Cleanup(func() { testutil.ResetTestHost(t, h) })
	ctx := context.Background()
	var out bytes.Buffer
	f, inv, err := Refresh(ctx, ex, &out)
	if err != nil {
		t.Fatalf("refresh: %v\n%s", err, out.String())
	}
	if f.Kernel == "" || f.Hostname == "" || f.Memory.TotalBytes == 0 || len(f.Filesystems) == 0 {
		t.Fatalf("facts incomplete: %+v", f)
	}
	for _, p := range inv.Packages {
		if p.Name == "dpkg" && (p.Version == "" || p.Arch == "" || p.Manager != "apt") {
			t.Fatalf("dpkg record incomplete: %+v", p)
		}
	}
	step := func(action PkgAction, names ...string) {
		t.Helper()
		out.Reset()
		if code, err := PackageAction(ctx, ex, pkgmgr.FamilyAPT, action, names, &out); err != nil || code != 0 {
			t.Fatalf("%s %v: code %d err %v\n%s", action, names, code, err, out.String())
		}
	}
	// Install tree (setup: there is no install action; operators install
	// through their own tooling), then exercise the actions on it.
	out.Reset()
	if code, err := run(ctx, ex, &out, remote.Command{Cmd: "env DEBIAN_FRONTEND=noninteractive apt-get install -y -q tree", Timeout: 5 * time.Minute}); err != nil || code != 0 {
		testutil.Unavailable(t, "cannot install tree on the test host (no package source?): %d %v\n%s", code, err, out.String())
	}
	if _, ok := installed(t, ex, "tree"); !ok {
		t.Fatal("tree not in the inventory after install")
	}
	step(PkgHold, "tree")
	held, _, _ := capture(ctx, ex, &out, remote.Command{Cmd: "apt-mark showhold"})
	if !strings.Contains(held, "tree") {
		t.Fatalf("tree not held: %q", held)
	}
	step(PkgUnhold, "tree")
	held, _, _ = capture(ctx, ex, &out, remote.Command{Cmd: "apt-mark showhold"})
	if strings.Contains(held, "tree") {
		t.Fatalf("tree still held: %q", held)
	}
	step(PkgRemove, "tree")
	if _, ok := installed(t, ex, "tree"); ok {
		t.Fatal("tree still installed after remove")
	}
	step(PkgAutoremove)

	// A hold proven by an upgrade: a fresh test host has security updates
	// pending. The held one keeps its version through upgrade-all while
	// the others move; unheld, a named update brings it to its candidate.
	if len(inv.Upgradable) < 2 {
		testutil.Unavailable(t, "the test host has %d pending upgrades; a fresh bookworm rootfs with the security suite has several", len(inv.Upgradable))
	}
	x := inv.Upgradable[0]
	step(PkgHold, x.Name)
	step(PkgUpgradeAll)
	after := upgradable(t, ex)
	if v, _ := installed(t, ex, x.Name); v != x.Current {
		t.Fatalf("held %s moved from %s to %s through upgrade-all", x.Name, x.Current, v)
	}
	// The others moved; the held one is still outdated, marked held (the
	// upgrade simulation keeps it back, ListHeld lists it).
	if u, ok := after[x.Name]; !ok || !u.Held || u.Candidate != x.Candidate || u.Current != x.Current || u.Arch == "" {
		t.Fatalf("held %s in the outdated list: %+v (listed: %v)", x.Name, u, ok)
	}
	if len(after) >= len(inv.Upgradable) {
		t.Fatalf("after upgrade-all: %d of %d still upgradable", len(after), len(inv.Upgradable))
	}
	step(PkgUnhold, x.Name)
	step(PkgUpdate, x.Name)
	if v, _ := installed(t, ex, x.Name); v != x.Candidate {
		t.Fatalf("update %s: at %s, want the candidate %s", x.Name, v, x.Candidate)
	}
	if u, ok := upgradable(t, ex)[x.Name]; ok {
		t.Fatalf("%s still outdated after its update: %+v", x.Name, u)
	}
	step(PkgUpgradeSecurity)
	if !strings.Contains(out.String(), "lcm:") {
		t.Fatalf("upgrade-security said nothing: %s", out.String())
	}
	// Bad names never reach the host.
	if _, err := PackageAction(ctx, ex, pkgmgr.FamilyAPT, PkgRemove, []string{"tree; reboot"}, &out); err == nil {
		t.Fatal("a shell metacharacter in a package name was accepted")
	}
	if _, err := PackageAction(ctx, ex, pkgmgr.FamilyAPT, PkgRemove, nil, &out); err == nil {
		t.Fatal("remove without names was accepted")
	}
}

// rebootSim answers boot_id with the old id until a reboot was issued and
// downtime passed; in between it fails like a host that is down.
type rebootSim struct {
	mu       sync.Mutex
	issuedAt time.Time
	downtime time.Duration
	reboots  atomic.Int32
}

func (r *rebootSim) table(f **fleetsim.Fleet) *fleetsim.Table {
	t := fleetsim.DefaultTable()
	t.Handle("cat /proc/sys/kernel/random/boot_id", func(ctx context.Context, req *fleetsim.Request) int {
		r.mu.Lock()
		at := r.issuedAt
		r.mu.Unlock()
		switch {
		case at.IsZero():
			req.Stdout.Write([]byte("11111111-1111-1111-1111-111111111111\n"))
		case time.Since(at) < r.downtime:
			return 255
		default:
			req.Stdout.Write([]byte("22222222-2222-2222-2222-222222222222\n"))
		}
		return 0
	})
	t.Handle("setsid", func(ctx context.Context, req *fleetsim.Request) int {
		if !req.Sudo || !strings.Contains(req.Cmd, "systemctl reboot") {
			return 1
		}
		r.mu.Lock()
		r.issuedAt = time.Now()
		r.mu.Unlock()
		r.reboots.Add(1)
		go (*f).DropConnections()
		return 0
	})
	return t
}

func TestRebootWaitsForNewBootID(t *testing.T) {
	sim := &rebootSim{downtime: 300 * time.Millisecond}
	var f *fleetsim.Fleet
	f, err := fleetsim.Start(fleetsim.Config{N: 1, Responders: sim.table(&f)})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	inst := f.Instances[0]
	dial := func(ctx context.Context) (remote.Executor, error) {
		return sshexec.Dial(ctx, sshexec.Target{Addr: inst.Addr, User: "lcm", Password: "x", HostKey: inst.AuthorizedHostKey()})
	}
	var out bytes.Buffer
	d, err := Reboot(context.Background(), dial, &out, RebootTiming{Settle: 50 * time.Millisecond, Poll: 50 * time.Millisecond, Window: 10 * time.Second})
	if err != nil {
		t.Fatalf("reboot: %v\n%s", err, out.String())
	}
	if sim.reboots.Load() != 1 || d <= 0 || !strings.Contains(out.String(), "server is back") || !strings.Contains(out.String(), "not back yet") {
		t.Fatalf("reboots %d, duration %s, output:\n%s", sim.reboots.Load(), d, out.String())
	}
}

// TestRebootJobRefreshesAfterwards: the reboot job ends with an inventory
// refresh over a new connection, so its payload carries the facts of the
// new boot for the control plane to ingest.
func TestRebootJobRefreshesAfterwards(t *testing.T) {
	sim := &rebootSim{downtime: 200 * time.Millisecond}
	var f *fleetsim.Fleet
	table := sim.table(&f)
	fleetsim.HandleRefresh(table, fleetsim.RefreshOptions{Upgradable: 5, Security: 2})
	f, err := fleetsim.Start(fleetsim.Config{N: 1, Packages: 50, Responders: table})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	inst := f.Instances[0]
	dial := func(ctx context.Context, user, _ string) (remote.Executor, error) {
		return sshexec.Dial(ctx, sshexec.Target{Addr: inst.Addr, User: user, Password: "x", HostKey: inst.AuthorizedHostKey()})
	}
	var out bytes.Buffer
	env := &Env{Dial: dial, Out: &out}
	env.Creds.User = "lcm"
	r, data, err := RebootJob{Timing: RebootTiming{Settle: 50 * time.Millisecond, Poll: 50 * time.Millisecond, Window: 10 * time.Second}}.RunData(context.Background(), env)
	if err != nil {
		t.Fatalf("reboot job: %v\n%s", err, out.String())
	}
	if !strings.Contains(r.Message, "rebooted; back after") || r.Duration <= 0 || r.Facts == nil || r.Facts.Kernel == "" {
		t.Fatalf("result %+v", r)
	}
	d, err := DecodeRefresh(data)
	if err != nil || len(d.Inventory.Packages) != 50 || len(d.Inventory.Upgradable) != 5 || d.Facts.Kernel == "" {
		t.Fatalf("payload: %d packages, %d upgradable, kernel %q, err %v\n%s", len(d.Inventory.Packages), len(d.Inventory.Upgradable), d.Facts.Kernel, err, out.String())
	}
	if !strings.Contains(out.String(), "lcm: refreshing the inventory") {
		t.Fatalf("output:\n%s", out.String())
	}
}

func TestRebootGivesUpAfterWindow(t *testing.T) {
	sim := &rebootSim{downtime: time.Hour}
	var f *fleetsim.Fleet
	f, err := fleetsim.Start(fleetsim.Config{N: 1, Responders: sim.table(&f)})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	inst := f.Instances[0]
	dial := func(ctx context.Context) (remote.Executor, error) {
		return sshexec.Dial(ctx, sshexec.Target{Addr: inst.Addr, User: "lcm", Password: "x", HostKey: inst.AuthorizedHostKey()})
	}
	var out bytes.Buffer
	_, err = Reboot(context.Background(), dial, &out, RebootTiming{Settle: 10 * time.Millisecond, Poll: 50 * time.Millisecond, Window: 300 * time.Millisecond})
	var failed *Failed
	if !errors.As(err, &failed) || !strings.Contains(failed.Reason, "did not come back") {
		t.Fatalf("err = %v", err)
	}
}

func TestRefreshDataRoundTrip(t *testing.T) {
	d := RefreshData{Inventory: pkgmgr.Inventory{Manager: "apt", Packages: []pkgmgr.Package{{Name: "a", Version: "1"}}}}
	d.Facts.Hostname = "h"
	b, err := EncodeRefresh(d)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeRefresh(b)
	if err != nil || got.Facts.Hostname != "h" || got.Inventory.Packages[0].Name != "a" {
		t.Fatalf("%+v %v", got, err)
	}
}

// refreshFixture is a refresh of a typical Debian server: 1,500 packages,
// 30 upgradable.
func refreshFixture() RefreshData {
	d := RefreshData{Inventory: pkgmgr.Inventory{Manager: "apt"}}
	d.Facts.Hostname = "web-01"
	for i := range 1500 {
		d.Inventory.Packages = append(d.Inventory.Packages, pkgmgr.Package{Name: fmt.Sprintf("lib%04d-common", i),
			Version: fmt.Sprintf("2.%d.%d-1+deb12u%d", i%40, i%7, i%3), Arch: "amd64", Source: fmt.Sprintf("src%04d", i/3), Manager: "apt"})
	}
	for i := range 30 {
		p := d.Inventory.Packages[i*50]
		d.Inventory.Upgradable = append(d.Inventory.Upgradable, pkgmgr.Upgradable{Name: p.Name, Arch: p.Arch, Current: p.Version, Candidate: p.Version + "+b1", Security: i%4 == 0})
	}
	return d
}

// BenchmarkRefreshCodec measures the worker's encoding and the control
// plane's decoding of one refresh (both run once per refresh job; the
// refresh of 1,000 servers budget pays them 1,000 times).
func BenchmarkRefreshCodec(b *testing.B) {
	d := refreshFixture()
	enc, err := EncodeRefresh(d)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := EncodeRefresh(d); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(enc)), "gzip-bytes")
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := DecodeRefresh(enc); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestJobManagerDetectsOnTheServer: package jobs drive the manager the
// server has where the recorded family does not tell: yum on an EL7 host
// of the dnf family, and whatever a server with no recorded family has.
func TestJobManagerDetectsOnTheServer(t *testing.T) {
	for _, c := range []struct {
		name     string
		family   pkgmgr.Family
		answer   string // what the detection prints; "" prints nothing
		wantBin  string // the manager's Name(); "" wants an error
		detected bool   // the detection runs
	}{
		{"recorded apt needs no detection", pkgmgr.FamilyAPT, "dnf", "apt", false},
		{"EL7 dnf family with yum only", pkgmgr.FamilyDNF, "yum", "yum", true},
		{"EL8 dnf family", pkgmgr.FamilyDNF, "dnf", "dnf", true},
		{"dnf family, detection finds nothing", pkgmgr.FamilyDNF, "", "dnf", true},
		{"unknown family, apt-get found", "", "apt-get", "apt", true},
		{"unknown family, apk found", "", "apk", "apk", true},
		{"unknown family, nothing found", "", "", "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var ran atomic.Bool
			table := fleetsim.DefaultTable()
			table.Handle("for m in apt-get", func(ctx context.Context, req *fleetsim.Request) int {
				ran.Store(true)
				if c.answer != "" {
					req.Stdout.Write([]byte(c.answer + "\n"))
				}
				return 0
			})
			f, err := fleetsim.Start(fleetsim.Config{N: 1, Responders: table})
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			inst := f.Instances[0]
			ex, err := sshexec.Dial(context.Background(), sshexec.Target{Addr: inst.Addr, User: "lcm", Password: "x", HostKey: inst.AuthorizedHostKey()})
			if err != nil {
				t.Fatal(err)
			}
			defer ex.Close()
			m, err := jobManager(context.Background(), ex, c.family)
			switch {
			case c.wantBin == "" && err == nil:
				t.Fatalf("got %s, want an error", m.Name())
			case c.wantBin != "" && (err != nil || m.Name() != c.wantBin):
				t.Fatalf("got %v %v, want %s", m, err, c.wantBin)
			}
			if ran.Load() != c.detected {
				t.Fatalf("detection ran: %v, want %v", ran.Load(), c.detected)
			}
		})
	}
}

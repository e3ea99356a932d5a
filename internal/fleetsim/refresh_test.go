package fleetsim_test

import (
	"context"
	"io"
	"sync/atomic"
	"testing"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/fleetsim"
)

// TestRefreshResponders runs the real refresh (facts script, dpkg-query,
// apt-get -s) against a simulated host and checks what LCM parses.
func TestRefreshResponders(t *testing.T) {
	table := fleetsim.DefaultTable()
	fleetsim.HandleRefresh(table, fleetsim.RefreshOptions{Upgradable: 30, Security: 7})
	f := start(t, fleetsim.Config{N: 1, Packages: 1500, Responders: table})
	fa, inv, err := actions.Refresh(context.Background(), client(t, f.Instances[0]), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if fa.OS.ID != "debian" || fa.Hostname != "sim-0000" || len(fa.Filesystems) == 0 {
		t.Fatalf("facts %+v", fa)
	}
	sec := 0
	for _, u := range inv.Upgradable {
		if u.Security {
			sec++
		}
		if u.Current == "" {
			t.Fatalf("upgradable without current version: %+v", u)
		}
	}
	if inv.Manager != "apt" || len(inv.Packages) != 1500 || len(inv.Upgradable) != 30 || sec != 7 {
		t.Fatalf("inventory %s: %d packages, %d upgradable, %d security", inv.Manager, len(inv.Packages), len(inv.Upgradable), sec)
	}
}

// TestRefreshJobAsksForContainersOnce: the refresh job's container
// collection is one command on a simulated host, answered "no engine"
// (an empty inventory in the payload), so fan-outs cost one round trip
// more and nothing else.
func TestRefreshJobAsksForContainersOnce(t *testing.T) {
	table := fleetsim.DefaultTable()
	fleetsim.HandleRefresh(table, fleetsim.RefreshOptions{Upgradable: 3, Security: 1})
	var collects atomic.Int32
	f := start(t, fleetsim.Config{N: 1, Packages: 20, Responders: table, OnExec: func(_ *fleetsim.Instance, cmd string) {
		if fleetsim.IsContainerCollect(cmd) {
			collects.Add(1)
		}
	}})
	_, data, err := actions.RefreshJob{}.RunData(context.Background(), &actions.Env{Exec: client(t, f.Instances[0]), Out: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	d, err := actions.DecodeRefresh(data)
	if err != nil {
		t.Fatal(err)
	}
	if d.Containers == nil || len(d.Containers.Engines) != 0 || len(d.Containers.Containers) != 0 || len(d.Inventory.Packages) != 20 {
		t.Fatalf("payload containers %+v, %d packages", d.Containers, len(d.Inventory.Packages))
	}
	if n := collects.Load(); n != 1 {
		t.Fatalf("%d container collections, want 1", n)
	}
}

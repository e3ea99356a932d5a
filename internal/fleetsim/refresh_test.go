package fleetsim_test

import (
	"context"
	"io"
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

package actions

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/lcmproject/lcm/internal/credbox"
)

// TestChangeReportsAnUnchangedInventory: a package job whose closing
// inventory equals the one the control plane holds (the digest in its
// credentials) sends "unchanged" and no packages; with another digest it
// sends them all. The change and the inventory run in one session.
func TestChangeReportsAnUnchangedInventory(t *testing.T) {
	ex, cmds := simHost(t, false)
	ctx := context.Background()
	run := func(digest string) RefreshData {
		t.Helper()
		var out bytes.Buffer
		env := &Env{Exec: ex, Out: &out, Params: []byte(`{"action":"refresh-lists"}`),
			Creds: credbox.Credentials{User: "lcm", PackageFamily: "apt", InventoryDigest: digest}}
		_, data, err := PackageJob{}.RunData(ctx, env)
		if err != nil {
			t.Fatalf("%v\n%s", err, out.String())
		}
		for _, want := range []string{"lcm: package lists are", "lcm: refreshing every configured apt source", "lcm: refreshing the inventory", "packages installed (apt)"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("output lacks %q:\n%s", want, out.String())
			}
		}
		d, err := DecodeRefresh(data)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	first := run("")
	if first.InventoryUnchanged || len(first.Inventory.Packages) != 50 {
		t.Fatalf("first refresh: unchanged %v, %d packages", first.InventoryUnchanged, len(first.Inventory.Packages))
	}
	digest := first.Inventory.Digest()
	second := run(digest)
	if !second.InventoryUnchanged || second.InventoryDigest != digest || len(second.Inventory.Packages) != 0 || second.Facts.Hostname == "" {
		t.Fatalf("same inventory: unchanged %v digest %q, %d packages, facts %q", second.InventoryUnchanged, second.InventoryDigest,
			len(second.Inventory.Packages), second.Facts.Hostname)
	}
	if third := run("another"); third.InventoryUnchanged || len(third.Inventory.Packages) != 50 {
		t.Fatalf("another digest: unchanged %v, %d packages", third.InventoryUnchanged, len(third.Inventory.Packages))
	}
	// The simulator saw the sections as the commands LCM meant, in order.
	got := cmds()
	order := []string{"date +%s; stat", "apt-get", "update", "dpkg-query", "apt-get -s"}
	last := -1
	for _, sub := range order {
		i := index(got[last+1:], sub)
		if i < 0 {
			t.Fatalf("commands lack %q after position %d: %q", sub, last, got)
		}
		last += i + 1
	}
}

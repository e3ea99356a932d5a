package pkgmgr

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
)

// Digest identifies an inventory's content: the manager, the installed
// packages and the upgradable ones (with their security and held flags),
// independent of the order the listings printed them in. The control
// plane stores the digest of what it ingested and gives it to the next
// job on that server; a worker whose fresh inventory has the same digest
// reports "unchanged" instead of sending every package again.
func (inv Inventory) Digest() string {
	h := sha256.New()
	w := func(fields ...string) {
		for _, f := range fields {
			h.Write([]byte(f))
			h.Write([]byte{0})
		}
		h.Write([]byte{'\n'})
	}
	w("lcm-inventory-v1", inv.Manager)
	pkgs := slices.Clone(inv.Packages)
	slices.SortFunc(pkgs, func(a, b Package) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), strings.Compare(a.Arch, b.Arch), strings.Compare(a.Version, b.Version),
			strings.Compare(a.Source, b.Source), strings.Compare(a.Manager, b.Manager))
	})
	for _, p := range pkgs {
		w("p", p.Name, p.Version, p.Arch, p.Source, p.Manager)
	}
	ups := slices.Clone(inv.Upgradable)
	slices.SortFunc(ups, func(a, b Upgradable) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), strings.Compare(a.Arch, b.Arch), strings.Compare(a.Candidate, b.Candidate),
			strings.Compare(a.Current, b.Current))
	})
	flag := func(b bool) string {
		if b {
			return "1"
		}
		return "0"
	}
	for _, u := range ups {
		w("u", u.Name, u.Current, u.Candidate, u.Arch, flag(u.Security), flag(u.Held))
	}
	return hex.EncodeToString(h.Sum(nil))
}

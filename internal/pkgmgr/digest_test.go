package pkgmgr

import "testing"

func TestInventoryDigest(t *testing.T) {
	base := Inventory{Manager: "apt",
		Packages:   []Package{{Name: "a", Version: "1", Arch: "amd64", Manager: "apt"}, {Name: "b", Version: "2", Arch: "all", Manager: "apt"}},
		Upgradable: []Upgradable{{Name: "a", Current: "1", Candidate: "1.1", Arch: "amd64", Security: true}}}
	d := base.Digest()
	reordered := Inventory{Manager: "apt", Packages: []Package{base.Packages[1], base.Packages[0]}, Upgradable: base.Upgradable}
	if reordered.Digest() != d {
		t.Error("the order of the listing changed the digest")
	}
	for name, change := range map[string]func(*Inventory){
		"version":  func(i *Inventory) { i.Packages[0].Version = "1.1" },
		"removed":  func(i *Inventory) { i.Packages = i.Packages[:1] },
		"security": func(i *Inventory) { i.Upgradable[0].Security = false },
		"held":     func(i *Inventory) { i.Upgradable[0].Held = true },
		"manager":  func(i *Inventory) { i.Manager = "dnf" },
		// Field boundaries are kept: "ab"+"c" is not "a"+"bc".
		"boundary": func(i *Inventory) { i.Packages[0].Name, i.Packages[0].Version = "a1", "" },
	} {
		c := Inventory{Manager: base.Manager, Packages: append([]Package(nil), base.Packages...), Upgradable: append([]Upgradable(nil), base.Upgradable...)}
		change(&c)
		if c.Digest() == d {
			t.Errorf("%s: digest unchanged", name)
		}
	}
}

package pkgmgr

// DNF manages the RHEL family: dnf on EL8+, Fedora and Amazon Linux 2023,
// yum on EL7 and Amazon Linux 2 (same options for everything LCM runs).
// dnf and yum wait for the rpm lock on their own.
type DNF struct {
	bin string // "dnf" or "yum"
}

// NewDNF returns the manager driving bin, which must be "dnf" or "yum"
// (anything else is treated as "dnf").
func NewDNF(bin string) DNF {
	if bin != "yum" {
		bin = "dnf"
	}
	return DNF{bin: bin}
}

func (d DNF) binary() string {
	if d.bin == "" {
		return "dnf"
	}
	return d.bin
}

// run is the privileged, non-interactive manager invocation.
func (d DNF) run(args string) string { return sudo + d.binary() + " -y " + args }

// Family returns FamilyDNF.
func (DNF) Family() Family { return FamilyDNF }

// Name returns "dnf" or "yum".
func (d DNF) Name() string { return d.binary() }

// ListInstalled lists packages from the rpm database.
func (DNF) ListInstalled() string { return rpmList }

// ParseInstalled parses ListInstalled output.
func (d DNF) ParseInstalled(out []byte) ([]Package, error) { return ParseRPMQuery(out, d.Name()) }

// ListUpgradable prints two sections: check-update (name.arch, candidate,
// repo; exit 100 means "updates available", not failure) and the security
// advisories that apply (updateinfo list --security), which ParseUpgradable
// joins to set Upgradable.Security. Current versions come from the
// inventory through FillCurrent.
func (d DNF) ListUpgradable() string {
	b := sudo + d.binary() + " -q "
	return shScript(
		`echo "`+sectionHeader+`check-update=="`,
		b+"check-update",
		`rc=$?; [ "$rc" -eq 0 ] || [ "$rc" -eq 100 ] || exit "$rc"`,
		`echo "`+sectionHeader+`security=="`,
		b+"updateinfo list --security",
	)
}

// ParseUpgradable parses ListUpgradable output.
func (DNF) ParseUpgradable(out []byte) ([]Upgradable, error) {
	secs := splitSections(out)
	ups, err := ParseDNFCheckUpdate(secs["check-update"])
	sec, err2 := ParseDNFUpdateinfo(secs["security"])
	for i := range ups {
		if sec[ups[i].Name+"."+ups[i].Arch] {
			ups[i].Security = true
		}
	}
	if err == nil {
		err = err2
	}
	return ups, err
}

// ListsAge reads the mtimes of the cached repomd.xml files (dnf 4, dnf 5,
// yum).
func (DNF) ListsAge() string {
	return listsAgeScript("/var/cache/dnf/*/repodata/repomd.xml", "/var/cache/libdnf5/*/repodata/repomd.xml", "/var/cache/yum/*/*/*/repomd.xml")
}

// RefreshLists refreshes the repository metadata. Plain "makecache" keeps
// metadata younger than metadata_expire (up to 48 h by default): dnf
// --refresh marks it expired first; yum has no --refresh, so its cache is
// expired with "clean expire-cache" before "makecache fast".
func (d DNF) RefreshLists() string {
	if d.binary() == "yum" {
		return shScript(sudo+"yum -q clean expire-cache || exit $?", d.run("makecache fast"))
	}
	return d.run("makecache --refresh")
}

// UpgradeAll upgrades every package.
func (d DNF) UpgradeAll() string {
	if d.binary() == "yum" {
		return d.run("update")
	}
	return d.run("upgrade")
}

// UpgradeSecurity upgrades packages named by security advisories
// (updateinfo); repositories without advisories (CentOS Stream, some
// mirrors) have nothing to offer it — see docs/packages.md.
func (d DNF) UpgradeSecurity() (string, error) {
	if d.binary() == "yum" {
		return d.run("update --security"), nil
	}
	return d.run("upgrade --security"), nil
}

// Update upgrades the named installed packages.
func (d DNF) Update(names ...string) (string, error) {
	if err := validateNames(FamilyDNF, rpmName, names); err != nil {
		return "", err
	}
	verb := "upgrade "
	if d.binary() == "yum" {
		verb = "update "
	}
	return d.run(verb + QuoteAll(names)), nil
}

// Remove removes the named packages (and, per dnf's default
// clean_requirements_on_remove, dependencies nothing else needs).
func (d DNF) Remove(names ...string) (string, error) {
	if err := validateNames(FamilyDNF, rpmName, names); err != nil {
		return "", err
	}
	return d.run("remove " + QuoteAll(names)), nil
}

// Autoremove removes packages installed as dependencies that nothing needs.
func (d DNF) Autoremove() (string, error) { return d.run("autoremove"), nil }

// KernelCleanup removes old install-only packages (kernels) keeping the
// newest and the running one. dnf exits 1 when there is nothing to remove,
// so the script checks first. On yum, package-cleanup (yum-utils) does it.
func (d DNF) KernelCleanup() (string, error) {
	if d.binary() == "yum" {
		return sudo + "package-cleanup -y --oldkernels --count=1", nil
	}
	return shScript(
		`old=$(`+sudo+`dnf -q -C repoquery --installonly --latest-limit=-1) || exit $?`,
		`if [ -z "$old" ]; then echo "lcm: no old kernels"; exit 0; fi`,
		d.run("remove --oldinstallonly"),
	), nil
}

// Hold locks packages at their installed version with the versionlock
// plugin (python3-dnf-plugin-versionlock / yum-plugin-versionlock).
func (d DNF) Hold(names ...string) (string, error) {
	if err := validateNames(FamilyDNF, rpmName, names); err != nil {
		return "", err
	}
	return d.run("versionlock add " + QuoteAll(names)), nil
}

// Unhold removes version locks.
func (d DNF) Unhold(names ...string) (string, error) {
	if err := validateNames(FamilyDNF, rpmName, names); err != nil {
		return "", err
	}
	return d.run("versionlock delete " + QuoteAll(names)), nil
}

// Compare orders RPM EVR strings.
func (DNF) Compare(a, b string) int { return CompareRPM(a, b) }

var _ Manager = DNF{}

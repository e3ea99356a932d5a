package pkgmgr

// Zypper manages SLES and openSUSE. --non-interactive answers every prompt
// with its default; zypper waits for the libzypp lock for
// ZYPP_LOCK_TIMEOUT seconds, set to 120 to match apt's wait.
type Zypper struct{}

// zypper is the privileged, non-interactive zypper invocation. The
// variable is sudo's own argument (sudo VAR=value command), not
// /usr/bin/env's: in restricted sudo mode the allowlist holds zypper,
// never env (which would run anything); the restricted rule carries
// SETENV for it, as for apt's variables.
const zypper = sudo + "ZYPP_LOCK_TIMEOUT=120 zypper --non-interactive "

// Family returns FamilyZypper.
func (Zypper) Family() Family { return FamilyZypper }

// Name returns "zypper".
func (Zypper) Name() string { return "zypper" }

// ListInstalled lists packages from the rpm database.
func (Zypper) ListInstalled() string { return rpmList }

// ParseInstalled parses ListInstalled output.
func (Zypper) ParseInstalled(out []byte) ([]Package, error) { return ParseRPMQuery(out, "zypper") }

// ListUpgradable prints two XML documents in sections: package updates and
// the needed security patches.
func (Zypper) ListUpgradable() string {
	return shScript(
		`echo "`+sectionHeader+`updates=="`,
		zypper+"--xmlout list-updates || exit $?",
		`echo "`+sectionHeader+`patches=="`,
		zypper+"--xmlout list-patches --category security",
	)
}

// ParseUpgradable parses ListUpgradable output.
func (Zypper) ParseUpgradable(out []byte) ([]Upgradable, error) {
	secs := splitSections(out)
	ups, err := ParseZypperUpdates(secs["updates"])
	patched, err2 := ParseZypperSecurityPatches(secs["patches"])
	markZypperSecurity(ups, patched)
	if err == nil {
		err = err2
	}
	return ups, err
}

// ListsAge reads the mtimes of the raw repomd.xml of each repository.
func (Zypper) ListsAge() string { return listsAgeScript("/var/cache/zypp/raw/*/repodata/repomd.xml") }

// RefreshLists refreshes all enabled repositories; a repository that
// cannot be refreshed makes zypper exit non-zero.
func (Zypper) RefreshLists() string { return zypper + "refresh" }

// UpgradeAll updates every installed package ("zypper update"; for
// openSUSE Tumbleweed the distribution recommends "zypper dup", which LCM
// does not run on its own — see docs/packages.md).
func (Zypper) UpgradeAll() string { return zypper + "update --auto-agree-with-licenses" }

// UpgradeSecurity installs the needed patches of category security. Exit
// code 103 means zypper updated itself and the command must run again; 102
// means a reboot is needed.
func (Zypper) UpgradeSecurity() (string, error) {
	return zypper + "patch --category security --auto-agree-with-licenses", nil
}

// Update updates the named installed packages.
func (Zypper) Update(names ...string) (string, error) {
	if err := validateNames(FamilyZypper, rpmName, names); err != nil {
		return "", err
	}
	return zypper + "update --auto-agree-with-licenses " + QuoteAll(names), nil
}

// Remove removes the named packages.
func (Zypper) Remove(names ...string) (string, error) {
	if err := validateNames(FamilyZypper, rpmName, names); err != nil {
		return "", err
	}
	return zypper + "remove " + QuoteAll(names), nil
}

// Autoremove is unsupported: zypper has no safe unattended equivalent.
func (Zypper) Autoremove() (string, error) {
	return "", unsupported(FamilyZypper, "autoremove",
		"zypper has no autoremove: review `zypper packages --unneeded` and remove packages by name")
}

// KernelCleanup removes old kernels per multiversion.kernels in
// /etc/zypp/zypp.conf (by default keeps latest, latest-1 and running).
func (Zypper) KernelCleanup() (string, error) { return zypper + "purge-kernels", nil }

// Hold adds package locks: zypper will neither update nor remove them.
func (Zypper) Hold(names ...string) (string, error) {
	if err := validateNames(FamilyZypper, rpmName, names); err != nil {
		return "", err
	}
	return zypper + "addlock " + QuoteAll(names), nil
}

// Unhold removes package locks.
func (Zypper) Unhold(names ...string) (string, error) {
	if err := validateNames(FamilyZypper, rpmName, names); err != nil {
		return "", err
	}
	return zypper + "removelock " + QuoteAll(names), nil
}

// Compare orders RPM EVR strings.
func (Zypper) Compare(a, b string) int { return CompareRPM(a, b) }

var _ Manager = Zypper{}

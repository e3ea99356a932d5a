package pkgmgr

// APK manages Alpine Linux. apk never prompts and waits for its database
// lock only with --wait, set to 120 s to match apt.
type APK struct{}

// apk is the privileged apk invocation.
const apk = sudo + "apk --wait 120 "

// Family returns FamilyAPK.
func (APK) Family() Family { return FamilyAPK }

// Name returns "apk".
func (APK) Name() string { return "apk" }

// ListInstalled lists installed packages with architecture and origin.
func (APK) ListInstalled() string { return "apk list -I" }

// ParseInstalled parses ListInstalled output (or "apk info -v").
func (APK) ParseInstalled(out []byte) ([]Package, error) { return ParseAPKList(out) }

// ListUpgradable lists packages with a newer version in the repositories.
func (APK) ListUpgradable() string { return "apk list -u" }

// ParseUpgradable parses ListUpgradable output.
func (APK) ParseUpgradable(out []byte) ([]Upgradable, error) { return ParseAPKListUpgradable(out) }

// ListsAge reads the mtimes of the downloaded APKINDEX archives.
func (APK) ListsAge() string { return listsAgeScript("/var/cache/apk/APKINDEX.*.tar.gz") }

// RefreshLists downloads the repository indexes; apk update exits non-zero
// when a repository is unavailable.
func (APK) RefreshLists() string { return apk + "update" }

// UpgradeAll upgrades every package.
func (APK) UpgradeAll() string { return apk + "upgrade" }

// UpgradeSecurity has no apk equivalent.
func (APK) UpgradeSecurity() (string, error) {
	return "", noSecurityChannel(FamilyAPK,
		"apk has no security channel: Alpine ships security fixes as regular updates in the release branch; use upgrade-all")
}

// Update upgrades the named installed packages.
func (APK) Update(names ...string) (string, error) {
	if err := validateNames(FamilyAPK, apkName, names); err != nil {
		return "", err
	}
	return apk + "upgrade " + QuoteAll(names), nil
}

// Remove deletes the named packages from the world file; apk removes their
// unneeded dependencies with them.
func (APK) Remove(names ...string) (string, error) {
	if err := validateNames(FamilyAPK, apkName, names); err != nil {
		return "", err
	}
	return apk + "del " + QuoteAll(names), nil
}

// Autoremove is not needed on apk.
func (APK) Autoremove() (string, error) {
	return "", unsupported(FamilyAPK, "autoremove",
		"not needed: apk removes dependencies nothing needs whenever a package is deleted")
}

// KernelCleanup is not needed on apk.
func (APK) KernelCleanup() (string, error) {
	return "", unsupported(FamilyAPK, "kernel-cleanup",
		"not needed: apk replaces the kernel package (linux-lts, linux-virt) in place")
}

// Hold pins each package to its installed version by rewriting its world
// entry as "name=version" (apk add name=version); a package that is not
// installed fails the script.
func (APK) Hold(names ...string) (string, error) {
	if err := validateNames(FamilyAPK, apkName, names); err != nil {
		return "", err
	}
	return shScript(
		`for n in `+QuoteAll(names)+`; do`,
		`  v=$(apk list -I "$n" 2>/dev/null | awk -v n="$n" 'index($1, n "-") == 1 { v = substr($1, length(n) + 2); if (v ~ /^[0-9]/) { print v; exit } }')`,
		`  if [ -z "$v" ]; then echo "lcm: $n is not installed" >&2; exit 1; fi`,
		`  `+apk+`add "$n=$v" || exit $?`,
		`done`,
	), nil
}

// Unhold rewrites the world entries without a version constraint.
func (APK) Unhold(names ...string) (string, error) {
	if err := validateNames(FamilyAPK, apkName, names); err != nil {
		return "", err
	}
	return apk + "add " + QuoteAll(names), nil
}

// Compare orders Alpine versions.
func (APK) Compare(a, b string) int { return CompareAPK(a, b) }

var _ Manager = APK{}

package pkgmgr

// APT manages Debian, Ubuntu and derivatives through apt-get and dpkg.
type APT struct{}

// aptEnv makes apt and dpkg never prompt: DEBIAN_FRONTEND stops debconf
// questions, NEEDRESTART_MODE=a stops Ubuntu's needrestart dialog (it would
// otherwise wait for a key press after every upgrade). The variables are
// sudo's own arguments (sudo VAR=value command), not /usr/bin/env's: in
// restricted sudo mode the allowlist holds apt-get, never env (which would
// run anything); the restricted rule carries SETENV for them.
const aptEnv = "DEBIAN_FRONTEND=noninteractive NEEDRESTART_MODE=a "

// aptGet is the privileged apt-get with the options every changing command
// needs: wait up to 120 s for the dpkg lock (unattended-upgrades or a cron
// apt run often holds it for a minute) instead of failing at once; keep
// existing config files and take the maintainer's default for new ones, so
// dpkg never asks; -y answers yes; -q keeps progress bars out of job logs.
const aptGet = sudo + aptEnv + "apt-get -o DPkg::Lock::Timeout=120 " +
	"-o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold -y -q "

// aptSimulate lists what a full upgrade would do without root and without
// taking the lock (Debug::NoLocking): the simulation only reads the cache.
// LC_ALL=C keeps the "Inst" lines in the parseable English form.
// dist-upgrade rather than upgrade so packages held back for needing new
// dependencies (kernel ABI bumps, often security fixes) are listed too.
const aptSimulate = "LC_ALL=C apt-get -s -o Debug::NoLocking=1 dist-upgrade"

// dpkgQueryFormat is the dpkg-query format ParseDpkgQuery reads: one tab-
// separated line per package, status abbreviation last.
const dpkgQueryFormat = `${Package}\t${Version}\t${Architecture}\t${source:Package}\t${db:Status-Abbrev}\n`

// aptSecurityFilter is the awk program UpgradeSecurity runs over the
// simulation: print the names of upgraded (not new) packages whose candidate
// comes from a security origin. It must agree with ParseAptSimulate; a test
// runs both over the same recorded output.
const aptSecurityFilter = `$1 == "Inst" && $3 ~ /^\[/ { s = substr($0, index($0, "(") + 1); sub(/^[^ ]* /, "", s); if (tolower(s) ~ /-security([ ,:\/\]]|$)/) print $2 }`

// Family returns FamilyAPT.
func (APT) Family() Family { return FamilyAPT }

// Name returns "apt".
func (APT) Name() string { return "apt" }

// ListInstalled lists every package dpkg knows, parsed by ParseInstalled.
func (APT) ListInstalled() string {
	return "dpkg-query -W -f=" + Quote(dpkgQueryFormat)
}

// ListUpgradable simulates a full upgrade; ParseUpgradable reads its Inst
// lines. Run RefreshLists first for fresh candidates.
func (APT) ListUpgradable() string { return aptSimulate }

// ParseInstalled parses ListInstalled output.
func (APT) ParseInstalled(out []byte) ([]Package, error) { return ParseDpkgQuery(out) }

// ListHeld prints the apt-cache policy of every held package (nothing when
// none is held): the upgrade simulation keeps held packages back without
// an Inst line, so their candidates come from here.
func (APT) ListHeld() string {
	return shScript(`held=$(apt-mark showhold) || exit $?`, `[ -n "$held" ] || exit 0`, `LC_ALL=C apt-cache policy $held`)
}

// ParseHeld parses ListHeld output.
func (APT) ParseHeld(out []byte) ([]Upgradable, error) { return ParseAptPolicy(out) }

var _ HoldLister = APT{}

// ParseUpgradable parses ListUpgradable output.
func (APT) ParseUpgradable(out []byte) ([]Upgradable, error) { return ParseAptSimulate(out) }

// ListsAge reads the mtimes of the Release/InRelease files of every
// configured suite.
func (APT) ListsAge() string { return listsAgeScript("/var/lib/apt/lists/*Release") }

// RefreshLists downloads the package lists. Plain "apt-get update" exits 0
// when a source fails ("Some index files failed to download. They have been
// ignored, or old ones used instead."), leaving stale lists that make a
// security upgrade find nothing: APT::Update::Error-Mode=any (apt >= 2.1.16,
// the option behind --error-on=any; older apt ignores it) makes any failed
// source fail the update with exit 100.
func (APT) RefreshLists() string { return aptGet + "-o APT::Update::Error-Mode=any update" }

// UpgradeAll upgrades every package. "upgrade --with-new-pkgs" installs new
// dependencies (new kernel ABI packages) but, unlike dist-upgrade, never
// removes an installed package.
func (APT) UpgradeAll() string { return aptGet + "upgrade --with-new-pkgs" }

// UpgradeSecurity upgrades only packages whose candidate comes from a
// security suite (Debian "*-security"/"Debian-Security", Ubuntu
// "*-security"). The script simulates a full upgrade unprivileged, selects
// those packages and upgrades exactly them with install --only-upgrade
// --no-remove (aborts rather than remove anything). See docs/packages.md.
func (APT) UpgradeSecurity() (string, error) {
	return shScript(
		"sim=$("+aptSimulate+") || exit $?",
		"pkgs=$(printf '%s\\n' \"$sim\" | awk "+Quote(aptSecurityFilter)+")",
		`if [ -z "$pkgs" ]; then echo "lcm: no security updates"; exit 0; fi`,
		`echo "lcm: security updates:" $pkgs`,
		aptGet+"install --only-upgrade --no-remove $pkgs",
	), nil
}

// Update upgrades the named packages if installed; it never installs new
// ones by name and never removes.
func (APT) Update(names ...string) (string, error) {
	if err := validateNames(FamilyAPT, debName, names); err != nil {
		return "", err
	}
	return aptGet + "install --only-upgrade --no-remove " + QuoteAll(names), nil
}

// Remove removes the named packages, keeping their configuration files.
func (APT) Remove(names ...string) (string, error) {
	if err := validateNames(FamilyAPT, debName, names); err != nil {
		return "", err
	}
	return aptGet + "remove " + QuoteAll(names), nil
}

// Autoremove removes automatically installed packages nothing depends on.
func (APT) Autoremove() (string, error) { return aptGet + "autoremove", nil }

// KernelCleanup purges installed linux-image-<abi> packages (with their
// modules and headers) except the running kernel and the newest installed
// one. Versions are ordered with dpkg --compare-versions.
func (APT) KernelCleanup() (string, error) {
	return shScript(
		"running=$(uname -r)",
		`kernels=$(dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' 'linux-image-[0-9]*' 2>/dev/null | awk '$2 ~ /^.i/ { sub(/^linux-image-/, "", $1); if ($1 !~ /-dbg$/) print $1 }')`,
		`newest=""`,
		`for k in $kernels; do if [ -z "$newest" ] || dpkg --compare-versions "$k" gt "$newest"; then newest=$k; fi; done`,
		`purge=""`,
		`for k in $kernels; do`,
		`  [ "$k" = "$running" ] || [ "$k" = "$newest" ] && continue`,
		`  for p in linux-image-$k linux-image-unsigned-$k linux-modules-$k linux-modules-extra-$k linux-headers-$k; do`,
		`    dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null | grep -q '^.i' && purge="$purge $p"`,
		`  done`,
		`done`,
		`if [ -z "$purge" ]; then echo "lcm: no old kernels (running $running, newest $newest)"; exit 0; fi`,
		`echo "lcm: keeping $running and $newest, purging:$purge"`,
		aptGet+"purge $purge",
	), nil
}

// Hold marks packages held: apt upgrades skip them until Unhold.
func (APT) Hold(names ...string) (string, error) {
	if err := validateNames(FamilyAPT, debName, names); err != nil {
		return "", err
	}
	return sudo + "apt-mark hold " + QuoteAll(names), nil
}

// Unhold releases held packages.
func (APT) Unhold(names ...string) (string, error) {
	if err := validateNames(FamilyAPT, debName, names); err != nil {
		return "", err
	}
	return sudo + "apt-mark unhold " + QuoteAll(names), nil
}

// Compare orders Debian versions (epoch:upstream-revision).
func (APT) Compare(a, b string) int { return CompareDeb(a, b) }

var _ Manager = APT{}
